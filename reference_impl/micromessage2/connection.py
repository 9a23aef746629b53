"""Sans-IO Micromessage2 connection, client or server role (docs/profiles/micromessage2.md).

``receive_data(data, now)`` (``b""`` at end of stream) and ``tick(now)`` return
events; local actions (``send_message``, ``send_ack``, ...) queue bytes that
``data_to_send()`` hands out.  The client queues its hello on construction.

Anything the peer gets wrong queues an ERROR frame whose reason starts with a
stable code, emits ``ErrorSent`` and moves to CLOSING: the transport then
half-closes, drains its input briefly and closes.  Receiving ERROR emits
``ErrorReceived`` and moves to CLOSED.  Codes are those of ``codec.py`` and
``extensions.py`` plus:
  version-mismatch            the peer's major version differs; also a frame where a
                              handshake belongs (its first byte is not our major)
  missing-required-extension  the peer requires an extension we do not implement
  unsupported-extension       the client's final message activates one we do not implement
  required-not-accepted       the client's final message drops one the server requires
  unknown-extension-id        an EXTENSION frame ID past the negotiated list
  bad-ack                     an ack frame whose payload is not 2 bytes
  ack-not-sent                an ack for a sequence number never sent
  window-exceeded             the peer sent more unacked messages than the window
  bad-type-name               a dotnet type frame that is empty or not UTF-8
  unknown-command             a COMMAND other than subscribe/unsubscribe
  pubsub-not-active           subscribe/unsubscribe without the pubsub extension
  missing-destination         subscribe/unsubscribe without a destination
  too-large                   fragments joining to more than ``max_message`` bytes
  read-timeout                a frame left incomplete for ``read_timeout`` seconds
"""

from __future__ import annotations

from enum import Enum
from typing import Iterable, Mapping

from reference_impl.common.errors import CodecError, ProtocolViolation

from .codec import (
    DEFAULT_MAX_FRAME, ERROR_FIRST_BYTES, MAX_FRAGMENT, VERSION, CommandFrame, ErrorFrame, ExtensionFrame, Frame,
    Handshake, MessageFrame, StreamDecoder, encode_frame, encode_handshake, error_frame, join, same_header, split,
)
from .events import (
    AckReceived, ConnectionClosed, ErrorReceived, ErrorSent, Event, ExtensionFrameReceived, HandshakeComplete,
    LocalProtocolError, MessageReceived, Subscribed, Unsubscribed,
)
from .extensions import (
    REGISTERED, Command, Extension, as_extension_list, format_command, format_extension_list, format_properties,
    parse_command, parse_extension_list,
)
from .negotiation import (
    Negotiated, ack_window, client_final_lists, common_version, missing, negotiate, server_hello_lists,
)
from .window import ReceiveWindow, SendWindow

DEFAULT_MAX_MESSAGE = 16 * MAX_FRAGMENT
DEFAULT_READ_TIMEOUT = 5.0

ExtensionSpec = str | Iterable[str | Extension]


class Role(Enum):
    CLIENT = "client"
    SERVER = "server"


class State(Enum):
    HANDSHAKE = "handshake"
    OPEN = "open"
    CLOSING = "closing"  # we sent ERROR
    CLOSED = "closed"


class _Awaiting(Enum):
    CLIENT_HELLO = "client hello"
    SERVER_HELLO = "server hello"
    CLIENT_FINAL = "client final"


