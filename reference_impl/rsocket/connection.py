"""Sans-IO RSocket 1.0 connection, both roles (profile rsocket/1.0, docs/profiles/rsocket.md).

    conn = Connection(Role.CLIENT, now=clock())
    conn.setup(metadata_mime="text/plain", data_mime="text/plain")
    sid = conn.request_stream(b"range:3", initial_n=2)
    events = conn.receive_data(chunk, now=clock())   # TCP; receive_message() for WebSocket
    transport.write(conn.data_to_send())
    events += conn.tick(clock())                      # keepalives and the lifetime check
    if conn.should_close: ...                         # close once the bytes are written

Rules kept here:

* Stream ids: the client allocates 1, 3, 5 ..., the server 2, 4, 6 ...; no
  reuse after 2^31-1 (the spec's first option), so allocation then fails with
  ``stream-ids-exhausted`` and a new connection is needed.
* request-n credit is cumulative and saturates at 2^31-1; a request-n of 0
  ends that stream with ERROR[INVALID].  Sending a PAYLOAD with N beyond the
  peer's credit raises :class:`ProtocolViolation`; a peer doing so gets its
  stream cancelled and a :class:`PeerViolation` event.
* Fragmentation: ``fragment_size`` bounds metadata + data per frame on send
  (metadata first); received fragments are joined per stream and delivered as
  one event, bounded by ``max_reassembly`` (past it: connection error).
* Keepalive: the client sends KEEPALIVE(R) every ``keepalive_ms``; KEEPALIVE(R)
  is answered with the same data; a peer silent past the lifetime (the
  client's own, the server's from SETUP) gets ERROR[CONNECTION_ERROR] and the
  connection closes.
* Errors: ERROR on a stream ends that stream only; ERROR on stream 0 ends the
  connection, and after sending one nothing more is sent.
* Handling the Unexpected: frames the spec says to ignore are dropped with a
  :class:`FrameIgnored` event and the connection keeps serving.
* LEASE, server side ("Lease Semantics"): :class:`~reference_impl.rsocket.lease.ServerLease`
  (lease.py), which this class is built from.
* Resumption ("Resuming Operation"), both roles: :class:`~reference_impl.rsocket.resume.Resumption`
  (resume.py), which this class is built from.
"""

from __future__ import annotations

from reference_impl.common.errors import ProtocolViolation
from reference_impl.rsocket import codec
from reference_impl.rsocket.codec import (
    CONNECTION_ERROR, INVALID, INVALID_SETUP, MAX_U31, REJECTED, REJECTED_RESUME, REJECTED_SETUP,
    UNSUPPORTED_SETUP, Cancel, Error, FrameError, Keepalive, MetadataPush, Payload,
    RequestChannel, RequestFnf, RequestN, RequestResponse, RequestStream, Resume, Setup,
)
from reference_impl.rsocket.events import (  # noqa: F401 (imported from here too)
    CancelReceived, ConnectionClosed, CreditReceived, Event, FrameIgnored, KeepaliveReceived, Kind,
    MetadataPushReceived, PayloadReceived, PeerViolation, RequestReceived, Resumed, Role,
    SetupAccepted, StreamErrorReceived, Transport,
)
from reference_impl.rsocket.lease import ServerLease
from reference_impl.rsocket.resume import DEFAULT_MAX_BYTES, Resumption, SessionStore
from reference_impl.rsocket.streams import Credit, Partial, Stream, fragments

SETUP_ERRORS = frozenset({INVALID_SETUP, UNSUPPORTED_SETUP, REJECTED_SETUP, REJECTED_RESUME})
DEFAULT_FRAGMENT_SIZE = 1 << 20
DEFAULT_MAX_REASSEMBLY = 64 << 20


