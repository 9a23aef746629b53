"""`conformance run --pcap FILE`: the suite's own traffic as a pcapng capture.

While a recorder is active, every channel of the suite (conformance.channels) reports what
it sends and receives, with the same monotonic clock as the wire log, and how it ends; its
close first reads what the peer still sends (DRAIN_S), for the capture only.  At the
end of the run each connection is written as real TCP/IP over its own loopback addresses and
ports: handshake, data segments (at most ``MSS`` bytes each) with sequence and
acknowledgement numbers, FIN or RST.  The file opens in Wireshark, and `conformance
check-trace` reads it like any capture (tests/trace check both with reference and one-bug
targets).  The CURVE session keys generated in this process while recording (the suite's, and
an in-process reference implementation's) go to a key log beside the capture, FILE.keys
(conformance/trace/keylog.py), which `check-trace --keylog` uses to open mc0's boxes.

This module is imported by the channels on every run, so it needs nothing beyond the stdlib
until a capture is written (dpkt, the 'trace' extra).
"""

from __future__ import annotations

import itertools
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

MSS = 65000 - 40  # a loopback MTU leaves room for about this much per segment
# A channel's close while recording goes on reading what the peer still sends (its answer to the
# suite's last frame, its FIN), as tcpdump would see it, until the peer ends, for at most DRAIN_S
# and DRAIN_BYTES.  An answer on loopback takes milliseconds and most peers end as soon as the
# suite's FIN reaches them (a `run all --pcap` against the reference implementations on a loaded
# 2-core machine: no drain reached the deadline, the longest took about 0.2 s), yet a peer that
# keeps its side open costs a --pcap run no more than 0.3 s per connection.
DRAIN_S = 0.3
DRAIN_BYTES = 1 << 20
#: the pcapng section header's shb_userappl (the "Application" Wireshark shows) of a capture this module
#: writes: `check-trace --test-services auto` reads it as "the traffic of a conformance run", whose
#: peers were asked only for what the profiles' test services promise (packets.written_by_suite)
USERAPPL = "conformance run --pcap"
COMMENT = ("the traffic of a conformance run: the test services of docs/profiles hold for it "
           "(check-trace --test-services auto)")
#: a second section-header comment: this text, then the run's waits in ms as a JSON object
#: (packets.recorded_waits), which check-trace holds the test services to
WAITS_COMMENT = "conformance run waits (ms): "
#: a third: this text, then the connections whose client was the target (a client-role case, the
#: suite its server) as a JSON list of names as findings give them (packets.recorded_target_clients)
TARGET_CLIENTS_COMMENT = "conformance run target clients: "
_ACTIVE: "Recorder | None" = None
last: "Recorder | None" = None  # the recorder stop() ended: which side the suite was, per connection


@dataclass
class _Conn:
    client: tuple[str, int]
    server: tuple[str, int]
    opened: float
    suite: str  # the suite's side of the connection: "client" or "server"
    events: list[tuple[float, str, bytes | str]] = field(default_factory=list)  # (t, "client"/"server", data or "FIN"/"RST")


class Recorder:
    def __init__(self) -> None:
        self.conns: list[_Conn] = []
        self.keys = None  # the keylog.Collector of CURVE session keys, while recording
        # the wire log's clock is time.monotonic(); a capture wants wall-clock time
        self.wall_offset = time.time() - time.monotonic()


class Tap:
    """One channel's view of its connection; ``suite`` is the role the suite has on it."""

    def __init__(self, conn: _Conn, suite: str) -> None:
        self.conn, self.suite = conn, suite
        self.peer = "server" if suite == "client" else "client"

    def sent(self, data: bytes) -> None:
        self.conn.events.append((time.monotonic(), self.suite, bytes(data)))

    def received(self, data: bytes) -> None:
        self.conn.events.append((time.monotonic(), self.peer, bytes(data)))

    def ended(self, by_suite: bool, how: str = "FIN") -> None:
        side = self.suite if by_suite else self.peer
        if not any(e[1] == side and isinstance(e[2], str) for e in self.conn.events):
            self.conn.events.append((time.monotonic(), side, how))

    def aborted(self) -> None:
        """The suite's RST after its own FIN (channels.TcpChannel._reset), as the wire has it."""
        self.conn.events.append((time.monotonic(), self.suite, "RST"))


