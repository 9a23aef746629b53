"""Resumption, sans-IO ("Resuming Operation" of Protocol.md, docs/profiles/rsocket.md).

:class:`RetainedFrames` is one direction's implied position and the sent frames kept for replay;
:class:`SessionStore` is the server's resumable sessions by token; :class:`Resumption` is the
connection's part (RESUME, RESUME_OK, the replay), which
:class:`~reference_impl.rsocket.connection.Connection` is built from.  The state is bounded:

* a session keeps at most ``max_bytes`` of sent frames; the peer's KEEPALIVE position trims
  what it has received.  Past the cap the frames are dropped and the session can no longer be
  resumed (a RESUME then gets ERROR[REJECTED_RESUME]): memory stays bounded and a resume never
  silently loses frames;
* the store holds at most ``max_sessions`` sessions, and a session whose transport is gone is
  kept ``keep_ms`` (the "Client Lifetime Management" extension), then forgotten.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

from reference_impl.common.errors import ProtocolViolation
from reference_impl.rsocket import codec
from reference_impl.rsocket.codec import (
    CANCEL, CONNECTION_ERROR, ERROR, PAYLOAD, REJECTED_RESUME, REQUEST_CHANNEL, REQUEST_FNF, REQUEST_N,
    REQUEST_RESPONSE, REQUEST_STREAM, Error, Resume, ResumeOk,
)
from reference_impl.rsocket.events import ConnectionClosed, Event, FrameIgnored, Resumed, Role

#: "REQUEST_RESPONSE, REQUEST_FNF, REQUEST_STREAM, REQUEST_CHANNEL, REQUEST_N, CANCEL, ERROR, or
#: PAYLOAD": the frame types that have an implied position ("Implied Position")
POSITIONED = frozenset({REQUEST_RESPONSE, REQUEST_FNF, REQUEST_STREAM, REQUEST_CHANNEL, REQUEST_N,
                        CANCEL, ERROR, PAYLOAD})
DEFAULT_MAX_BYTES = 1 << 20
DEFAULT_KEEP_MS = 60_000
DEFAULT_MAX_SESSIONS = 256


def positioned(frame: bytes) -> bool:
    """Whether an encoded frame (no length prefix) counts toward the implied position."""
    return len(frame) >= 6 and frame[4] >> 2 in POSITIONED


class RetainedFrames:
    """The sent side: the position so far and the frames a resume may have to send again."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self.position = 0  # past the last positioned frame sent
        self.first = 0  # the earliest position still retained
        self.overflowed = False
        self._frames: deque[tuple[int, bytes]] = deque()  # (start position, encoded frame)
        self._size = 0

    def add(self, frame: bytes) -> None:
        start, self.position = self.position, self.position + len(frame)
        if self.overflowed:
            return
        self._frames.append((start, frame))
        self._size += len(frame)
        if self._size > self.max_bytes:  # bounded memory: give up resumability, never a frame
            self.overflowed = True
            self._frames.clear()
            self._size = 0

    def trim(self, received: int) -> None:
        """The peer has every frame before ``received`` (its KEEPALIVE position)."""
        while self._frames and self._frames[0][0] + len(self._frames[0][1]) <= received:
            start, frame = self._frames.popleft()
            self._size -= len(frame)
            self.first = start + len(frame)

    def since(self, position: int) -> list[bytes] | None:
        """The frames from ``position`` on, or None when they cannot all be sent again."""
        if self.overflowed or not self.first <= position <= self.position:
            return None
        out = [frame for start, frame in self._frames if start >= position]
        if sum(map(len, out)) != self.position - position:  # the position is inside a frame
            return None
        return out


@dataclass
class _Entry:
    session: Any  # what the server resumes (its connection and service)
    attached: bool
    detached_at: float = 0.0


class SessionStore:
    """Server side: resumable sessions by resume token, bounded in number and in time."""

    def __init__(self, *, keep_ms: int = DEFAULT_KEEP_MS, max_sessions: int = DEFAULT_MAX_SESSIONS) -> None:
        self.keep_ms = keep_ms
        self.max_sessions = max_sessions
        self._entries: dict[bytes, _Entry] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, token: bytes) -> bool:
        return token in self._entries

    def open(self, token: bytes, session: Any, now: float) -> str | None:
        """Register a new session; the reason it cannot be, or None.

        "A server should not accept a SETUP with a Token that is currently already being used":
        a token held by a live connection is refused; one whose transport is gone is taken over
        (the old session is dropped), so a client that lost its session may start again."""
        self.expire(now)
        entry = self._entries.get(token)
        if entry is not None and entry.attached:
            return "resume token already in use"
        if entry is None and len(self._entries) >= self.max_sessions:
            return "too many resumable sessions"
        self._entries[token] = _Entry(session, attached=True)
        return None

    def detach(self, token: bytes, session: Any, now: float) -> None:
        entry = self._entries.get(token)
        if entry is not None and entry.session is session:
            entry.attached, entry.detached_at = False, now

    def claim(self, token: bytes, now: float) -> Any | None:
        """The session a RESUME names (attached again), or None when there is none."""
        self.expire(now)
        entry = self._entries.get(token)
        if entry is None:
            return None
        entry.attached = True
        return entry.session

    def drop(self, token: bytes, session: Any) -> None:
        entry = self._entries.get(token)
        if entry is not None and entry.session is session:
            del self._entries[token]

    def expire(self, now: float) -> None:
        for token in [t for t, e in self._entries.items()
                      if not e.attached and (now - e.detached_at) * 1000 > self.keep_ms]:
            del self._entries[token]