class Connection(Resumption, ServerLease):
    def __init__(self, role: Role, transport: Transport = Transport.TCP, *, now: float = 0.0,
                 keepalive_ms: int = 20_000, lifetime_ms: int = 90_000,
                 fragment_size: int = DEFAULT_FRAGMENT_SIZE, max_frame: int = codec.MAX_FRAME,
                 max_reassembly: int = DEFAULT_MAX_REASSEMBLY, lease_ttl_ms: int = 30_000,
                 lease_requests: int = 1000, sessions: SessionStore | None = None,
                 resume_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.role = role
        self.transport = transport
        self.keepalive_ms = keepalive_ms
        self.lifetime_ms = lifetime_ms
        self.fragment_size = fragment_size
        self.max_reassembly = max_reassembly
        self._decoder = codec.TcpDecoder(max_frame)
        self._out: list[bytes] = []
        self._streams: dict[int, Stream] = {}
        self._next_id = 1 if role is Role.CLIENT else 2
        self._established = False  # server: SETUP accepted; client: a non-setup-error frame seen
        self._closed = False
        self._last_received = now
        self._last_keepalive_sent = now
        self._now = now
        self._init_lease(lease_ttl_ms, lease_requests)
        self._init_resumption(sessions, resume_bytes)
        self.app = None  # what runs on the connection (the server's service); kept over a resume

    # ------------------------------------------------------------------ properties

    @property
    def should_close(self) -> bool:
        return self._closed

    def data_to_send(self) -> bytes:
        out = b"".join(self._out)
        self._out.clear()
        return out

    def messages_to_send(self) -> list[bytes]:
        """WebSocket: one frame per message."""
        out, self._out = self._out, []
        return out

    def credit(self, stream_id: int) -> int | None:
        """How many PAYLOADs we may still send on the stream."""
        stream = self._streams.get(stream_id)
        return None if stream is None else stream.outbound.value

    def open_streams(self) -> set[int]:
        return set(self._streams)

    # ------------------------------------------------------------------ sending

    def _send(self, frame: codec.Frame) -> None:
        if self._closed:
            raise ProtocolViolation("connection-closed")
        encoded = codec.encode_frame(frame)
        self._retain(encoded)
        self._out_raw(encoded)

    def _out_raw(self, encoded: bytes) -> None:
        if self.transport is Transport.TCP:
            self._out.append(len(encoded).to_bytes(3, "big") + encoded)
        else:
            self._out.append(encoded)

    def setup(self, metadata_mime: str = "", data_mime: str = "", *, metadata: bytes | None = None,
              data: bytes = b"", version: tuple[int, int] = (1, 0),
              resume_token: bytes | None = None) -> None:
        if self.role is not Role.CLIENT:
            raise ProtocolViolation("setup-from-server")
        self._send(Setup(version[0], version[1], self.keepalive_ms, self.lifetime_ms,
                         metadata_mime, data_mime, resume_token=resume_token, metadata=metadata,
                         data=data))
        if resume_token is not None:
            self._track(resume_token)

    def allocate_stream_id(self) -> int:
        if self._next_id > MAX_U31:
            raise ProtocolViolation("stream-ids-exhausted")
        sid = self._next_id
        self._next_id += 2
        return sid

    def _send_fragmented(self, sid: int, first, metadata: bytes | None, data: bytes, *,
                         complete: bool = False) -> None:
        """``first(metadata, data, follows, complete)`` builds the first frame; PAYLOADs follow."""
        chunks = fragments(metadata, data, self.fragment_size)
        last = len(chunks) - 1
        for i, (m, d) in enumerate(chunks):
            follows, done = i < last, complete and i == last
            if i == 0:
                self._send(first(m, d, follows, done))
            else:
                self._send(Payload(sid, m, d, follows=follows, complete=done, next=True))

    def _request(self, kind: Kind, metadata: bytes | None, data: bytes, initial_n: int = 0,
                 complete: bool = False) -> int:
        if self._resuming:  # "The client MUST NOT send any other frame types until resumption succeeds."
            raise ProtocolViolation("resuming")
        if self.role is Role.SERVER and not self._established:
            raise ProtocolViolation("not-established")
        if kind in (Kind.STREAM, Kind.CHANNEL) and not 0 < initial_n <= MAX_U31:
            raise ProtocolViolation("request-n-out-of-range", str(initial_n))
        sid = self.allocate_stream_id()
        builders = {
            Kind.RESPONSE: lambda m, d, f, c: RequestResponse(sid, m, d, f),
            Kind.FNF: lambda m, d, f, c: RequestFnf(sid, m, d, f),
            Kind.STREAM: lambda m, d, f, c: RequestStream(sid, initial_n, m, d, f),
            Kind.CHANNEL: lambda m, d, f, c: RequestChannel(sid, initial_n, m, d, f, c),
        }
        self._send_fragmented(sid, builders[kind], metadata, data, complete=complete)
        if kind is not Kind.FNF:
            stream = Stream(kind, local=True, inbound=Credit(initial_n or 1))
            stream.sent_done = kind is not Kind.CHANNEL or complete
            self._streams[sid] = stream
        return sid

    def request_response(self, data: bytes, metadata: bytes | None = None) -> int:
        return self._request(Kind.RESPONSE, metadata, data)

    def fire_and_forget(self, data: bytes, metadata: bytes | None = None) -> int:
        return self._request(Kind.FNF, metadata, data)

    def request_stream(self, data: bytes, initial_n: int, metadata: bytes | None = None) -> int:
        return self._request(Kind.STREAM, metadata, data, initial_n)

    def request_channel(self, data: bytes, initial_n: int, metadata: bytes | None = None,
                        complete: bool = False) -> int:
        return self._request(Kind.CHANNEL, metadata, data, initial_n, complete)

    def request_n(self, stream_id: int, n: int) -> None:
        if n <= 0:
            raise ProtocolViolation("request-n-zero")
        stream = self._stream(stream_id)
        stream.inbound.add(n)
        self._send(RequestN(stream_id, n))

    def send_payload(self, stream_id: int, data: bytes, metadata: bytes | None = None, *,
                     complete: bool = False) -> None:
        """onNext (and onComplete with ``complete``); needs one credit."""
        stream = self._stream(stream_id)
        if stream.sent_done:
            raise ProtocolViolation("stream-already-completed")
        if stream.kind is Kind.RESPONSE:
            complete = True  # a response is always the last PAYLOAD
        elif not stream.outbound.take():
            raise ProtocolViolation("no-credit", f"stream {stream_id}")
        self._send_fragmented(
            stream_id, lambda m, d, f, c: Payload(stream_id, m, d, follows=f, complete=c, next=True),
            metadata, data, complete=complete)
        stream.sent_done = complete
        self._maybe_release(stream_id)

    def send_complete(self, stream_id: int) -> None:
        stream = self._stream(stream_id)
        if stream.sent_done:
            raise ProtocolViolation("stream-already-completed")
        self._send(Payload(stream_id, complete=True))
        stream.sent_done = True
        self._maybe_release(stream_id)

    def send_error(self, stream_id: int, code: int, message: str = "") -> None:
        self._send(Error(stream_id, code, message.encode("utf-8")))
        if stream_id == 0:
            self._close(ConnectionClosed(message or "error sent", code))
        else:
            self._streams.pop(stream_id, None)

    def cancel(self, stream_id: int) -> None:
        self._stream(stream_id)
        self._send(Cancel(stream_id))
        del self._streams[stream_id]

    def metadata_push(self, metadata: bytes) -> None:
        self._send(MetadataPush(metadata))

    def keepalive(self, data: bytes = b"") -> None:
        self._send(Keepalive(True, self._keepalive_position(), data))

    def _stream(self, stream_id: int) -> Stream:
        stream = self._streams.get(stream_id)
        if stream is None:
            raise ProtocolViolation("unknown-stream", f"stream {stream_id}")
        return stream

    def _maybe_release(self, stream_id: int) -> None:
        stream = self._streams.get(stream_id)
        if stream is not None and stream.sent_done and stream.received_done:
            del self._streams[stream_id]

    def _close(self, event: ConnectionClosed, events: list[Event] | None = None) -> None:
        if self._closed:
            return
        self._closed = True
        self._streams.clear()
        self._forget_session()
        if events is not None:
            events.append(event)

    def _connection_error(self, code: int, reason: str, events: list[Event]) -> None:
        if self._closed:
            return
        self._send(Error(0, code, reason.encode("utf-8")))
        self._close(ConnectionClosed(reason, code), events)

    # ------------------------------------------------------------------ timers

    def tick(self, now: float) -> list[Event]:
        events: list[Event] = []
        if self._closed:
            return events
        if (now - self._last_received) * 1000 > self.lifetime_ms:
            self._connection_error(CONNECTION_ERROR, "keepalive timeout", events)
            return events
        self._now = now
        self._renew_lease(now)
        if (self.role is Role.CLIENT
                and (now - self._last_keepalive_sent) * 1000 >= self.keepalive_ms):
            self._last_keepalive_sent = now
            self.keepalive()
        return events

    # ------------------------------------------------------------------ receiving

    def receive_data(self, data: bytes, now: float | None = None) -> list[Event]:
        """TCP bytes, in arbitrary chunks."""
        events: list[Event] = []
        if self._closed:
            return events
        self._decoder.feed(data)
        while not self._closed and not self._handed_over:
            try:
                frame = self._decoder.next_frame()
            except FrameError as exc:
                if self._frame_error(exc, events):
                    continue
                break
            if frame is None:
                break
            self._count(frame, self._decoder.last_length)
            self._receive(frame, now, events)
        return events

    def receive_message(self, message: bytes | str, now: float | None = None) -> list[Event]:
        """One WebSocket message."""
        events: list[Event] = []
        if self._closed:
            return events
        try:
            frame = codec.decode_websocket(message)
        except FrameError as exc:
            self._frame_error(exc, events)
            return events
        self._count(frame, len(message))
        self._receive(frame, now, events)
        return events

    def _frame_error(self, exc: FrameError, events: list[Event]) -> bool:
        """True when the frame was dropped and reading may go on."""
        framing = exc.frame_type is None  # the length prefix itself: no resynchronisation
        if self.role is Role.SERVER and not self._established:
            # "Connection Establishment": anything but a valid SETUP|RESUME on stream 0 first
            # (a SETUP on a stream included, which is otherwise an ignorable frame)
            self._connection_error(INVALID_SETUP, exc.code, events)
            return False
        if exc.ignorable and not framing:
            events.append(FrameIgnored(exc.code, exc.stream_id))
            return True
        self._connection_error(CONNECTION_ERROR, exc.code, events)
        return False

    def _receive(self, frame: codec.Frame, now: float | None, events: list[Event]) -> None:
        if now is not None:
            self._last_received = now
            self._now = now
        if self.role is Role.SERVER and not self._established:
            self._receive_first(frame, events)
            return
        if isinstance(frame, codec.Ext):
            if frame.ignore:
                events.append(FrameIgnored("unknown-extension", frame.stream_id))
            else:
                self._connection_error(CONNECTION_ERROR, "unknown extension", events)
            return
        if self._resuming:
            self._receive_while_resuming(frame, events)
            return
        if isinstance(frame, Error):
            self._receive_error(frame, events)
            return
        if self.role is Role.CLIENT:
            self._established = True
        if isinstance(frame, Resume) and self.role is Role.SERVER:
            # "A Server that receives a RESUME frame after a SETUP frame, SHOULD send an
            # ERROR[CONNECTION_ERROR]" (and after a RESUME: the same)
            self._connection_error(CONNECTION_ERROR, "RESUME on an established connection", events)
            return
        if isinstance(frame, (Setup, Resume, codec.ResumeOk, codec.Lease)):
            events.append(FrameIgnored(f"unexpected-{type(frame).__name__.lower()}", 0))
        elif isinstance(frame, Keepalive):
            self._peer_received(frame.last_position)
            if frame.respond:
                self._send(Keepalive(False, self._keepalive_position(), frame.data))
            events.append(KeepaliveReceived(frame.respond, frame.data))
        elif isinstance(frame, MetadataPush):
            events.append(MetadataPushReceived(frame.metadata))
        elif isinstance(frame, (RequestResponse, RequestFnf, RequestStream, RequestChannel)):
            self._receive_request(frame, events)
        elif isinstance(frame, RequestN):
            self._receive_request_n(frame, events)
        elif isinstance(frame, Cancel):
            self._receive_cancel(frame, events)
        elif isinstance(frame, Payload):
            self._receive_payload(frame, events)

    def _receive_first(self, frame: codec.Frame, events: list[Event]) -> None:
        if isinstance(frame, Resume):
            self._receive_resume(frame, events)
        elif not isinstance(frame, Setup):
            self._connection_error(INVALID_SETUP, "first frame is not SETUP", events)
        elif frame.major != 1:
            self._connection_error(UNSUPPORTED_SETUP, f"version {frame.major}.{frame.minor}", events)
        elif frame.keepalive == 0 or frame.lifetime == 0:
            self._connection_error(INVALID_SETUP, "keepalive and lifetime must be > 0", events)
        elif (refused := self._open_session(frame.resume_token)) is not None:
            self._connection_error(REJECTED_SETUP, refused, events)
        else:
            self._established = True
            self.keepalive_ms, self.lifetime_ms = frame.keepalive, frame.lifetime
            if frame.lease:  # "it MUST send a LEASE frame if the SETUP frame set the L flag"
                self._grant_lease()
            events.append(SetupAccepted(frame))

    def _receive_error(self, frame: Error, events: list[Event]) -> None:
        if frame.stream_id == 0:
            if frame.code in SETUP_ERRORS and (self.role is Role.SERVER or self._established):
                events.append(FrameIgnored("setup-error-ignored", 0))
                return
            self._close(ConnectionClosed(frame.data.decode("utf-8", "replace"), frame.code,
                                         by_peer=True), events)
            return
        if self._streams.pop(frame.stream_id, None) is None:
            events.append(FrameIgnored("error-on-unknown-stream", frame.stream_id))
            return
        events.append(StreamErrorReceived(frame.stream_id, frame.code, frame.data))

    def _receive_request(self, frame, events: list[Event]) -> None:
        sid = frame.stream_id
        stream = self._streams.get(sid)
        if stream is not None:
            events.append(FrameIgnored("stream-in-use", sid))
            return
        kind = {RequestResponse: Kind.RESPONSE, RequestFnf: Kind.FNF, RequestStream: Kind.STREAM,
                RequestChannel: Kind.CHANNEL}[type(frame)]
        if self.role is Role.SERVER and not self._within_lease():
            # "Lease Semantics": a request the lease does not cover is rejected, not processed
            if kind is not Kind.FNF:
                self._send(Error(sid, REJECTED, b"no lease for this request"))
            events.append(FrameIgnored("beyond-lease", sid))
            return
        stream = Stream(kind, local=False)
        self._streams[sid] = stream
        if frame.follows:
            stream.partial = Partial(frame, None if frame.metadata is None
                                      else bytearray(frame.metadata), bytearray(frame.data))
            self._check_partial(sid, stream, events)
            return
        self._deliver_request(sid, stream, frame, frame.metadata, frame.data,
                              getattr(frame, "complete", False), events)

    def _deliver_request(self, sid: int, stream: Stream, first, metadata, data, complete: bool,
                         events: list[Event]) -> None:
        stream.partial = None
        initial_n = getattr(first, "initial_n", 0)
        if stream.kind in (Kind.STREAM, Kind.CHANNEL) and initial_n == 0:
            self._streams.pop(sid, None)
            self._send(Error(sid, INVALID, b"request-n must be > 0"))
            return
        if stream.kind is Kind.FNF:
            self._streams.pop(sid, None)
        else:
            stream.outbound = Credit(initial_n if initial_n else 1)
            # what we receive on this stream: nothing for response/stream; PAYLOADs for channel
            stream.received_done = stream.kind is not Kind.CHANNEL or complete
        events.append(RequestReceived(stream.kind, sid, metadata, data, initial_n, complete))

    def _receive_request_n(self, frame: RequestN, events: list[Event]) -> None:
        stream = self._streams.get(frame.stream_id)
        if stream is None:
            events.append(FrameIgnored("request-n-on-unknown-stream", frame.stream_id))
            return
        if frame.n == 0:
            self._streams.pop(frame.stream_id, None)
            self._send(Error(frame.stream_id, INVALID, b"request-n must be > 0"))
            return
        stream.outbound.add(frame.n)
        events.append(CreditReceived(frame.stream_id, frame.n, stream.outbound.value))

    def _receive_cancel(self, frame: Cancel, events: list[Event]) -> None:
        if self._streams.pop(frame.stream_id, None) is None:
            events.append(FrameIgnored("cancel-on-unknown-stream", frame.stream_id))
            return
        events.append(CancelReceived(frame.stream_id))

    def _receive_payload(self, frame: Payload, events: list[Event]) -> None:
        sid = frame.stream_id
        stream = self._streams.get(sid)
        if stream is None or (stream.received_done and stream.partial is None):
            events.append(FrameIgnored("unexpected-payload", sid))
            return
        partial = stream.partial
        if partial is not None:
            if frame.metadata is not None:
                if partial.data:
                    self._connection_error(CONNECTION_ERROR, "metadata after data in fragments", events)
                    return
                partial.metadata = (partial.metadata or bytearray()) + frame.metadata
            partial.data += frame.data
            if not self._check_partial(sid, stream, events) or frame.follows:
                return
            metadata = None if partial.metadata is None else bytes(partial.metadata)
            if isinstance(partial.first, Payload):
                stream.partial = None
                self._deliver_payload(sid, stream, metadata, bytes(partial.data),
                                      partial.first.next or frame.next,
                                      frame.complete or partial.first.complete, events)
            else:
                self._deliver_request(sid, stream, partial.first, metadata, bytes(partial.data),
                                      frame.complete, events)
            return
        if frame.follows:
            stream.partial = Partial(frame, None if frame.metadata is None
                                      else bytearray(frame.metadata), bytearray(frame.data))
            self._check_partial(sid, stream, events)
            return
        self._deliver_payload(sid, stream, frame.metadata, frame.data, frame.next,
                              frame.complete, events)

    def _check_partial(self, sid: int, stream: Stream, events: list[Event]) -> bool:
        if stream.partial is not None and stream.partial.size > self.max_reassembly:
            self._connection_error(CONNECTION_ERROR, "reassembled message too large", events)
            return False
        return True

    def _deliver_payload(self, sid: int, stream: Stream, metadata, data, next_: bool,
                         complete: bool, events: list[Event]) -> None:
        if stream.kind is Kind.RESPONSE and stream.local:
            complete = True  # Handling the Unexpected: a response PAYLOAD completes the stream
        if next_ and not stream.inbound.take():
            del self._streams[sid]
            self._send(Cancel(sid))
            events.append(PeerViolation(sid, "payload-beyond-credit"))
            return
        events.append(PayloadReceived(sid, metadata, data, next_, complete))
        if complete:
            stream.received_done = True
            if stream.kind is not Kind.CHANNEL:
                stream.sent_done = True
            self._maybe_release(sid)
