"""A sans-IO ZMTP 3.x connection: greeting, security handshake, traffic (RFC 23, RFC 37).

    conn = Connection("DEALER", PlainClientConfig(b"alice", b"wonderland"))
    out = conn.start(now)                  # out.data: our greeting, to write
    out = conn.receive_data(chunk, now)    # out.events, out.data (replies, PONGs, ERROR)
    out = conn.send(Message([b"a", b"b"]))
    out = conn.tick(now)                   # heartbeats and timeouts; call by next_deadline()
    out = conn.receive_data(b"", now)      # end of stream
    out = conn.close(b"reason")            # ERROR (reason optional), then the caller closes the transport

Readings pinned here:
- The whole 64-octet greeting is sent at once (RFC 23 allows it); the peer's
  is judged octet by octet, so a ZMTP 1.0/2.0 peer is refused at its first,
  tenth or eleventh octet without waiting for the rest.
- The peer must announce exactly our mechanism.  Our role comes from our
  own config, as in libzmq: libzmq 4.3 sends as-server 0 even as a PLAIN or
  CURVE server, so a peer's 0 is not held against it; only two peers that
  both claim the server role are refused.  Two clients fail at the first
  handshake command.
- The peer's Socket-Type, when present, must be a legal partner of ours
  (RFC 23/37 table); otherwise ERROR (on clear-text mechanisms) and close.
  A READY without Socket-Type is accepted: the property is a SHOULD.
- ERROR is fatal whenever it arrives.
- PING is answered by PONG echoing the context, whatever the peer's minor
  version; our own PINGs go only to ZMTP 3.1+ peers.  Like libzmq, a PING's
  TTL arms a deadline that any later traffic disarms.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum

from reference_impl.common.errors import CodecError, ProtocolViolation
from reference_impl.zmtp.codec import DEFAULT_MAX_FRAME, Frame, StreamDecoder, encode_frame
from reference_impl.zmtp.commands import (
    Cancel, Command, Error, Metadata, Ping, Pong, Ready, Subscribe, decode_command, decode_error, encode_command,
    split_command,
)
from reference_impl.zmtp.greeting import Greeting, GreetingDecoder, encode_greeting
from reference_impl.zmtp.mechanism import HandshakeError, Mechanism, MechanismConfig
from reference_impl.zmtp.null import NullConfig

_PARTNERS: dict[str, frozenset[str]] = {
    "REQ": frozenset({"REP", "ROUTER"}),
    "REP": frozenset({"REQ", "DEALER"}),
    "DEALER": frozenset({"REP", "DEALER", "ROUTER"}),
    "ROUTER": frozenset({"REQ", "DEALER", "ROUTER"}),
    "PUB": frozenset({"SUB", "XSUB"}),
    "XPUB": frozenset({"SUB", "XSUB"}),
    "SUB": frozenset({"PUB", "XPUB"}),
    "XSUB": frozenset({"PUB", "XPUB"}),
    "PUSH": frozenset({"PULL"}),
    "PULL": frozenset({"PUSH"}),
    "PAIR": frozenset({"PAIR"}),
    "CLIENT": frozenset({"SERVER"}),
    "SERVER": frozenset({"CLIENT"}),
    "RADIO": frozenset({"DISH"}),
    "DISH": frozenset({"RADIO"}),
    "SCATTER": frozenset({"GATHER"}),
    "GATHER": frozenset({"SCATTER"}),
    "PEER": frozenset({"PEER"}),
    "CHANNEL": frozenset({"CHANNEL"}),
}
#: Socket types that announce an Identity (libzmq sends one, empty by default).
_IDENTITY_TYPES = frozenset({"REQ", "DEALER", "ROUTER"})


def compatible(ours: str, theirs: str) -> bool:
    """Whether RFC 23/37 allow a ``theirs`` peer for a ``ours`` socket."""
    return theirs in _PARTNERS.get(ours, frozenset())


@dataclass(frozen=True)
class HandshakeComplete:
    peer_metadata: Metadata
    peer_version: tuple[int, int]
    #: PLAIN username or CURVE client public key, on the server side.
    peer_user: bytes | None = None

    @property
    def socket_type(self) -> str | None:
        value = self.peer_metadata.get("Socket-Type")
        return value.decode("ascii", "replace") if value is not None else None

    @property
    def identity(self) -> bytes:
        return self.peer_metadata.get("Identity") or b""


@dataclass
class Message:
    frames: list[bytes]


@dataclass(frozen=True)
class ConnectionClosed:
    """The connection is over; ``code`` is stable ("peer-closed", "peer-error", "bad-flags", ...)."""

    code: str
    detail: str = ""


Event = HandshakeComplete | Message | Ping | Pong | Subscribe | Cancel | Command | Error | ConnectionClosed


@dataclass
class Output:
    events: list[Event] = field(default_factory=list)
    data: bytes = b""


class Phase(Enum):
    GREETING = "greeting"
    HANDSHAKE = "handshake"
    TRAFFIC = "traffic"
    CLOSED = "closed"


class Connection:
    """One ZMTP connection, either role.  Times are seconds on any monotonic clock the caller likes."""

    def __init__(
        self,
        socket_type: str,
        mechanism: MechanismConfig = NullConfig(),
        *,
        identity: bytes = b"",
        properties: Mapping[str, bytes] | None = None,
        minor_version: int = 1,
        max_frame: int = DEFAULT_MAX_FRAME,
        max_message: int | None = None,
        handshake_timeout: float | None = 30.0,
        heartbeat_interval: float | None = None,
        heartbeat_ttl: float = 0.0,
        heartbeat_timeout: float | None = None,
    ) -> None:
        self.socket_type = socket_type
        self.config = mechanism
        self.minor_version = minor_version
        self.max_frame = max_frame
        self.max_message = max_frame if max_message is None else max_message
        self.handshake_timeout = handshake_timeout
        self.heartbeat_interval = heartbeat_interval
        self.heartbeat_ttl = heartbeat_ttl
        self.heartbeat_timeout = heartbeat_timeout if heartbeat_timeout is not None else heartbeat_interval
        pairs = [("Socket-Type", socket_type.encode("ascii"))]
        if socket_type in _IDENTITY_TYPES:
            pairs.append(("Identity", identity))
        pairs.extend((properties or {}).items())
        self.metadata = Metadata.of(pairs)

        self.phase = Phase.GREETING
        self.peer_greeting: Greeting | None = None
        self.peer: HandshakeComplete | None = None
        self.mechanism: Mechanism | None = None
        self._greeting = GreetingDecoder()
        self._frames: StreamDecoder | None = None
        self._parts: list[bytes] = []
        self._parts_size = 0
        self._out = bytearray()
        self._events: list[Event] = []
        self._started_at = 0.0
        self._next_ping_at: float | None = None
        self._ping_sent_at: float | None = None
        self._ttl_deadline: float | None = None

    # -- public API ---------------------------------------------------------

    def start(self, now: float) -> Output:
        """Our greeting; call once when the transport is connected."""
        self._started_at = now
        self._out += encode_greeting(Greeting(self.config.name, self.config.as_server, 3, self.minor_version))
        return self._flush()

    def receive_data(self, data: bytes, now: float) -> Output:
        """Octets from the peer; ``b""`` means the stream ended."""
        if self.phase is Phase.CLOSED:
            return Output()
        if not data:
            self._close("peer-closed", f"stream ended during {self.phase.value}")
            return self._flush()
        self._ping_sent_at = None
        self._ttl_deadline = None
        try:
            if self.phase is Phase.GREETING:
                data = self._greeting.feed(data)
                if self._greeting.greeting is not None:
                    self._begin_handshake(self._greeting.greeting, now)
            if self._frames is not None and data:
                for frame in self._frames.frames(data):
                    if self.phase is Phase.CLOSED:
                        break
                    self._on_frame(frame, now)
        except HandshakeError as exc:
            self._fail(exc.code, exc.detail, exc.error_reason)
        except (CodecError, ProtocolViolation) as exc:
            self._fail(exc.code, exc.detail, None)
        return self._flush()

    def send(self, event: Message | Ping | Pong | Subscribe | Cancel | Command) -> Output:
        """Queue a message or a command for the peer; only once the handshake is complete."""
        if self.phase is not Phase.TRAFFIC:
            raise RuntimeError(f"cannot send during {self.phase.value}")
        if isinstance(event, Message):
            if not event.frames:
                raise ValueError("a message has at least one frame")
            last = len(event.frames) - 1
            for i, part in enumerate(event.frames):
                self._write(Frame(bytes(part), more=i < last))
        else:
            self._write(Frame(encode_command(event), command=True))
        return self._flush()

    def close(self, error_reason: bytes | None = None) -> Output:
        """Close from our side, sending ERROR first when a reason is given."""
        if self.phase is not Phase.CLOSED:
            self._fail("local-close", "", error_reason)
        return self._flush()

    def tick(self, now: float) -> Output:
        """Fire heartbeats and timeouts that are due at ``now``."""
        if self.phase is Phase.CLOSED:
            return Output()
        if self.phase is not Phase.TRAFFIC:
            if self.handshake_timeout is not None and now >= self._started_at + self.handshake_timeout:
                self._close("handshake-timeout", f"no handshake within {self.handshake_timeout} s")
            return self._flush()
        if self._ttl_deadline is not None and now >= self._ttl_deadline:
            self._close("heartbeat-ttl-expired", "no traffic within the TTL of the peer's PING")
        elif (self._ping_sent_at is not None and self.heartbeat_timeout is not None
              and now >= self._ping_sent_at + self.heartbeat_timeout):
            self._close("heartbeat-timeout", f"no traffic within {self.heartbeat_timeout} s of our PING")
        elif self._next_ping_at is not None and now >= self._next_ping_at:
            self._write(Frame(encode_command(Ping(round(self.heartbeat_ttl * 10))), command=True))
            if self._ping_sent_at is None:
                self._ping_sent_at = now
            self._next_ping_at = now + (self.heartbeat_interval or 0.0)
        return self._flush()

    def next_deadline(self) -> float | None:
        """When :meth:`tick` next has something to do, or None."""
        if self.phase is Phase.CLOSED:
            return None
        if self.phase is not Phase.TRAFFIC:
            return None if self.handshake_timeout is None else self._started_at + self.handshake_timeout
        deadlines = [self._ttl_deadline, self._next_ping_at]
        if self._ping_sent_at is not None and self.heartbeat_timeout is not None:
            deadlines.append(self._ping_sent_at + self.heartbeat_timeout)
        present = [d for d in deadlines if d is not None]
        return min(present) if present else None

    # -- the phases -----------------------------------------------------------

    def _begin_handshake(self, greeting: Greeting, now: float) -> None:
        self.peer_greeting = greeting
        if greeting.mechanism != self.config.name:
            raise ProtocolViolation("mechanism-mismatch", f"peer uses {greeting.mechanism}, we use {self.config.name}")
        if self.config.as_server and greeting.as_server:
            raise ProtocolViolation("role-mismatch", "both peers act as server")
        self.mechanism = self.config.create(self.metadata)
        self._frames = StreamDecoder(self.max_frame + self.mechanism.frame_overhead)
        self.phase = Phase.HANDSHAKE
        for body in self.mechanism.start():
            self._out += encode_frame(Frame(body, command=True))

    def _on_frame(self, frame: Frame, now: float) -> None:
        assert self.mechanism is not None
        if frame.command:
            name, data = split_command(frame.body)
            if name == "ERROR":
                self._on_peer_error(decode_error(data))
                return
        if self.phase is Phase.HANDSHAKE:
            if not frame.command:
                raise ProtocolViolation("unexpected-message", "a message frame before the handshake completed")
            for body in self.mechanism.receive(frame.body):
                self._out += encode_frame(Frame(body, command=True))
            if self.mechanism.complete:
                self._complete_handshake(now)
            return
        inner = self.mechanism.unwrap(frame)
        if inner.command:
            self._on_command(inner.body, now)
        else:
            self._on_message_frame(inner)

    def _complete_handshake(self, now: float) -> None:
        assert self.mechanism is not None and self.peer_greeting is not None
        metadata = self.mechanism.peer_metadata or Metadata()
        self.peer = HandshakeComplete(metadata, (self.peer_greeting.major, self.peer_greeting.minor),
                                      self.mechanism.peer_user)
        theirs = self.peer.socket_type
        if theirs is not None and not compatible(self.socket_type, theirs):
            reason = None if self.mechanism.encrypted else b"incompatible socket type"
            raise HandshakeError("incompatible-socket-type", f"{self.socket_type} cannot talk to {theirs}",
                                 error_reason=reason)
        self.phase = Phase.TRAFFIC
        if self.heartbeat_interval and self.peer.peer_version >= (3, 1):
            self._next_ping_at = now + self.heartbeat_interval
        self._events.append(self.peer)

    def _on_command(self, body: bytes, now: float) -> None:
        command = decode_command(body)
        if isinstance(command, Ready):
            raise ProtocolViolation("unexpected-command", "READY after the handshake")
        if isinstance(command, Error):
            self._on_peer_error(command)
            return
        if isinstance(command, Ping):
            self._write(Frame(encode_command(Pong(command.context)), command=True))
            if command.ttl:
                self._ttl_deadline = now + command.ttl / 10
        self._events.append(command)

    def _on_message_frame(self, frame: Frame) -> None:
        self._parts_size += len(frame.body)
        if self._parts_size > self.max_message:
            raise ProtocolViolation("too-large", f"message exceeds {self.max_message} octets")
        self._parts.append(frame.body)
        if not frame.more:
            self._events.append(Message(self._parts))
            self._parts, self._parts_size = [], 0

    # -- helpers --------------------------------------------------------------

    def _write(self, frame: Frame) -> None:
        assert self.mechanism is not None
        self._out += encode_frame(self.mechanism.wrap(frame))

    def _on_peer_error(self, error: Error) -> None:
        self._events.append(error)
        self._close("peer-error", error.reason.decode("ascii", "replace"))

    def _fail(self, code: str, detail: str, error_reason: bytes | None) -> None:
        if error_reason is not None:
            self._out += encode_frame(Frame(encode_command(Error(error_reason)), command=True))
        self._close(code, detail)

    def _close(self, code: str, detail: str) -> None:
        self.phase = Phase.CLOSED
        self._events.append(ConnectionClosed(code, detail))

    def _flush(self) -> Output:
        out = Output(self._events, bytes(self._out))
        self._events = []
        self._out.clear()
        return out
