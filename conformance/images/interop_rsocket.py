"""RSocket's case monitor in `conformance interop rsocket`: one
:class:`reference_impl.rsocket.monitor.WireMonitor` per connection, and resumption across them.

A connection whose client opens with RESUME (Protocol.md "Resuming Operation") goes on with the
session of an earlier connection whose SETUP carried the same resume token: its first frame is
RESUME, which its monitor accepts as it accepts SETUP, and after RESUME_OK each side sends again
what the other had not received, frames of streams the earlier connection opened (a PAYLOAD, a
REQUEST_N, a COMPLETE).  Their credit and ends depend on positions this monitor does not keep,
so on the resumed connection the streams the session used before are not judged (the monitor's
``forget``, as for a frame that did not decode); new streams are.  The stream ids each
connection used are read with a second decoder of the codec, before the monitor sees the bytes,
so a RESUME and the replay in one read are told apart in time.
"""

from __future__ import annotations

from reference_impl.common.wire_monitor import Side
from reference_impl.rsocket.codec import FrameError, Resume, Setup, TcpDecoder
from reference_impl.rsocket.monitor import WireMonitor

from conformance.images.interop_protocol import ConnectionMonitors

_UNFRAMEABLE = frozenset({"frame-too-large", "frame-too-short"})


class _Connection:
    """One connection's monitor, and what it tells the session: its token, the stream ids it used."""

    def __init__(self, sessions: "RSocketMonitors") -> None:
        self.monitor = WireMonitor()
        self.sessions = sessions
        self.token: bytes | None = None  # the resume token of its SETUP (or RESUME)
        self.streams: set[int] = set()
        self._decoders = {Side.CLIENT: TcpDecoder(), Side.SERVER: TcpDecoder()}
        self._first = True

    def feed(self, side: Side, data: bytes):
        decoder = self._decoders.get(side)
        if decoder is not None:
            decoder.feed(data)
        while decoder is not None:
            try:
                frame = decoder.next_frame()
            except FrameError as exc:
                if exc.stream_id:
                    self.streams.add(exc.stream_id)
                if exc.code in _UNFRAMEABLE:  # no frame boundary after a bad length: the monitor says so
                    del self._decoders[side]
                    break
                continue
            if frame is None:
                break
            if side is Side.CLIENT and self._first:
                self._first = False
                self._opened(frame)
            if getattr(frame, "stream_id", 0):
                self.streams.add(frame.stream_id)
        return self.monitor.feed(side, data)

    def _opened(self, frame) -> None:
        if isinstance(frame, Setup):
            self.token = frame.resume_token
        elif isinstance(frame, Resume):
            self.token = frame.token
            for earlier in self.sessions.of(frame.token, before=self):
                for stream_id in sorted(earlier.streams):
                    self.monitor.forget(stream_id)

    @property
    def violations(self):
        return self.monitor.violations

    @property
    def frames(self) -> int:
        return self.monitor.frames


class RSocketMonitors(ConnectionMonitors):
    def __init__(self) -> None:
        super().__init__(lambda: _Connection(self))

    def of(self, token: bytes, before: _Connection) -> list[_Connection]:
        """The connections of the session with TOKEN opened before BEFORE."""
        earlier = self.connections[:self.connections.index(before)]
        return [c for c in earlier if c.token is not None and c.token == token]
