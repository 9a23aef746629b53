"""Sans-IO STMP connection, client and server role.

Feed it what the transport received (``receive_data`` for a byte stream,
``receive_message`` for WebSocket frames: str = text frame, bytes = binary
frame), call ``tick(now)`` regularly, then write out ``data_to_send()`` and act
on ``events()``; close the transport once ``should_close`` is true and the
output is flushed.  ``now`` is a monotonic clock in seconds that never goes back.

Decisions the spec leaves open (docs/profiles/stmp.md fixes the rest):

- Negotiation (server): the first message must be Request ID 0 ACTION 0.
  ENCODING 5: Ok with the highest common version, or 0x35 without payload and
  close; ENCODING 0 (empty list): 0x35 and close; ENCODING 1..4: BadRequest and
  close.  Any other first message: BadRequest carrying its ID (0 if it has
  none) and close.  A Request ACTION 0 after negotiation gets BadRequest and the
  connection stays open.
- Negotiation (client): the reply must be Response ID 0, Ok, ENCODING 5 and
  exactly one version the client offered; 0x35 or anything else closes.  Pings
  are ignored before negotiation; any other message closes.  An unanswered
  negotiation closes after ``request_timeout`` ("negotiation-timeout").
- Version lists are read in the form of the message carrying them: text (also
  for a split text message) or binary.
- Invalid bytes: the server answers BadRequest with ID 0, or 0x26
  RequestEntityTooLarge with the offending message's ID (0 if none) for a payload
  over ``max_payload``, then closes; the client just closes.  Messages decoded
  before the invalid bytes are handled first.
- Output form on message framing: a client uses its ``text`` option; a server
  answers in the form the peer used last.  A text-form payload that is not UTF-8
  goes out as a split message (text header, then a binary frame).
- Heartbeats start once negotiation completes: a Ping every
  ``heartbeat_interval`` whatever else is sent; any received bytes count as
  traffic for ``heartbeat_timeout``.  The MAY of closing a connection that never
  negotiates is not taken.
- Requests unanswered within ``request_timeout`` complete locally with 0x25 and
  free their ID; a late reply to a freed ID is dropped like any Response to an
  unknown ID.  On close, outstanding requests get no event beyond ``Closed``.

``Closed.reason``: local, connection-lost, heartbeat-timeout, codec-error
(``error_code`` = the CodecError code), protocol-error (``error_code``:
not-negotiated, negotiation-encoding, split-payload-missing),
version-not-supported, negotiation-failed (``error_code``: negotiation-refused,
version-unoffered, version-syntax), negotiation-timeout.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import Enum
from typing import Literal, TypeAlias

from reference_impl.common.errors import CodecError
from reference_impl.stmp.codec import (
    DEFAULT_MAX_PAYLOAD,
    Encoding,
    Message,
    Notify,
    PayloadTooLarge,
    Ping,
    Request,
    Response,
    Status,
    StreamDecoder,
    attach_split_payload,
    decode_binary,
    decode_text,
    decode_versions,
    encode_binary,
    encode_text,
    encode_versions,
)

Version: TypeAlias = tuple[int, int]
MAX_ID = 0xFFFF


@dataclass(frozen=True)
class Negotiated:
    version: Version


@dataclass(frozen=True)
class RequestReceived:
    request: Request


@dataclass(frozen=True)
class NotifyReceived:
    notify: Notify


@dataclass(frozen=True)
class ResponseReceived:
    response: Response
    local: bool = False


@dataclass(frozen=True)
class PingReceived:
    pass


@dataclass(frozen=True)
class Closed:
    reason: str
    error_code: str | None = None


Event: TypeAlias = Negotiated | RequestReceived | NotifyReceived | ResponseReceived | PingReceived | Closed


class IdsExhausted(RuntimeError):
    """All 65535 request IDs are outstanding; wait for a response or a timeout."""


class _State(Enum):
    IDLE = "idle"  # client before start()
    NEGOTIATING = "negotiating"
    OPEN = "open"
    CLOSED = "closed"


def _is_utf8(payload: bytes) -> bool:
    try:
        payload.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


class Connection:
    def __init__(
        self,
        role: Literal["client", "server"],
        *,
        framing: Literal["stream", "message"],
        versions: Sequence[Version] = ((0, 1),),
        heartbeat_interval: float | None = None,
        heartbeat_timeout: float | None = None,
        request_timeout: float = 30.0,
        max_payload: int = DEFAULT_MAX_PAYLOAD,
        text: bool = False,
    ) -> None:
        if role not in ("client", "server") or framing not in ("stream", "message"):
            raise ValueError(f"bad role/framing {role!r}/{framing!r}")
        if text and framing != "message":
            raise ValueError("the text form exists only on message framing")
        self.role = role
        self.framing = framing
        self.version: Version | None = None
        self._versions = list(versions)
        self._heartbeat_interval = heartbeat_interval
        self._heartbeat_timeout = heartbeat_timeout
        self._request_timeout = request_timeout
        self._max_payload = max_payload
        self._decoder = StreamDecoder(max_payload)
        self._split_header: Message | None = None
        self._incoming_text = False
        self._outgoing_text = text
        self._state = _State.IDLE if role == "client" else _State.NEGOTIATING
        self._out: list[bytes | str] = []
        self._events: list[Event] = []
        self._outstanding: dict[int, float] = {}  # request ID -> deadline, in send order
        self._next_id = 1
        self._negotiation_deadline: float | None = None
        self._last_received = 0.0
        self._next_ping = 0.0

    # -- state ---------------------------------------------------------------

    @property
    def is_open(self) -> bool:
        return self._state == _State.OPEN

    @property
    def should_close(self) -> bool:
        """Closed: the transport closes once ``data_to_send()`` is flushed."""
        return self._state == _State.CLOSED

    @property
    def outstanding(self) -> frozenset[int]:
        return frozenset(self._outstanding)

    def data_to_send(self) -> list[bytes | str]:
        out, self._out = self._out, []
        return out

    def events(self) -> list[Event]:
        events, self._events = self._events, []
        return events

    # -- input ---------------------------------------------------------------

    def receive_data(self, data: bytes, now: float) -> None:
        if self.framing != "stream":
            raise RuntimeError("receive_data is for stream framing; use receive_message")
        if self.should_close or not data:
            return
        self._last_received = now
        try:
            messages = self._decoder.feed(data)
            while messages and not self.should_close:
                for message in messages:
                    self._handle(message, now)
                    if self.should_close:
                        return
                messages = self._decoder.feed(b"")  # raises an error found after them
        except CodecError as exc:
            self._codec_error(exc)

    def receive_message(self, data: bytes | str, now: float) -> None:
        if self.framing != "message":
            raise RuntimeError("receive_message is for message framing; use receive_data")
        if self.should_close:
            return
        self._last_received = now
        try:
            if self._split_header is not None:
                if isinstance(data, str):
                    self._fail("protocol-error", "split-payload-missing", getattr(self._split_header, "id", 0))
                    return
                header, self._split_header = self._split_header, None
                message = attach_split_payload(header, data, max_payload=self._max_payload)
            else:
                self._incoming_text = isinstance(data, str)
                if self.role == "server":  # answer (errors too) in the peer's form
                    self._outgoing_text = self._incoming_text
                if isinstance(data, str):
                    message = decode_text(data, max_payload=self._max_payload)
                    if getattr(message, "payload", b"") is None:
                        self._split_header = message
                        return
                else:
                    message = decode_binary(data, with_ps=False, max_payload=self._max_payload)
        except CodecError as exc:
            self._codec_error(exc)
            return
        self._handle(message, now)

    def tick(self, now: float) -> None:
        if self._state == _State.NEGOTIATING and self._negotiation_deadline is not None:
            if now >= self._negotiation_deadline:
                self._close("negotiation-timeout")
            return
        if self._state != _State.OPEN:
            return
        if self._heartbeat_timeout is not None and now - self._last_received >= self._heartbeat_timeout:
            self._close("heartbeat-timeout")
            return
        if self._heartbeat_interval is not None and now >= self._next_ping:
            self._send(Ping())
            self._next_ping = now + self._heartbeat_interval
        for request_id, deadline in list(self._outstanding.items()):
            if deadline > now:
                break  # deadlines grow in send order
            del self._outstanding[request_id]
            timeout = Response(request_id, Status.REQUEST_TIMEOUT, Encoding.NONE, b"")
            self._events.append(ResponseReceived(timeout, local=True))

    def connection_lost(self) -> None:
        if not self.should_close:
            self._close("connection-lost")

    def close(self) -> None:
        if not self.should_close:
            self._close("local")

    # -- output --------------------------------------------------------------

    def start(self, now: float) -> None:
        """Client: send the negotiation request."""
        if self.role != "client" or self._state != _State.IDLE:
            raise RuntimeError("start() is called once, by a client")
        offered = encode_versions(self._versions, text=self._outgoing_text)
        self._send(Request(0, 0, Encoding.RAW if offered else Encoding.NONE, offered))
        self._state = _State.NEGOTIATING
        self._negotiation_deadline = now + self._request_timeout

    def send_request(self, action: int, encoding: int, payload: bytes, now: float) -> int:
        self._require_open()
        request_id = self._allocate_id()
        self._send(Request(request_id, action, encoding, payload))  # raises before the ID is taken
        self._outstanding[request_id] = now + self._request_timeout
        self._next_id = request_id % MAX_ID + 1
        return request_id

    def send_notify(self, action: int, encoding: int, payload: bytes) -> None:
        self._require_open()
        self._send(Notify(action, encoding, payload))

    def send_response(self, id: int, status: int, encoding: int, payload: bytes) -> None:
        self._require_open()
        self._send(Response(id, status, encoding, payload))

    def _require_open(self) -> None:
        if self._state != _State.OPEN:
            raise RuntimeError(f"connection is {self._state.value}, not open")

    def _allocate_id(self) -> int:
        if len(self._outstanding) >= MAX_ID:
            raise IdsExhausted(f"all {MAX_ID} request IDs are outstanding")
        candidate = self._next_id
        while candidate in self._outstanding:
            candidate = candidate % MAX_ID + 1  # 0xFFFF wraps to 1; 0 is the negotiation's
        return candidate

    def _send(self, message: Message) -> None:
        if self.framing == "stream":
            self._out.append(encode_binary(message, with_ps=True))
        elif not self._outgoing_text:
            self._out.append(encode_binary(message, with_ps=False))
        elif isinstance(message, Ping) or message.encoding == 0 or _is_utf8(message.payload or b""):
            self._out.append(encode_text(message))
        else:
            self._out.append(encode_text(replace(message, payload=None)))
            self._out.append(bytes(message.payload or b""))

    # -- handling ------------------------------------------------------------

    def _handle(self, message: Message, now: float) -> None:
        if self._state == _State.OPEN:
            self._dispatch(message)
        elif self.role == "server":
            self._server_negotiate(message, now)
        else:
            self._client_negotiate(message, now)

    def _dispatch(self, message: Message) -> None:
        if isinstance(message, Ping):
            self._events.append(PingReceived())
        elif isinstance(message, Request):
            if message.action == 0:
                self.send_response(message.id, Status.BAD_REQUEST, Encoding.NONE, b"")
            else:
                self._events.append(RequestReceived(message))
        elif isinstance(message, Notify):
            self._events.append(NotifyReceived(message))
        elif self._outstanding.pop(message.id, None) is not None:
            self._events.append(ResponseReceived(message))

    def _server_negotiate(self, message: Message, now: float) -> None:
        if not (isinstance(message, Request) and message.id == 0 and message.action == 0):
            self._fail("protocol-error", "not-negotiated", getattr(message, "id", 0))
            return
        if message.encoding == Encoding.NONE:
            self._refuse_versions()
            return
        if message.encoding != Encoding.RAW:
            self._fail("protocol-error", "negotiation-encoding", 0)
            return
        try:
            offered = decode_versions(message.payload or b"", text=self._incoming_text)
        except CodecError as exc:
            self._fail("codec-error", exc.code, 0)
            return
        common = set(offered) & set(self._versions)
        if not common:
            self._refuse_versions()
            return
        self.version = max(common)
        chosen = encode_versions([self.version], text=self._outgoing_text)
        self._send(Response(0, Status.OK, Encoding.RAW, chosen))
        self._open(now)

    def _refuse_versions(self) -> None:
        self._send(Response(0, Status.VERSION_NOT_SUPPORTED, Encoding.NONE, b""))
        self._close("version-not-supported")

    def _client_negotiate(self, message: Message, now: float) -> None:
        if isinstance(message, Ping):
            return
        if self._state != _State.NEGOTIATING or not (isinstance(message, Response) and message.id == 0):
            self._close("protocol-error", "not-negotiated")
            return
        if message.status == Status.VERSION_NOT_SUPPORTED:
            self._close("version-not-supported")
            return
        if message.status != Status.OK or message.encoding != Encoding.RAW:
            self._close("negotiation-failed", "negotiation-refused")
            return
        try:
            chosen = decode_versions(message.payload or b"", text=self._incoming_text)
        except CodecError as exc:
            self._close("negotiation-failed", exc.code)
            return
        if len(chosen) != 1 or chosen[0] not in self._versions:
            self._close("negotiation-failed", "version-unoffered")
            return
        self.version = chosen[0]
        self._open(now)

    def _open(self, now: float) -> None:
        self._state = _State.OPEN
        self._last_received = now
        self._next_ping = now + (self._heartbeat_interval or 0.0)
        self._events.append(Negotiated(self.version))  # type: ignore[arg-type]

    def _codec_error(self, exc: CodecError) -> None:
        if isinstance(exc, PayloadTooLarge):
            self._fail("codec-error", exc.code, exc.message_id or 0, Status.REQUEST_ENTITY_TOO_LARGE)
        else:
            self._fail("codec-error", exc.code, 0)

    def _fail(self, reason: str, code: str, reply_id: int, status: int = Status.BAD_REQUEST) -> None:
        """Close for a peer's fault; a server first tells the peer why."""
        if self.role == "server":
            self._send(Response(reply_id, status, Encoding.NONE, b""))
        self._close(reason, code)

    def _close(self, reason: str, error_code: str | None = None) -> None:
        self._state = _State.CLOSED
        self._split_header = None
        self._events.append(Closed(reason, error_code))
