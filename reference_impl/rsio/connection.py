"""Sans-IO rsio/0 connection: both roles, publisher and subscriber, on one transport.

    conn = Connection(Role.CLIENT)        # our hello is queued at once (loose handshake)
    events = conn.receive_data(chunk)     # events out
    events = conn.send(Subscribe("test/range/3", 1, 3))
    transport.write(conn.data_to_send())  # bytes out
    if conn.should_close: ...             # close once the bytes are written

Received messages come out as events themselves (Subscribe, Request, Cancel,
Subscribed, OnComplete, OnError, Goodbye, the peer's hello, ExtensionMessage).
Elements come out as :class:`Element`, whatever carried them (onNext, one
slot of onNextPacked, joined onNextPart..onNextLastPart).  A stream ended by
something other than its own terminal signal gives :class:`StreamReleased`;
the end of the connection gives :class:`ConnectionClosed`.

Rules enforced (docs/profiles/rsio.md):

* Messages before the peer's hello are processed.  A hello of another
  version, of the wrong kind or twice, an unknown type, a malformed message
  or a peer breaking a MUST: goodbye (reason = the error code) and close at
  once, releasing every stream.
* Extension types are sent only once both hellos list the extension; one
  received that is not active is a violation.
* Demand: never more elements than requested, on either side; total demand
  reaching 2^63-1 is unbounded and stays so (rule 3.17).  A received
  request(0) ends that stream with onError (3.9).  request/cancel for a stream
  that is gone are no-ops (3.6, 3.7).
* Subscriber Ids: a subscribe on an Id still in use gets onError on that Id,
  which ends the stream that held it too.  Locally an Id is reused only after
  cancel, onComplete or onError.
* Goodbye: sending one releases every stream and waits for the peer's; a
  received one is answered and the connection closes.  Waiting is bounded by
  the transport: rsio defines no timers, so there is no ``tick``.

After we cancel, the stream's entry is kept (as cancelled) so in-flight
elements for it are still delimited with the right elementSize and dropped;
it goes when the publisher ends the stream or the Id is reused.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Iterable, Mapping, Union

from reference_impl.common.errors import CodecError, ProtocolViolation
from reference_impl.rsio.codec import (
    DEFAULT_MAX_MESSAGE,
    EXTENSION_TYPE_MIN,
    LONG_MAX,
    VERSION,
    Cancel,
    ClientHello,
    ExtensionMessage,
    FieldKind,
    Goodbye,
    Message,
    OnComplete,
    OnError,
    OnNext,
    OnNextLastPart,
    OnNextPacked,
    OnNextPart,
    Request,
    ServerHello,
    StreamDecoder,
    Subscribe,
    Subscribed,
    encode_message,
)

DEFAULT_MAX_ELEMENT = 16 << 20
DEFAULT_MAX_PARTIAL_ELEMENTS = 1024


class Role(Enum):
    CLIENT = "client"  # opened the transport; sends clientHello
    SERVER = "server"


class Side(Enum):
    PUBLISHER = "publisher"  # a stream we publish, keyed by the peer's subscriber Id
    SUBSCRIBER = "subscriber"  # a stream we subscribed to, keyed by our Id


class State(Enum):
    OPEN = "open"
    GOODBYE_SENT = "goodbye-sent"
    CLOSED = "closed"


@dataclass(frozen=True)
class Extension:
    """An extension this side supports: its Id and the message types it adds."""

    id: int
    layouts: Mapping[int, tuple[FieldKind, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Element:
    subscriber: int
    data: bytes


@dataclass(frozen=True)
class StreamReleased:
    """A stream ended by the connection rather than by its own terminal signal."""

    side: Side
    subscriber: int
    reason: str


@dataclass(frozen=True)
class ConnectionClosed:
    reason: str
    orderly: bool  # True after a goodbye handshake


Event = Union[Message, Element, StreamReleased, ConnectionClosed]


class Demand:
    """Outstanding demand of one stream, saturating at 2^63-1 = unbounded (rule 3.17)."""

    def __init__(self, initial: int = 0) -> None:
        self.outstanding = min(initial, LONG_MAX)

    @property
    def unbounded(self) -> bool:
        return self.outstanding >= LONG_MAX

    def add(self, n: int) -> None:
        self.outstanding = min(self.outstanding + n, LONG_MAX)

    def allows(self, count: int) -> bool:
        return self.unbounded or count <= self.outstanding

    def take(self, count: int) -> None:
        if not self.unbounded:
            self.outstanding -= count


@dataclass
class _PublishedStream:
    demand: Demand
    element_size: int | None = None  # None until we send subscribed
    open_parts: set[int] = field(default_factory=set)


@dataclass
class _SubscribedStream:
    demand: Demand
    element_size: int = 0
    subscribed: bool = False
    cancelled: bool = False
    parts: dict[int, bytearray] = field(default_factory=dict)


class Connection:
    def __init__(
        self,
        role: Role,
        *,
        extensions: Iterable[Extension] = (),
        max_message: int = DEFAULT_MAX_MESSAGE,
        max_element: int = DEFAULT_MAX_ELEMENT,
        max_partial_elements: int = DEFAULT_MAX_PARTIAL_ELEMENTS,
    ) -> None:
        self.role = role
        self.extensions = tuple(extensions)
        self._extension_of_type: dict[int, int] = {}
        layouts: dict[int, tuple[FieldKind, ...]] = {}
        for ext in self.extensions:
            for msg_type, layout in ext.layouts.items():
                if msg_type < EXTENSION_TYPE_MIN or msg_type in layouts:
                    raise ValueError(f"extension {ext.id}: message type {msg_type} unusable")
                layouts[msg_type] = layout
                self._extension_of_type[msg_type] = ext.id
        self.max_element = max_element
        self.max_partial_elements = max_partial_elements
        self.state = State.OPEN
        self.peer_hello: ClientHello | ServerHello | None = None
        self.active_extensions: frozenset[int] = frozenset()
        self._published: dict[int, _PublishedStream] = {}
        self._subscribed: dict[int, _SubscribedStream] = {}
        self._decoder = StreamDecoder(max_message, element_size=self._incoming_element_size,
                                      layouts=layouts)
        self._out = bytearray()
        hello = ClientHello if role is Role.CLIENT else ServerHello
        self._out += encode_message(hello(VERSION, tuple(ext.id for ext in self.extensions)))

    # -- queries -----------------------------------------------------------

    @property
    def should_close(self) -> bool:
        """Close the transport once :meth:`data_to_send` has been written."""
        return self.state is State.CLOSED

    def data_to_send(self) -> bytes:
        data = bytes(self._out)
        self._out.clear()
        return data

    def publisher_demand(self, subscriber: int) -> int | None:
        """Outstanding demand of a stream we publish (2^63-1: unbounded); None if gone."""
        stream = self._published.get(subscriber)
        return stream.demand.outstanding if stream else None

    def subscriber_demand(self, subscriber: int) -> int | None:
        """Outstanding demand we granted on our subscription; None if gone or cancelled."""
        stream = self._subscribed.get(subscriber)
        return None if stream is None or stream.cancelled else stream.demand.outstanding

    def _incoming_element_size(self, subscriber: int) -> int:
        stream = self._subscribed.get(subscriber)
        return stream.element_size if stream else 0

    # -- receiving ---------------------------------------------------------

    def receive_data(self, data: bytes) -> list[Event]:
        events: list[Event] = []
        if self.state is State.CLOSED:
            return events
        self._decoder.feed(data)
        try:
            for message in self._decoder:
                self._receive(message, events)
                if self.state is State.CLOSED:
                    break
        except (CodecError, ProtocolViolation) as exc:
            self._fail(exc.code, events)
        return events

    def connection_lost(self) -> list[Event]:
        """The transport closed (or failed) under us."""
        events: list[Event] = []
        if self.state is not State.CLOSED:
            self._release_all("connection-lost", events)
            self.state = State.CLOSED
            events.append(ConnectionClosed("connection-lost", orderly=False))
        return events

    def _receive(self, message: Message, events: list[Event]) -> None:
        if isinstance(message, Goodbye):
            self._receive_goodbye(message, events)
        elif self.state is State.GOODBYE_SENT:
            return  # the peer had not seen our goodbye yet
        elif isinstance(message, (ClientHello, ServerHello)):
            self._receive_hello(message, events)
        elif isinstance(message, Subscribe):
            self._receive_subscribe(message, events)
        elif isinstance(message, Request):
            self._receive_request(message, events)
        elif isinstance(message, Cancel):
            if self._published.pop(message.subscriber, None) is not None:
                events.append(message)
        elif isinstance(message, ExtensionMessage):
            if self._extension_of_type[message.type] not in self.active_extensions:
                raise ProtocolViolation("extension-not-active", f"type {message.type}")
            events.append(message)
        else:
            self._receive_signal(message, events)

    def _receive_goodbye(self, message: Goodbye, events: list[Event]) -> None:
        if self.state is State.OPEN:
            self._release_all("goodbye", events)
            self._out += encode_message(Goodbye(""))
        self.state = State.CLOSED
        events.append(message)
        events.append(ConnectionClosed(message.reason, orderly=True))

    def _receive_hello(self, message: ClientHello | ServerHello, events: list[Event]) -> None:
        expected = ServerHello if self.role is Role.CLIENT else ClientHello
        if not isinstance(message, expected):
            raise ProtocolViolation("unexpected-hello", type(message).__name__)
        if self.peer_hello is not None:
            raise ProtocolViolation("duplicate-hello")
        if message.version != VERSION:
            raise ProtocolViolation("unsupported-version", str(message.version))
        self.peer_hello = message
        self.active_extensions = frozenset(message.extensions) & {e.id for e in self.extensions}
        events.append(message)

    def _receive_subscribe(self, message: Subscribe, events: list[Event]) -> None:
        sid = message.subscriber
        if sid in self._published:
            del self._published[sid]
            self._out += encode_message(OnError(sid, "subscriber id in use"))
            events.append(StreamReleased(Side.PUBLISHER, sid, "id-in-use"))
            return
        self._published[sid] = _PublishedStream(Demand(message.initial_demand))
        events.append(message)

    def _receive_request(self, message: Request, events: list[Event]) -> None:
        sid = message.subscriber
        stream = self._published.get(sid)
        if stream is None:
            return
        if message.demand == 0:
            del self._published[sid]
            self._out += encode_message(OnError(sid, "request(0): rule 3.9"))
            events.append(StreamReleased(Side.PUBLISHER, sid, "request-zero"))
            return
        stream.demand.add(message.demand)
        events.append(message)

    def _receive_signal(self, message: Message, events: list[Event]) -> None:
        """A message of the publisher -> subscriber direction, for one of our streams."""
        sid = message.subscriber
        stream = self._subscribed.get(sid)
        if stream is None:
            raise ProtocolViolation("unknown-subscriber", f"{type(message).__name__} for {sid}")
        if isinstance(message, (OnComplete, OnError)):
            del self._subscribed[sid]
            if not stream.cancelled:
                events.append(message)
        elif isinstance(message, Subscribed):
            if stream.subscribed:
                raise ProtocolViolation("duplicate-subscribed", str(sid))
            stream.subscribed = True
            stream.element_size = message.element_size
            if not stream.cancelled:
                events.append(message)
        elif not stream.cancelled:
            for element in self._elements(stream, message):
                events.append(Element(sid, element))

    def _elements(self, stream: _SubscribedStream, message: Message) -> list[bytes]:
        if isinstance(message, OnNext):
            delivered = [message.element]
        elif isinstance(message, OnNextPacked):
            delivered = list(message.elements)
        elif isinstance(message, OnNextPart):
            self._receive_part(stream, message)
            return []
        else:
            assert isinstance(message, OnNextLastPart)
            element = bytes(stream.parts.pop(message.element, b"")) + message.data
            self._check_element_size(len(element))
            if stream.element_size and len(element) != stream.element_size:
                raise ProtocolViolation("element-size-mismatch", f"{len(element)} bytes")
            delivered = [element]
        if not stream.demand.allows(len(delivered)):
            raise ProtocolViolation("demand-exceeded", f"{len(delivered)} > {stream.demand.outstanding}")
        stream.demand.take(len(delivered))
        return delivered

    def _receive_part(self, stream: _SubscribedStream, message: OnNextPart) -> None:
        buffer = stream.parts.get(message.element)
        if buffer is None:
            if not stream.demand.allows(len(stream.parts) + 1):
                raise ProtocolViolation("demand-exceeded", "more split elements open than demanded")
            if sum(len(s.parts) for s in self._subscribed.values()) >= self.max_partial_elements:
                raise ProtocolViolation("too-many-partial-elements")
            buffer = stream.parts[message.element] = bytearray()
        self._check_element_size(len(buffer) + len(message.data))
        buffer += message.data

    def _check_element_size(self, size: int) -> None:
        if size > self.max_element:
            raise ProtocolViolation("element-too-large", f"{size} > {self.max_element}")

    # -- sending -----------------------------------------------------------

    def send(self, message: Message) -> list[Event]:
        """Queue ``message``; refuse with ProtocolViolation(fatal=False) what rsio forbids."""
        if self.state is not State.OPEN:
            raise ProtocolViolation("connection-closing", self.state.value, fatal=False)
        events: list[Event] = []
        if isinstance(message, (ClientHello, ServerHello)):
            raise ProtocolViolation("hello-already-sent", fatal=False)
        if isinstance(message, Goodbye):
            self._out += encode_message(message)
            self._release_all("goodbye", events)
            self.state = State.GOODBYE_SENT
        elif isinstance(message, (Subscribe, Request, Cancel)):
            self._send_subscriber_side(message)
        elif isinstance(message, ExtensionMessage):
            ext = self._extension_of_type.get(message.type)
            if ext is None:
                raise ProtocolViolation("unknown-extension-type", str(message.type), fatal=False)
            if ext not in self.active_extensions:
                raise ProtocolViolation("extension-not-active", f"extension {ext}", fatal=False)
            self._out += encode_message(message)
        else:
            self._send_publisher_side(message)
        return events

    def _send_subscriber_side(self, message: Subscribe | Request | Cancel) -> None:
        sid = message.subscriber
        stream = self._subscribed.get(sid)
        live = stream is not None and not stream.cancelled
        if isinstance(message, Subscribe):
            if live:
                raise ProtocolViolation("subscriber-in-use", str(sid), fatal=False)
            data = encode_message(message)
            self._subscribed[sid] = _SubscribedStream(Demand(message.initial_demand))
        elif not live:
            return  # request/cancel of an ended stream are no-ops (rules 3.6, 3.7)
        elif isinstance(message, Request):
            if message.demand == 0:
                raise ProtocolViolation("request-zero", "rule 3.9", fatal=False)
            data = encode_message(message)
            stream.demand.add(message.demand)
        else:
            data = encode_message(message)
            stream.cancelled = True
            stream.parts.clear()
        self._out += data

    def _send_publisher_side(self, message: Message) -> None:
        sid = message.subscriber
        stream = self._published.get(sid)
        if stream is None:
            raise ProtocolViolation("unknown-subscriber", str(sid), fatal=False)
        if isinstance(message, Subscribed):
            if stream.element_size is not None:
                raise ProtocolViolation("duplicate-subscribed", str(sid), fatal=False)
            self._out += encode_message(message)
            stream.element_size = message.element_size
            return
        if stream.element_size is None:
            raise ProtocolViolation("not-subscribed", f"send subscribed to {sid} first", fatal=False)
        data = encode_message(message, element_size=stream.element_size)
        if isinstance(message, (OnComplete, OnError)):
            del self._published[sid]
        elif isinstance(message, OnNextPart):
            if message.element not in stream.open_parts:
                self._take_demand(stream, len(stream.open_parts) + 1, take=False)
                stream.open_parts.add(message.element)
        else:
            count = len(message.elements) if isinstance(message, OnNextPacked) else 1
            self._take_demand(stream, count, take=True)
            if isinstance(message, OnNextLastPart):
                stream.open_parts.discard(message.element)
        self._out += data

    @staticmethod
    def _take_demand(stream: _PublishedStream, count: int, *, take: bool) -> None:
        if not stream.demand.allows(count):
            raise ProtocolViolation(
                "demand-exceeded", f"{count} > {stream.demand.outstanding}", fatal=False)
        if take:
            stream.demand.take(count)

    # -- ending ------------------------------------------------------------

    def _release_all(self, reason: str, events: list[Event]) -> None:
        for sid in self._published:
            events.append(StreamReleased(Side.PUBLISHER, sid, reason))
        self._published.clear()
        for sid, stream in self._subscribed.items():
            if not stream.cancelled:
                events.append(StreamReleased(Side.SUBSCRIBER, sid, reason))
                stream.cancelled = True  # kept: in-flight elements must still be delimited

    def _fail(self, code: str, events: list[Event]) -> None:
        if self.state is State.OPEN:
            self._out += encode_message(Goodbye(code))
        self._release_all(code, events)
        self.state = State.CLOSED
        events.append(ConnectionClosed(code, orderly=False))
