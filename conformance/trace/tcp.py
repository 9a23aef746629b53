"""TCP reassembly per connection and direction, streaming into a sink.

Each direction's bytes reach the sink once, in order, whatever the capture did to them:
segments out of order wait for the bytes before them, retransmissions and overlapping segments
give only their new bytes (the first copy of a byte wins).  Bytes that never show up (lost by
the capture, cut by its snap length, or sent before the capture started) make the rest of that
direction "not checkable": the sink gets a gap with the reason and no more bytes of that
direction, so a missing piece never reads as a protocol violation.

The sink sees both directions interleaved in the order the capture delivered them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from conformance.trace.packets import Segment

CLIENT, SERVER = "client", "server"  # who sent the bytes: the connecting side, the listening side
_MOD = 1 << 32
_MAX_PENDING = 64 * 1024 * 1024  # out-of-order bytes one direction may hold before we give up on it


class Sink(Protocol):
    def data(self, sender: str, ts: float, offset: int, data: bytes) -> None: ...
    def gap(self, sender: str, offset: int, reason: str) -> None: ...
    def end(self, sender: str, ts: float, how: str) -> None: ...  # how: "FIN" or "RST"
    def abort(self, sender: str, ts: float) -> None: ...  # an RST after the sender's FIN


@dataclass
class _Direction:
    sender: str
    isn: int | None = None
    next_off: int = 0
    pending: dict[int, tuple[float, bytes, int]] = field(default_factory=dict)  # offset -> (ts, bytes, cut)
    pending_bytes: int = 0
    broken: bool = False  # a gap was reported: nothing more is delivered
    ended: bool = False


class Connection:
    """One TCP connection (one 4-tuple, from one SYN), reassembled into ``sink``."""

    def __init__(self, client: tuple[str, int], server: tuple[str, int], sink: Sink, *, saw_syn: bool) -> None:
        self.client, self.server, self.sink = client, server, sink
        self.saw_syn = saw_syn
        self.dirs = {CLIENT: _Direction(CLIENT), SERVER: _Direction(SERVER)}
        self.closed = False
        if not saw_syn:
            for d in self.dirs.values():
                self._break(d, 0, "the capture starts in the middle of this connection (no SYN): "
                                  "where its frames begin is unknown")

    @property
    def name(self) -> str:
        return f"{self.client[0]}:{self.client[1]} -> {self.server[0]}:{self.server[1]}"

    def feed(self, seg: Segment) -> None:
        d = self.dirs[CLIENT if seg.src == self.client else SERVER]
        if seg.syn:
            d.isn = seg.seq
            return
        if d.ended and seg.rst and not d.broken and not self.closed:
            # an RST after the side's FIN: when it gave up on a peer still open (and the connection's end)
            self.sink.abort(d.sender, seg.ts)
            self.closed = True
            return
        if d.broken or d.ended and not seg.payload:
            return
        if d.isn is None:
            # the handshake's SYN of this side was not captured: its offsets are unknown
            self._break(d, 0, "the SYN of this direction is not in the capture: where its bytes begin is unknown")
            return
        off = (seg.seq - d.isn - 1) % _MOD
        if seg.payload or seg.missing:
            self._add(d, seg.ts, off, seg.payload, seg.missing)
        if seg.rst or seg.fin:
            if seg.fin and off + len(seg.payload) + seg.missing > d.next_off and not d.broken:
                return  # a FIN after bytes not yet seen: held until they arrive (see finish)
            if not d.ended:
                d.ended = True
                self.sink.end(d.sender, seg.ts, "RST" if seg.rst else "FIN")
            if seg.rst or all(x.ended or x.broken for x in self.dirs.values()):
                self.closed = True

    def _add(self, d: _Direction, ts: float, off: int, payload: bytes, cut: int) -> None:
        if off + len(payload) + cut <= d.next_off:
            return  # a retransmission of bytes delivered already
        if off in d.pending and len(d.pending[off][1]) + d.pending[off][2] >= len(payload) + cut:
            return  # a retransmission of bytes held already
        if off in d.pending:
            d.pending_bytes -= len(d.pending[off][1])
        d.pending[off] = (ts, payload, cut)
        d.pending_bytes += len(payload)
        self._drain(d)
        if d.pending_bytes > _MAX_PENDING and not d.broken:
            self._break(d, d.next_off, f"more than {_MAX_PENDING} bytes arrived after a hole at offset "
                                       f"{d.next_off} that the capture never filled")

    def _drain(self, d: _Direction) -> None:
        while d.pending and not d.broken:
            off = min(d.pending)
            if off > d.next_off:
                return
            ts, payload, cut = d.pending.pop(off)
            d.pending_bytes -= len(payload)
            skip = d.next_off - off  # the part an earlier copy delivered already (overlap)
            fresh = payload[skip:] if skip < len(payload) else b""
            if fresh:
                self.sink.data(d.sender, ts, d.next_off, fresh)
                d.next_off += len(fresh)
            if cut and off + len(payload) + cut > d.next_off:
                self._break(d, d.next_off, f"the capture's snap length cut a segment here: {cut} bytes "
                                           "of it are not in the file")

    def _break(self, d: _Direction, offset: int, reason: str) -> None:
        d.broken = True
        d.pending.clear()
        d.pending_bytes = 0
        self.sink.gap(d.sender, offset, reason)

    def finish(self) -> None:
        """The capture ended: bytes still waiting behind a hole are reported as a gap."""
        for d in self.dirs.values():
            if d.pending and not d.broken:
                missing = min(d.pending) - d.next_off
                self._break(d, d.next_off, f"{missing} bytes at offset {d.next_off} are not in the capture "
                                           "(lost before it was written)")


_DONE = object()  # a closed connection's 4-tuple: its late segments (a last ACK) open nothing


class Reassembler:
    """Segments in capture order -> connections, each streaming into the sink ``open_sink`` gives
    it (None: a connection nobody checks).  A connection that closed is finished at once and
    handed to ``done``, so memory follows the open connections, not the capture."""

    def __init__(self, open_sink, done=lambda conn: None) -> None:
        self.open_sink = open_sink
        self.done = done
        self.live: dict[frozenset, object] = {}
        self.connections: list[Connection] = []  # open ones

    def feed(self, seg: Segment) -> None:
        key = frozenset((seg.src, seg.dst))
        conn = self.live.get(key, False)
        opening = seg.syn and not seg.flags & 0x10  # SYN without ACK: a client opens a connection
        if conn is _DONE:
            if not opening:
                return
            conn = False
        if opening and conn is not False and conn is not None:
            if conn.dirs[CLIENT].isn == seg.seq and conn.client == seg.src:
                return  # a retransmitted SYN
            self._close(key, conn)  # the 4-tuple is reused by a new connection
            conn = False
        if conn is False:
            client, server = (seg.src, seg.dst) if opening else _guess_roles(seg, self.open_sink)
            if seg.syn and seg.flags & 0x10:  # a SYN-ACK first: its sender is the server
                client, server = seg.dst, seg.src
            sink = self.open_sink(client, server)
            conn = None
            if sink is not None:
                conn = Connection(client, server, sink, saw_syn=seg.syn)
                self.connections.append(conn)
            self.live[key] = conn
        if conn is not None:
            conn.feed(seg)
            if conn.closed:
                self._close(key, conn)

    def _close(self, key, conn: Connection) -> None:
        conn.finish()
        self.connections.remove(conn)
        self.live[key] = _DONE
        self.done(conn)

    def finish(self) -> None:
        for conn in list(self.connections):
            conn.finish()
            self.done(conn)
        self.connections = []


def _guess_roles(seg: Segment, open_sink) -> tuple[tuple[str, int], tuple[str, int]]:
    """Without a SYN: the side on a port the port map names is the server."""
    known = getattr(open_sink, "server_ports", set())
    if seg.src[1] in known and seg.dst[1] not in known:
        return seg.dst, seg.src
    return seg.src, seg.dst
