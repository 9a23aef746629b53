"""The reference RSocket server with one switchable bug, for proving the suite can fail.

Each bug turns one rule of docs/profiles/rsocket.md off in the server's connection (a subclass of
the reference :class:`Connection`, used by this server only); the suite decodes with the codec and
never with a connection, so a bug cannot reach the side doing the grading.  ``bug=None`` is the
correct twin: the reference server itself.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import replace

from reference_impl.rsocket import codec, streams
from reference_impl.rsocket.codec import (
    APPLICATION_ERROR, CONNECTION_ERROR, REJECTED_SETUP, UNSUPPORTED_SETUP, Error, Ext, Keepalive, Payload,
    RequestChannel, RequestFnf, RequestStream, Resume, ResumeOk, Setup,
)
from reference_impl.rsocket.connection import (
    CancelReceived, Connection, ConnectionClosed, FrameIgnored, Kind, RequestReceived, Role,
)
from reference_impl.rsocket.server import RSocketServer, start_server
from reference_impl.rsocket.service import TestService

BUGS = {
    "setup-version-accepted",      # serves a SETUP of any major version
    "setup-zero-timers-accepted",  # accepts a keepalive interval or max lifetime of 0
    "first-frame-served",          # serves a request that arrives before any SETUP
    "second-setup-closes",         # ends the connection on a SETUP after an accepted one
    "credit-wraps",                # adds request-n as a signed 32-bit sum, which wraps past 2^31-1
    "credit-past-grant",           # sends one PAYLOAD more than a stream's initial request-n
    "request-n-zero-accepted",     # a REQUEST_N of 0 is silently ignored instead of an error
    "ignores-cancel",              # CANCEL is a no-op: the stream goes on taking credit
    "cancel-unknown-closes",       # a CANCEL on an unknown stream id is a connection error
    "stream-in-use-replaced",      # a request on an id in use replaces the stream
    "fragments-not-joined",        # serves the first fragment of a request as the whole request
    "keepalive-data-dropped",      # answers KEEPALIVE(R) without echoing its data
    "ignorable-ext-closes",        # ends the connection on an EXT it does not know, even with I set
    "metadata-overrun-ignored",    # drops a frame whose metadata length overruns instead of a connection error
    "app-error-on-stream-zero",    # sends APPLICATION_ERROR on stream 0 instead of the request's stream
    "error-data-latin1",           # encodes error data as Latin-1, not UTF-8 (a SHOULD)
    "routing-ignored",             # routes by the data even when composite metadata carries a route
    "lease-not-sent",              # accepts a SETUP with L but never sends the LEASE
    "ids-never-reused",            # ignores a request on any stream id it has seen before
    "resume-ok-sent-position",     # RESUME_OK carries its own sent position, not the received one
    "resume-no-replay",            # resumes without resending the frames the client missed
    "resume-any-token",            # answers a RESUME with an unknown token RESUME_OK(0), a new session
    "resume-lease-not-restarted",  # resumes a leased session without sending a new LEASE
    # hunt: one-bug variants added by the rsocket hunt
    "fragmented-request-n-lost",   # a fragmented REQUEST_STREAM/CHANNEL gets a credit of 1, not its request-n
    "fragmented-channel-complete-lost",  # a fragmented REQUEST_CHANNEL whose last fragment has C is left open
    "fragmented-fnf-not-joined",   # a fragmented REQUEST_FNF is taken whole from its first fragment
    "resume-position-counts-keepalive",  # counts received KEEPALIVEs in its implied position (RESUME_OK too high)
    "request-on-stream-zero-closes",  # a REQUEST_* on stream 0 is a connection error instead of being dropped
    "channel-next-complete-item-dropped",  # a channel PAYLOAD with N and C is taken as the completion alone
    # mutation hunt: bugs no case caught before
    "extra-complete-after-last",   # a stream's last item carries C, and then a second COMPLETE follows
    "cancel-keeps-id-in-use",      # a cancelled stream stops, but its id stays in use: a new request on it is ignored
    "channel-initial-n-zero-accepted",  # the n > 0 check covers REQUEST_STREAM only: a channel opens with n = 0
    "rejected-setup-from-client-closes",  # ERROR[UNSUPPORTED_SETUP|REJECTED_SETUP] from the client closes the connection
    "second-setup-resets-streams",  # a second SETUP is dropped, but the streams open before it are forgotten
    "mime-non-ascii-accepted",     # a SETUP MIME type that is not ASCII is read as Latin-1 and accepted (a SHOULD)
}

_WRAP = 1 << 32


class BuggyConnection(Connection):
    def __init__(self, bug: str | None, *args, **kwargs) -> None:
        self.bug = bug
        super().__init__(*args, **kwargs)

    def _receive_first(self, frame, events) -> None:
        if isinstance(frame, Setup) and self.bug == "setup-version-accepted":
            frame = replace(frame, major=1)
        if isinstance(frame, Setup) and self.bug == "setup-zero-timers-accepted":
            frame = replace(frame, keepalive=frame.keepalive or 30000, lifetime=frame.lifetime or 90000)
        if not isinstance(frame, (Setup, Resume)) and self.bug == "first-frame-served":
            self._established = True
            self._receive(frame, None, events)
            return
        super()._receive_first(frame, events)

    @contextmanager
    def _latin1_mime(self):
        """mime-non-ascii-accepted: this connection's decoding reads MIME types as Latin-1 (decoding is
        synchronous, so the codec is patched only while this connection's bytes are read)."""
        if self.bug != "mime-non-ascii-accepted":
            yield
            return
        original = codec._Reader.mime
        codec._Reader.mime = lambda r, what: r.take(r.uint(1, f"{what} length"), what).decode("latin-1")
        try:
            yield
        finally:
            codec._Reader.mime = original

    def receive_data(self, data, now=None):
        with self._latin1_mime():
            return super().receive_data(data, now)

    def receive_message(self, message, now=None):
        with self._latin1_mime():
            return super().receive_message(message, now)

    def _receive(self, frame, now, events) -> None:
        if self._established:
            if isinstance(frame, Setup) and self.bug == "second-setup-closes":
                self._connection_error(CONNECTION_ERROR, "second SETUP", events)
                return
            if isinstance(frame, Setup) and self.bug == "second-setup-resets-streams":
                self._streams.clear()
                if self.app is not None:
                    self.app._ranges.clear()
                    self.app._channels.clear()
                events.append(FrameIgnored("unexpected-setup", 0))
                return
            if isinstance(frame, Keepalive) and frame.respond and self.bug == "keepalive-data-dropped":
                self._send(Keepalive(False, 0, b""))
                return
            if isinstance(frame, Ext) and self.bug == "ignorable-ext-closes":
                self._connection_error(CONNECTION_ERROR, "unknown extension", events)
                return
        super()._receive(frame, now, events)

    def _receive_resume(self, frame, events) -> None:
        if self.bug == "resume-any-token" and self.sessions is not None and frame.token not in self.sessions:
            self._established = True
            self._send(ResumeOk(0))
            return
        super()._receive_resume(frame, events)

    def resume(self, frame, now):
        lease = self._lease_left
        if self.bug == "resume-lease-not-restarted":
            self._lease_left = None  # the old lease goes on, and no LEASE is sent
        refused = super().resume(frame, now)
        self._lease_left = lease if self._lease_left is None else self._lease_left
        if refused is None and self.bug == "resume-ok-sent-position":
            self._out[0] = self._out[0][:-8] + self.sent_position.to_bytes(8, "big")
        if refused is None and self.bug == "resume-no-replay":
            del self._out[1:]
        return refused

    def _count(self, frame, length) -> None:
        super()._count(frame, length)
        if (isinstance(frame, Keepalive) and self.bug == "resume-position-counts-keepalive"
                and self._retained is not None and not self._resuming):
            self.received_position += length

    def _grant_lease(self) -> None:
        if self.bug == "lease-not-sent":
            self._lease_left, self._lease_until = self.lease_requests, float("inf")  # served, never said
            return
        super()._grant_lease()

    def _frame_error(self, exc, events) -> bool:
        if (exc.code == "stream-id-zero" and exc.frame_type in (0x04, 0x05, 0x06, 0x07)
                and self._established and self.bug == "request-on-stream-zero-closes"):
            self._connection_error(CONNECTION_ERROR, "request on stream 0", events)
            return False
        if exc.code == "metadata-length-overrun" and self.bug == "metadata-overrun-ignored":
            events.append(FrameIgnored(exc.code, exc.stream_id))
            return True
        return super()._frame_error(exc, events)

    def _receive_request(self, frame, events) -> None:
        if self.bug == "ids-never-reused":
            seen = self.__dict__.setdefault("_seen_ids", set())
            if frame.stream_id in seen:
                events.append(FrameIgnored("id-seen-before", frame.stream_id))
                return
            seen.add(frame.stream_id)
        if self.bug == "stream-in-use-replaced":
            self._streams.pop(frame.stream_id, None)
        if isinstance(frame, RequestFnf) and frame.follows and self.bug == "fragmented-fnf-not-joined":
            frame = replace(frame, follows=False)
        if frame.follows and self.bug == "fragments-not-joined":
            frame = replace(frame, follows=False)
        super()._receive_request(frame, events)

    def _deliver_request(self, sid, stream, first, metadata, data, complete, events) -> None:
        if (stream.kind is Kind.CHANNEL and getattr(first, "initial_n", 1) == 0
                and self.bug == "channel-initial-n-zero-accepted"):
            stream.partial = None
            stream.outbound = streams.Credit(0)
            stream.received_done = complete
            events.append(RequestReceived(stream.kind, sid, metadata, data, 0, complete))
            return
        fragmented = getattr(first, "follows", False)
        if (fragmented and isinstance(first, (RequestStream, RequestChannel))
                and self.bug == "fragmented-request-n-lost"):
            first = replace(first, initial_n=1)  # the credit read from the last fragment, not the first
        if fragmented and isinstance(first, RequestChannel) and self.bug == "fragmented-channel-complete-lost":
            complete = first.complete  # C read from the first fragment only
        super()._deliver_request(sid, stream, first, metadata, data, complete, events)
        if self.bug == "credit-past-grant" and stream.kind is Kind.STREAM and sid in self._streams:
            stream.outbound.add(1)

    def _deliver_payload(self, sid, stream, metadata, data, next_, complete, events) -> None:
        if (next_ and complete and stream.kind is Kind.CHANNEL
                and self.bug == "channel-next-complete-item-dropped"):
            next_, metadata, data = False, None, b""  # onComplete without the onNext before it
        super()._deliver_payload(sid, stream, metadata, data, next_, complete, events)

    def _receive_error(self, frame, events) -> None:
        if (frame.stream_id == 0 and frame.code in (UNSUPPORTED_SETUP, REJECTED_SETUP)
                and self.bug == "rejected-setup-from-client-closes"):
            self._close(ConnectionClosed("peer error", frame.code, by_peer=True), events)
            return
        super()._receive_error(frame, events)

    def send_payload(self, stream_id, data, metadata=None, *, complete=False) -> None:
        stream = self._streams.get(stream_id)
        kind = stream.kind if stream is not None else None
        super().send_payload(stream_id, data, metadata, complete=complete)
        if complete and kind is Kind.STREAM and self.bug == "extra-complete-after-last":
            self._send(Payload(stream_id, complete=True))

    def request_n(self, stream_id, n) -> None:
        if n == 0 and self.bug == "channel-initial-n-zero-accepted":
            return  # the channel's zero credit, passed through, sends nothing
        super().request_n(stream_id, n)

    def _receive_request_n(self, frame, events) -> None:
        stream = self._streams.get(frame.stream_id)
        if frame.n == 0 and self.bug == "request-n-zero-accepted":
            events.append(FrameIgnored("request-n-zero", frame.stream_id))
            return
        if stream is not None and self.bug == "credit-wraps":
            total = (stream.outbound.value + frame.n) % _WRAP
            stream.outbound.value = total - _WRAP if total >= 1 << 31 else total
            return
        super()._receive_request_n(frame, events)

    def credit(self, stream_id: int) -> int | None:
        value = super().credit(stream_id)
        return value if value is None else max(value, 0)  # a wrapped (negative) credit stalls the stream

    def _receive_cancel(self, frame, events) -> None:
        if frame.stream_id in self._streams and self.bug == "cancel-keeps-id-in-use":
            stream = self._streams[frame.stream_id]
            stream.outbound = streams.Credit(0)
            stream.sent_done = True
            stream.received_done = False  # never released: the id stays in use
            events.append(CancelReceived(frame.stream_id))
            return
        if self.bug == "ignores-cancel":
            events.append(FrameIgnored("cancel-ignored", frame.stream_id))
            return
        if frame.stream_id not in self._streams and self.bug == "cancel-unknown-closes":
            self._connection_error(CONNECTION_ERROR, "cancel of an unknown stream", events)
            return
        super()._receive_cancel(frame, events)

    def send_error(self, stream_id: int, code: int, message: str = "") -> None:
        if code == APPLICATION_ERROR and self.bug == "app-error-on-stream-zero":
            self._send(Error(0, code, message.encode("utf-8")))
            self._streams.pop(stream_id, None)
            return
        if self.bug == "error-data-latin1":
            self._send(Error(stream_id, code, message.encode("latin-1", "replace")))
            self._streams.pop(stream_id, None)
            return
        super().send_error(stream_id, code, message)


class _DataRoutedService(TestService):
    """The test service that never reads a routing entry."""

    def _request(self, req) -> None:
        self._composite = False
        super()._request(req)


async def start_buggy_server(bug: str | None, transport: str = "tcp") -> RSocketServer:
    if bug is not None and bug not in BUGS:
        raise ValueError(f"unknown bug {bug!r}")
    server = await start_server("127.0.0.1", 0, transport=transport)
    if bug is None:
        return server

    def connection() -> Connection:
        conn = BuggyConnection(bug, Role.SERVER, server.transport, now=time.monotonic(),
                               sessions=server.sessions, **server.options)
        service = _DataRoutedService if bug == "routing-ignored" else TestService
        conn.app = service(conn, server.shared)
        return conn

    server._connection = connection  # this server's connections only
    return server