class Connection:
    def __init__(
        self,
        role: Role,
        *,
        identity: str = "",
        required: ExtensionSpec = (),
        optional: ExtensionSpec = (),
        supported: Iterable[str] = REGISTERED,
        version: tuple[int, int] = VERSION,
        read_timeout: float = DEFAULT_READ_TIMEOUT,
        max_frame: int = DEFAULT_MAX_FRAME,
        max_message: int = DEFAULT_MAX_MESSAGE,
        fragment_size: int = MAX_FRAGMENT,
    ) -> None:
        self.role = role
        self.identity = identity
        self.version = version
        self.required = as_extension_list(required)
        self.optional = as_extension_list(optional)
        ack_window([*self.required, *self.optional])  # a bad max-count is our caller's mistake, not the peer's
        # What we ask for we implement; ``supported`` adds what we accept from the peer.
        self.supported = frozenset(supported) | {e.name for e in (*self.required, *self.optional)}
        self.read_timeout = read_timeout
        self.max_message = max_message
        self.fragment_size = fragment_size
        self.state = State.HANDSHAKE
        self.negotiated: Negotiated | None = None
        self._decoder = StreamDecoder(max_frame)
        self._out = bytearray()
        self._partial_since: float | None = None
        self._send_window = SendWindow(None)
        self._recv_window: ReceiveWindow | None = None
        self._fragments: dict[type, list[Frame]] = {}
        self._fragment_bytes = 0
        self._type_name: str | None = None
        if role is Role.CLIENT:
            self._awaiting = _Awaiting.SERVER_HELLO
            self._queue_handshake(self.required, self.optional)
        else:
            self._awaiting = _Awaiting.CLIENT_HELLO

    # --- input --------------------------------------------------------------------

    def receive_data(self, data: bytes, now: float) -> list[Event]:
        """Feed bytes from the peer; ``b""`` means the stream ended."""
        if self.state is State.CLOSED:
            return []
        if not data:
            mid_frame = self.state is not State.CLOSING and self._decoder.buffered > 0
            self.state = State.CLOSED
            return [ConnectionClosed(mid_frame)]
        if self.state is State.CLOSING:
            return []  # draining after our ERROR
        self._decoder.feed(data)
        events: list[Event] = []
        progressed = False
        try:
            while self.state in (State.HANDSHAKE, State.OPEN) and self._next_item(events):
                progressed = True
        except (CodecError, ProtocolViolation) as exc:
            self._fail(exc.code, exc.detail, events)
        if self._decoder.buffered == 0:
            self._partial_since = None
        elif progressed or self._partial_since is None:
            self._partial_since = now  # a new incomplete frame starts now
        return events

    def tick(self, now: float) -> list[Event]:
        """Let time pass: a frame stalled mid-way past ``read_timeout`` ends the connection."""
        events: list[Event] = []
        stalled = self._partial_since is not None and now - self._partial_since >= self.read_timeout
        if stalled and self.state in (State.HANDSHAKE, State.OPEN):
            self._fail("read-timeout", f"a frame stayed incomplete for {self.read_timeout:g} s", events)
        return events

    def _next_item(self, events: list[Event]) -> bool:
        if self.state is State.HANDSHAKE:
            first = self._decoder.peek()
            if first is None:
                return False
            if first not in ERROR_FIRST_BYTES and first != self.version[0]:
                raise ProtocolViolation(
                    "version-mismatch",
                    f"expected a handshake of major version {self.version[0]}, got first byte {first:#04x}"
                    " (another major version, or a frame before the handshake)",
                )
            item = self._decoder.next_handshake()
            if item is None:
                return False
            if isinstance(item, ErrorFrame):
                self._on_error(item, events)
            else:
                self._on_handshake(item, events)
            return True
        frame = self._decoder.next_frame()
        if frame is None:
            return False
        whole = self._reassemble(frame)
        if whole is not None:
            self._dispatch(whole, events)
        return True

    # --- handshake ------------------------------------------------------------------

    def _queue_handshake(self, required: list[Extension], optional: list[Extension]) -> None:
        self._out += encode_handshake(Handshake(
            self.version[0], self.version[1], self.identity,
            format_extension_list(required), format_extension_list(optional),
        ))

    def _require_supported(self, required: list[Extension], code: str) -> None:
        lacking = missing(required, self.supported)
        if lacking:
            raise ProtocolViolation(code, "not implemented here: " + ", ".join(lacking))

    def _on_handshake(self, hs: Handshake, events: list[Event]) -> None:
        version = common_version(self.version, (hs.major, hs.minor))
        if version is None:
            raise ProtocolViolation(
                "version-mismatch", f"peer speaks {hs.major}.{hs.minor}, we speak {self.version[0]}.x")
        required = parse_extension_list(hs.required)
        optional = parse_extension_list(hs.optional)
        if self._awaiting is _Awaiting.CLIENT_HELLO:
            self._require_supported(required, "missing-required-extension")
            ack_window([*required, *optional])
            self._queue_handshake(*server_hello_lists(required, optional, self.required, self.optional, self.supported))
            self._awaiting = _Awaiting.CLIENT_FINAL
        elif self._awaiting is _Awaiting.SERVER_HELLO:
            self._require_supported(required, "missing-required-extension")
            final = client_final_lists(self.required, self.optional, required, optional, self.supported)
            negotiated = negotiate(version, hs.identity, *final)
            self._queue_handshake(*final)
            self._open(negotiated, events)
        else:
            self._require_supported([*required, *optional], "unsupported-extension")
            accepted = {e.name for e in required}
            dropped = [e.name for e in self.required if e.name not in accepted]
            if dropped:
                raise ProtocolViolation("required-not-accepted", "the final message drops " + ", ".join(dropped))
            self._open(negotiate(version, hs.identity, required, optional), events)

    def _open(self, negotiated: Negotiated, events: list[Event]) -> None:
        self.state = State.OPEN
        self.negotiated = negotiated
        self._send_window = SendWindow(negotiated.window)
        self._recv_window = ReceiveWindow(negotiated.window) if negotiated.window else None
        events.append(HandshakeComplete(negotiated))

    # --- frames ---------------------------------------------------------------------

    def _reassemble(self, frame: Frame) -> Frame | None:
        """The whole frame once its last fragment is in; None while CONTINUED fragments arrive."""
        kind = type(frame)
        pending = self._fragments.get(kind)
        if pending is None and not frame.continued:
            return frame
        if pending and not same_header(pending[0], frame):
            raise ProtocolViolation("fragment-mismatch", "a fragment does not repeat the header of the one before")
        self._fragment_bytes += len(frame.payload)
        if self._fragment_bytes > self.max_message:
            raise ProtocolViolation("too-large", f"fragments exceed {self.max_message} bytes")
        pending = self._fragments.setdefault(kind, [])
        pending.append(frame)
        if frame.continued:
            return None
        del self._fragments[kind]
        whole = join(pending)
        self._fragment_bytes -= len(whole.payload)
        return whole

    def _dispatch(self, frame: Frame, events: list[Event]) -> None:
        if isinstance(frame, MessageFrame):
            if self._recv_window is not None:
                self._recv_window.received(frame.seq)
            events.append(MessageReceived(
                frame.seq, frame.destination, frame.properties, frame.payload, self._type_name))
        elif isinstance(frame, ExtensionFrame):
            self._on_extension(frame, events)
        elif isinstance(frame, CommandFrame):
            self._on_command(frame, events)
        else:
            self._on_error(frame, events)

    def _on_extension(self, frame: ExtensionFrame, events: list[Event]) -> None:
        assert self.negotiated is not None
        ext = self.negotiated.by_id(frame.ext_id)
        if ext is None:
            raise ProtocolViolation(
                "unknown-extension-id", f"ID {frame.ext_id}, {len(self.negotiated.extensions)} extensions negotiated")
        if ext.name in ("ack", "batch-ack"):
            if len(frame.payload) != 2:
                raise ProtocolViolation("bad-ack", f"ack payload is {len(frame.payload)} bytes, not 2")
            seq = int.from_bytes(frame.payload, "big")
            events.append(AckReceived(seq, self._send_window.ack(seq)))
        elif ext.name == "dotnet":
            try:
                type_name = frame.payload.decode("utf-8")
            except UnicodeDecodeError:
                raise ProtocolViolation("bad-type-name", "type name is not UTF-8") from None
            if not type_name:
                raise ProtocolViolation("bad-type-name", "empty type name")
            self._type_name = type_name
        else:
            events.append(ExtensionFrameReceived(ext.name, frame.ext_id, frame.payload))

    def _on_command(self, frame: CommandFrame, events: list[Event]) -> None:
        assert self.negotiated is not None
        if not frame.payload.isascii():
            raise CodecError("non-ascii", "COMMAND payload must be 7-bit ASCII")
        command = parse_command(frame.payload.decode("ascii"))
        if command.name not in ("subscribe", "unsubscribe"):
            raise ProtocolViolation("unknown-command", command.name)
        if not self.negotiated.active("pubsub"):
            raise ProtocolViolation("pubsub-not-active", f"{command.name} needs the pubsub extension")
        destination = command.arguments.get("destination")
        if not destination:
            raise ProtocolViolation("missing-destination", f"{command.name} without a destination")
        events.append(Subscribed(destination) if command.name == "subscribe" else Unsubscribed(destination))

    def _on_error(self, frame: ErrorFrame, events: list[Event]) -> None:
        self.state = State.CLOSED
        events.append(ErrorReceived(frame.reason))

    def _fail(self, code: str, detail: str, events: list[Event]) -> None:
        reason = f"{code}: {detail}" if detail else code
        self._out += encode_frame(error_frame(reason))
        self.state = State.CLOSING
        events.append(ErrorSent(code, reason))

    # --- output -------------------------------------------------------------------

    def data_to_send(self) -> bytes:
        out = bytes(self._out)
        self._out.clear()
        return out

    @property
    def send_credit(self) -> int | None:
        """Messages we may send before an ack; None when acks are off."""
        return self._send_window.credit

    @property
    def received_unacked(self) -> tuple[int, ...]:
        """Sequence numbers of received messages we have not acked (empty when acks are off)."""
        return self._recv_window.unacked if self._recv_window else ()

    def _require_open(self) -> Negotiated:
        if self.state is not State.OPEN or self.negotiated is None:
            raise LocalProtocolError("not-open", f"the connection is {self.state.value}")
        return self.negotiated

    def _active_id(self, name: str) -> int:
        ext_id = self._require_open().id_of(name)
        if ext_id is None:
            raise LocalProtocolError("not-negotiated", f"extension {name!r} is not active")
        return ext_id

    def _queue(self, frame: Frame) -> None:
        for fragment in split(frame, self.fragment_size):
            self._out += encode_frame(fragment)

    def send_message(self, destination: str, payload: bytes = b"", properties: str | Mapping[str, str] = "",
                     type_name: str | None = None) -> int:
        """Queue a MESSAGE (server) or SEND (client), split when large; returns its sequence number."""
        self._require_open()
        props = properties if isinstance(properties, str) else format_properties(properties)
        encode_frame(MessageFrame(1, destination, props, b""))  # reject bad fields before using a sequence number
        type_id = self._active_id("dotnet") if type_name is not None else None
        seq = self._send_window.allocate()
        if type_id is not None and type_name is not None:
            self._out += encode_frame(ExtensionFrame(type_id, type_name.encode("utf-8")))
        self._queue(MessageFrame(seq, destination, props, payload))
        return seq

    def send_ack(self, seq: int | None = None) -> int:
        """Ack received messages up to ``seq`` (default: the last received); returns how many it acks."""
        negotiated = self._require_open()
        if self._recv_window is None:
            raise LocalProtocolError("acks-off", "neither ack nor batch-ack is active")
        if seq is None:
            if not self._recv_window.unacked:
                raise LocalProtocolError("not-received", "no unacked message")
            seq = self._recv_window.unacked[-1]
        count = self._recv_window.ack(seq)
        ext_id = self._active_id("ack" if negotiated.active("ack") else "batch-ack")
        self._out += encode_frame(ExtensionFrame(ext_id, seq.to_bytes(2, "big")))
        return count

    def send_command(self, name: str, arguments: Mapping[str, str] | None = None) -> None:
        self._require_open()
        self._queue(CommandFrame(format_command(Command(name, dict(arguments or {}))).encode("ascii")))

    def send_extension(self, name: str, payload: bytes) -> None:
        """An EXTENSION frame for an active extension, e.g. a vendor ``x-...`` one."""
        self._queue(ExtensionFrame(self._active_id(name), payload))

    def send_error(self, code: str, detail: str = "") -> list[Event]:
        """Give up on the connection: queue ERROR and move to CLOSING."""
        if self.state not in (State.HANDSHAKE, State.OPEN):
            raise LocalProtocolError("not-open", f"the connection is {self.state.value}")
        events: list[Event] = []
        self._fail(code, detail, events)
        return events