class Resumption:
    """The connection's part of "Resuming Operation", both roles; a mixin of ``Connection``.

    Server side, when the server gives a :class:`SessionStore`: a SETUP with R registers the
    session by its token; every positioned frame sent is kept (:class:`RetainedFrames`) and every
    one received advances the implied position; a lost transport leaves the session in the store.
    A RESUME naming it, with positions it can serve, gets RESUME_OK (our received position) and
    the frames sent from the client's last received position on, and the session goes on over the
    new transport (:class:`Resumed`); anything else gets ERROR[REJECTED_RESUME] and a close.
    Without a store a SETUP with R gets ERROR[REJECTED_SETUP] (the spec's words) and a RESUME
    ERROR[REJECTED_RESUME].  Client side: ``setup(resume_token=...)`` counts positions and keeps
    sent frames the same way; after :meth:`connection_lost` the session waits,
    :meth:`start_resume` sends the RESUME on a new transport, RESUME_OK resends the frames past
    its position (:class:`Resumed`), and ERROR[REJECTED_RESUME] closes.  The asyncio client
    (client.py) reconnects and resumes with it.

    A mixin and not a collaborator object, because resuming is an operation on the whole
    connection rather than state beside it: a resume replaces the connection's decoder and send
    buffer, resets its clocks, writes to its buffer directly and restarts its lease, and the
    connection's sending, reading and closing each keep a position or the stored session up to
    date.  A collaborator would need a reference back to nearly all of the connection; as a mixin
    the state it keeps is the connection's own, and ``resume``, ``start_resume``,
    ``connection_lost``, the positions and ``epoch`` stay methods and attributes of
    ``Connection``, where the server, the client, the tests and the selftest's buggy subclass and
    patches reach them.

    What it uses of the connection: ``role``, ``_closed``, ``_established``, ``_now``,
    ``_last_received``, ``_decoder``, ``_out``, ``_send``, ``_out_raw``, ``_close``,
    ``_connection_error``, and for a server resume its lease (``_restart_lease``, lease.py).
    """

    def _init_resumption(self, sessions: SessionStore | None, resume_bytes: int) -> None:
        # the server's store (None: not offered), the token, the sent frames kept for replay
        # with our sent position, and the implied position of what we received
        self.sessions, self.resume_bytes = sessions, resume_bytes
        self.resume_token: bytes | None = None
        self._retained: RetainedFrames | None = None
        self.received_position = 0
        self.epoch = 0  # bumped by each resume: a transport serving an older epoch lets go
        self._handed_over = False  # this connection's RESUME took over a stored session
        self._resuming = False  # client: RESUME sent, RESUME_OK not yet received

    # ------------------------------------------------------------------ positions

    @property
    def sent_position(self) -> int:
        return 0 if self._retained is None else self._retained.position

    def _track(self, token: bytes) -> None:
        self.resume_token = token
        self._retained = RetainedFrames(self.resume_bytes)

    def _retain(self, encoded: bytes) -> None:
        """A frame being sent: kept for a replay, where positions are tracked."""
        if self._retained is not None and positioned(encoded):
            self._retained.add(encoded)

    def _count(self, frame: codec.Frame, length: int) -> None:
        """The implied position of what we received ("Implied Position")."""
        if (self._retained is not None and not self._resuming
                and codec.FRAME_TYPES[type(frame)] in POSITIONED):
            self.received_position += length

    def _keepalive_position(self) -> int:
        """"Keepalive frames include the implied position": only where it is tracked (else 0)."""
        return self.received_position if self._retained is not None else 0

    def _peer_received(self, position: int) -> None:
        """A KEEPALIVE's position: the peer has everything before it."""
        if self._retained is not None:
            self._retained.trim(position)

    # ------------------------------------------------------------------ sessions

    def _open_session(self, token: bytes | None) -> str | None:
        """Server side, a SETUP: register its session when it has a resume token (R); the
        reason it cannot be, or None."""
        if token is None:
            return None
        if self.sessions is None:
            # "...does not support resuming operation, MUST reject the SETUP with an ERROR[REJECTED_SETUP]"
            return "resume not supported"
        refused = self.sessions.open(token, self, self._now)
        if refused is None:
            self._track(token)
        return refused

    def _forget_session(self) -> None:
        """The connection is closing: its session can no longer be resumed."""
        if self.sessions is not None and self.resume_token is not None:
            self.sessions.drop(self.resume_token, self)

    def take_buffered(self) -> bytes:
        """TCP bytes received but not decoded: after a :class:`Resumed`, the session's."""
        return self._decoder.take_buffered()

    # ------------------------------------------------------------------ a lost transport; the client resuming

    def connection_lost(self) -> list[Event]:
        """The transport is gone.  A resumable server session stays in the store, streams and
        all, for a RESUME to take over; anything else is closed."""
        events: list[Event] = []
        if self._retained is not None and not self._closed and not self._retained.overflowed:
            if self.sessions is not None:
                self.sessions.detach(self.resume_token, self, self._now)
                return events
            if self.role is Role.CLIENT and self._established:
                return events  # waits for start_resume()
        self._close(ConnectionClosed("transport closed", by_peer=True), events)
        return events

    def start_resume(self, now: float) -> None:
        """Client side, on a new transport after :meth:`connection_lost`: send the RESUME
        ("Resume Operation": the SETUP's token, the last position received from the server,
        the first position we can send again)."""
        if self.role is not Role.CLIENT or self._retained is None or self._closed:
            raise ProtocolViolation("not-resumable")
        self._decoder = codec.TcpDecoder(self._decoder.max_frame)
        self._out.clear()
        self._last_received = self._now = now
        self._resuming = True
        self._send(Resume(1, 0, self.resume_token, self.received_position, self._retained.first))

    def _receive_while_resuming(self, frame: codec.Frame, events: list[Event]) -> None:
        """Client side, RESUME sent: only RESUME_OK or an ERROR on stream 0 is an answer."""
        if isinstance(frame, ResumeOk):
            self._receive_resume_ok(frame, events)
        elif isinstance(frame, Error) and frame.stream_id == 0:
            # "On receiving an ERROR[REJECTED_RESUME] frame, the client MUST NOT attempt resumption again."
            self._close(ConnectionClosed(frame.data.decode("utf-8", "replace"), frame.code,
                                         by_peer=True), events)
        else:
            events.append(FrameIgnored("before-resume-ok", frame.stream_id))

    def _receive_resume_ok(self, frame: ResumeOk, events: list[Event]) -> None:
        """Client side: resend every frame past the server's position, or give up."""
        replay = self._retained.since(frame.last_received_client_position)
        self._resuming = False
        if replay is None:
            # "MAY send an ERROR[CONNECTION_ERROR|CONNECTION_CLOSE] ... and MUST NOT attempt resumption again"
            self._connection_error(CONNECTION_ERROR, "cannot resend from "
                                   f"{frame.last_received_client_position}", events)
            return
        self._retained.trim(frame.last_received_client_position)
        for encoded in replay:
            self._out_raw(encoded)
        events.append(Resumed(self))

    # ------------------------------------------------------------------ server side

    def _receive_resume(self, frame: Resume, events: list[Event]) -> None:
        """A RESUME as the first frame ("Resume Operation", server side): all errors are
        REJECTED_RESUME, and whatever refuses a resume also ends the stored session."""
        if self.sessions is None:
            self._connection_error(REJECTED_RESUME, "resume not supported", events)
            return
        session = self.sessions.claim(frame.token, self._now)
        if session is None:
            self._connection_error(REJECTED_RESUME, "unknown resume token", events)
            return
        if frame.major != 1:
            refused: str | None = f"version {frame.major}.{frame.minor} not supported"
        else:
            refused = session.resume(frame, self._now)
        if refused is not None:
            session._close(ConnectionClosed(refused, REJECTED_RESUME))
            self._connection_error(REJECTED_RESUME, refused, events)
            return
        self._handed_over = True
        events.append(Resumed(session))

    def resume(self, frame: Resume, now: float) -> str | None:
        """Server side: take ``frame`` (a RESUME naming this session) over a new transport.
        Queues RESUME_OK and the replay; the reason it cannot resume, or None."""
        if self._retained is None or self._closed:
            return "session not resumable"
        replay = self._retained.since(frame.last_received_server_position)
        if replay is None:
            return (f"cannot resend from server position {frame.last_received_server_position} "
                    f"(kept {self._retained.first}..{self._retained.position})")
        if frame.first_available_client_position > self.received_position:
            return (f"client keeps frames from {frame.first_available_client_position} only, "
                    f"received up to {self.received_position}")
        self._retained.trim(frame.last_received_server_position)
        self.epoch += 1
        self._decoder = codec.TcpDecoder(self._decoder.max_frame)
        self._out.clear()  # never written, or written to the lost transport: the replay covers it
        self._last_received = self._now = now
        self._out_raw(codec.encode_frame(ResumeOk(self.received_position)))
        for encoded in replay:  # sent again, at the positions they already have
            self._out_raw(encoded)
        self._restart_lease()
        return None
