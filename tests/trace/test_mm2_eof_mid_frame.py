"""A Micromessage2 stream that ends inside a frame, judged from a capture (rules/micromessage2.py,
on_abort): docs/profiles/micromessage2.md, "A stream that ends mid-frame: close", within the
`close_ms` the case `truncated-frame-then-eof` waits (3000 ms unless the run set it).  The client's
FIN alone shows no time passing; its RST when it gives up (the suite's abortive close of a
connection it half-closed, conformance/channels.py) does.  Hand-written captures: a hello is major,
minor, flags (0), identity-len, identity, then the two u16 BE list lengths and lists."""

from __future__ import annotations

import dpkt

from conformance.trace.check import check_file
from tests.trace.pcapfiles import conversation, write_pcap

CLIENT, SERVER = ("127.0.0.1", 40400), ("127.0.0.1", 7300)
HELLO = bytes.fromhex("01 00 00 04 68756c6b 0000 0000")  # identity "hulk", no extensions
CUT_SEND = bytes.fromhex("00 0001 09 746573742f65")  # the case's SEND, cut inside its destination
MOVES = [("client", HELLO), ("server", HELLO), ("client", HELLO), ("client", CUT_SEND)]


def _server_findings(tmp_path, ends, params=None, moves=MOVES):
    """Findings against the server: ``moves`` a millisecond apart, then ``ends``: (seconds after the
    previous packet, side, "FIN" or "RST") in order."""
    segments = conversation(CLIENT, SERVER, moves, fin=False)
    offset = {side: sum(len(p) for s, p in moves if s == side) for side in ("client", "server")}
    isn, addr = {"client": 100, "server": 5100}, {"client": CLIENT, "server": SERVER}
    times, t = [1000.0 + i / 1000 for i in range(len(segments))], 1000.0 + len(segments) / 1000
    for gap, side, how in ends:
        peer = "server" if side == "client" else "client"
        flag = dpkt.tcp.TH_FIN if how == "FIN" else dpkt.tcp.TH_RST
        segments.append((addr[side], addr[peer], isn[side] + 1 + offset[side], dpkt.tcp.TH_ACK | flag, b""))
        offset[side] += how == "FIN"
        t += gap
        times.append(t)
    path = write_pcap(tmp_path / "mm2.pcap", segments, times=times)
    result = check_file(path, {SERVER[1]: "micromessage2"}, None, params or {})
    assert result.problems == []
    return [f.requirement for f in result.findings if f.sender == "server"]


def test_a_server_still_open_a_close_window_after_the_fin_inside_a_frame(tmp_path):
    assert _server_findings(tmp_path, [(0.001, "client", "FIN"), (3.3, "client", "RST")]) == ["mm2-payload-length"]


def test_the_window_is_the_runs_close_ms(tmp_path):
    ends = [(0.001, "client", "FIN"), (2.9, "client", "RST")]
    assert _server_findings(tmp_path, ends) == []
    assert _server_findings(tmp_path, ends, {"close_ms": 2000}) == ["mm2-payload-length"]


def test_a_server_that_closed_or_a_client_that_reset_at_once_owes_nothing(tmp_path):
    assert _server_findings(tmp_path, [(0.001, "client", "FIN"), (0.01, "server", "FIN"),
                                       (3.3, "client", "RST")]) == []
    assert _server_findings(tmp_path, [(0.001, "client", "FIN"), (0.5, "server", "RST")]) == []
    assert _server_findings(tmp_path, [(0.001, "client", "RST")]) == []


def test_a_fin_between_frames_then_a_late_rst_is_not_this_rule(tmp_path):
    ends = [(0.001, "client", "FIN"), (3.3, "client", "RST")]
    assert _server_findings(tmp_path, ends, moves=MOVES[:-1]) == []
