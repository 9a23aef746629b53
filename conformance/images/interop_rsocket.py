"""RSocket's case monitor in `conformance interop rsocket`: one
:class:`reference_impl.rsocket.monitor.WireMonitor` per connection, and resumption across them.

A connection whose client opens with RESUME (Protocol.md "Resuming Operation") goes on with the
session of an earlier connection whose SETUP carried the same resume token: its first frame is
RESUME, which its monitor accepts as it accepts SETUP, and after RESUME_OK each side sends again
what the other had not received, frames of streams the earlier connection opened (a PAYLOAD, a
REQUEST_N, a COMPLETE).  Their credit and ends depend on positions this monitor does not keep,
so on the resumed connection the streams the session used before are not judged (the monitor's
``forget``, as for a frame that did not decode); new streams are.  The stream ids each
connection used are noted as its monitor checks each frame, in order, so a RESUME's streams are
forgotten before the replay after it is judged.
"""

from __future__ import annotations

from reference_impl.common.wire_monitor import Side
from reference_impl.rsocket.codec import FrameError, Resume, Setup
from reference_impl.rsocket.monitor import WireMonitor

from conformance.images.interop_protocol import ConnectionMonitors


class _Connection(WireMonitor):
    """One connection's monitor, which also tells the session its token and the stream ids it used."""

    def __init__(self, sessions: "RSocketMonitors") -> None:
        super().__init__()
        self.sessions = sessions
        self.token: bytes | None = None  # the resume token of its SETUP (or RESUME)
        self.streams: set[int] = set()
        self._first = True

    def _check(self, side: Side, frame) -> None:
        if side is Side.CLIENT and self._first:
            self._first = False
            self._opened(frame)
        if getattr(frame, "stream_id", 0):
            self.streams.add(frame.stream_id)
        super()._check(side, frame)

    def _undecoded(self, side: Side, exc: FrameError) -> None:
        if exc.stream_id:
            self.streams.add(exc.stream_id)
        super()._undecoded(side, exc)

    def _opened(self, frame) -> None:
        if isinstance(frame, Setup):
            self.token = frame.resume_token
        elif isinstance(frame, Resume):
            self.token = frame.token
            for earlier in self.sessions.of(frame.token, before=self):
                for stream_id in sorted(earlier.streams):
                    self.forget(stream_id)


class RSocketMonitors(ConnectionMonitors):
    def __init__(self) -> None:
        super().__init__(lambda: _Connection(self))

    def of(self, token: bytes, before: _Connection) -> list[_Connection]:
        """The connections of the session with TOKEN opened before BEFORE."""
        earlier = self.connections[:self.connections.index(before)]
        return [c for c in earlier if c.token is not None and c.token == token]
