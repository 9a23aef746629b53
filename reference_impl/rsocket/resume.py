"""Resumption state, sans-IO ("Resuming Operation" of Protocol.md, docs/profiles/rsocket.md).

:class:`RetainedFrames` is one direction's implied position and the sent frames kept for replay;
:class:`SessionStore` is the server's resumable sessions by token.  Both are bounded:

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

from reference_impl.rsocket.codec import (
    CANCEL, ERROR, PAYLOAD, REQUEST_CHANNEL, REQUEST_FNF, REQUEST_N, REQUEST_RESPONSE, REQUEST_STREAM,
)

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