def start() -> Recorder:
    global _ACTIVE
    from conformance.trace.keylog import Collector
    _ACTIVE = Recorder()
    _ACTIVE.keys = Collector()
    return _ACTIVE


def stop() -> Recorder | None:
    global _ACTIVE, last
    recorder, _ACTIVE = _ACTIVE, None
    if recorder is not None and recorder.keys is not None:
        recorder.keys.close()
    last = recorder
    return recorder


def target_sides(recorder: Recorder) -> dict[str, str]:
    """Connection name (as findings name it) -> the side the target had on it."""
    return {f"{c.client[0]}:{c.client[1]} -> {c.server[0]}:{c.server[1]}": "server" if c.suite == "client" else "client"
            for c in recorder.conns}


class WsTap(Tap):
    """A WebSocket channel's view: the upgrade as it was (the handshake's own request and
    response), then each message re-framed as one frame (client frames masked, RFC 6455 5.3):
    the channel sees messages, not the frames that carried them."""

    def __init__(self, conn: _Conn, suite: str, ws) -> None:
        super().__init__(conn, suite)
        request, response = getattr(ws, "request", None), getattr(ws, "response", None)
        if request is not None and response is not None:
            t = time.monotonic()
            conn.events.append((t, "client", request.serialize()))
            conn.events.append((t, "server", response.serialize()))

    def _frame(self, side: str, data: bytes | str) -> bytes:
        from websockets.frames import Frame, Opcode
        opcode = Opcode.TEXT if isinstance(data, str) else Opcode.BINARY
        payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
        return Frame(opcode, payload).serialize(mask=side == "client")

    def sent(self, data: bytes | str) -> None:
        super().sent(self._frame(self.suite, data))

    def received(self, data: bytes | str) -> None:
        super().received(self._frame(self.peer, data))


def tap_ws(ws, suite: str) -> Tap | None:
    """A tap for a WebSocket channel on ``ws`` (a websockets connection), or None when not recording."""
    return _tap(ws.local_address, ws.remote_address, suite, lambda conn: WsTap(conn, suite, ws))


def tap(writer, suite: str) -> Tap | None:
    """A tap for a channel on ``writer`` (an asyncio StreamWriter), or None when not recording."""
    if _ACTIVE is None:
        return None
    return _tap(writer.get_extra_info("sockname"), writer.get_extra_info("peername"), suite,
                lambda conn: Tap(conn, suite))


def _tap(local, peer, suite: str, make) -> Tap | None:
    if _ACTIVE is None or not local or not peer:
        return None
    local, peer = (local[0], local[1]), (peer[0], peer[1])
    client, server = (local, peer) if suite == "client" else (peer, local)
    conn = _Conn(client, server, time.monotonic(), suite)
    _ACTIVE.conns.append(conn)
    return make(conn)


def session_keys(recorder: Recorder) -> list:
    return recorder.keys.keys if recorder.keys is not None else []


def write(recorder: Recorder, path: Path, waits: dict[str, int] | None = None) -> int:
    """Write every recorded connection to ``path`` (pcapng), and the CURVE session keys, if any,
    to keylog.beside(path); returns the number of packets.  ``waits``: the run's waits in ms
    (run_waits), recorded in the section header."""
    import dpkt

    from conformance.trace import keylog

    packets: list[tuple[float, bytes]] = []
    isn = itertools.count(1000, 1_000_000)
    for conn in recorder.conns:
        packets += _packets(conn, next(isn), next(isn), recorder.wall_offset)
    packets.sort(key=lambda p: p[0])  # stable: one connection's packets keep their order
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as fh:
        clients = sorted(name for name, side in target_sides(recorder).items() if side == "client")
        writer = dpkt.pcapng.Writer(fh, snaplen=262144, linktype=dpkt.pcap.DLT_EN10MB,
                                    shb=_section_header(waits, clients))
        for ts, frame in packets:
            writer.writepkt(frame, ts=ts)
    if session_keys(recorder):
        keylog.write(session_keys(recorder), keylog.beside(path))
    else:  # an earlier run's key log beside this capture would be read as this one's
        keylog.beside(path).unlink(missing_ok=True)
    return len(packets)


def _section_header(waits: dict[str, int] | None = None, target_clients: list[str] | None = None):
    """The section header block, marked as this module's (USERAPPL, COMMENT, the waits and the
    connections whose client was the target), in the byte order dpkt's Writer insists on (the
    machine's)."""
    import sys

    from dpkt import pcapng

    little = sys.byteorder == "little"
    block, option = ((pcapng.SectionHeaderBlockLE, pcapng.PcapngOptionLE) if little
                     else (pcapng.SectionHeaderBlock, pcapng.PcapngOption))
    return block(opts=[option(code=pcapng.PCAPNG_OPT_SHB_USERAPPL, data=USERAPPL.encode()),
                       option(code=pcapng.PCAPNG_OPT_COMMENT, text=COMMENT),
                       *([option(code=pcapng.PCAPNG_OPT_COMMENT, text=WAITS_COMMENT + json.dumps(waits, sort_keys=True))]
                         if waits is not None else []),
                       *([option(code=pcapng.PCAPNG_OPT_COMMENT, text=TARGET_CLIENTS_COMMENT + json.dumps(target_clients))]
                         if target_clients is not None else []),
                       option(code=pcapng.PCAPNG_OPT_ENDOFOPT)])


def run_waits(params: dict[str, int], time_scale: float = 1.0) -> dict[str, int]:
    """The waits a run gave the target, as its runner reads them: each of the suite's waits
    (the user's value, else the default) and each adapter wait the user set, times --time-scale;
    the other --param values (the target's timers) as given."""
    from conformance.scenario.timing import ADAPTER_WAITS, SUITE_WAITS, UNSCALED_WAITS

    waits = {**SUITE_WAITS, **params}
    return {name: value if name in UNSCALED_WAITS or name not in SUITE_WAITS and name not in ADAPTER_WAITS
            else round(value * time_scale) for name, value in waits.items()}


def _packets(conn: _Conn, client_isn: int, server_isn: int, offset: float) -> list[tuple[float, bytes]]:
    import dpkt

    seq = {"client": client_isn, "server": server_isn}
    addr = {"client": conn.client, "server": conn.server}
    out: list[tuple[float, bytes]] = []

    def segment(t: float, side: str, flags: int, payload: bytes = b"") -> None:
        peer = "server" if side == "client" else "client"
        tcp = dpkt.tcp.TCP(sport=addr[side][1], dport=addr[peer][1], seq=seq[side] % (1 << 32),
                           ack=seq[peer] % (1 << 32) if flags != dpkt.tcp.TH_SYN else 0,
                           flags=flags, win=65535, data=payload)
        out.append((t + offset, _frame(addr[side][0], addr[peer][0], tcp)))
        seq[side] += len(payload) + (1 if flags & (dpkt.tcp.TH_SYN | dpkt.tcp.TH_FIN) else 0)

    t0 = conn.opened
    segment(t0, "client", dpkt.tcp.TH_SYN)
    segment(t0, "server", dpkt.tcp.TH_SYN | dpkt.tcp.TH_ACK)
    segment(t0, "client", dpkt.tcp.TH_ACK)
    for t, side, data in conn.events:
        if data == "FIN":
            segment(t, side, dpkt.tcp.TH_FIN | dpkt.tcp.TH_ACK)
        elif data == "RST":
            segment(t, side, dpkt.tcp.TH_RST | dpkt.tcp.TH_ACK)
        else:
            for at in range(0, len(data), MSS):
                segment(t, side, dpkt.tcp.TH_PUSH | dpkt.tcp.TH_ACK, data[at:at + MSS])
    return out


def _frame(src: str, dst: str, tcp) -> bytes:
    import socket

    import dpkt

    if ":" in src:
        ip = dpkt.ip6.IP6(src=socket.inet_pton(socket.AF_INET6, src), dst=socket.inet_pton(socket.AF_INET6, dst),
                          nxt=dpkt.ip.IP_PROTO_TCP, hlim=64, data=tcp, plen=len(bytes(tcp)))
        kind = dpkt.ethernet.ETH_TYPE_IP6
    else:
        ip = dpkt.ip.IP(src=socket.inet_aton(src), dst=socket.inet_aton(dst), p=dpkt.ip.IP_PROTO_TCP, ttl=64, data=tcp)
        ip.len = 20 + len(bytes(tcp))
        kind = dpkt.ethernet.ETH_TYPE_IP
    eth = dpkt.ethernet.Ethernet(src=b"\x00" * 6, dst=b"\x00" * 6, type=kind, data=ip)
    return bytes(eth)
