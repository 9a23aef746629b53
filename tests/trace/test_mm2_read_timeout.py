"""Micromessage2's read timeout judged from a conformance run's capture (rules/micromessage2.py):
docs/profiles/micromessage2.md, "A frame stalled mid-way past the receiver's read timeout (5 s unless
configured): ERROR + disconnect", and the stalled-frame cases wait read_timeout_ms + 3000 for that
ERROR.  Hand-written captures: a hello is major, minor, flags (0), identity-len, identity, then the
two u16 BE list lengths and lists; an ERROR frame is flags 4, a one-byte length, the reason."""

from __future__ import annotations

import dpkt

from conformance.trace.check import check_file
from tests.trace.pcapfiles import conversation, write_pcap

CLIENT, SERVER = ("127.0.0.1", 40300), ("127.0.0.1", 7200)
STALLED_HELLO = bytes.fromhex("01 00 00 04 6875")  # a 4-byte identity announced, "hu" sent (the case's bytes)
HELLO = bytes.fromhex("01 00 00 04 68756c6b 0000 0000")  # identity "hulk", no extensions
ERROR = bytes([4, 7]) + b"timeout"
# a MESSAGE cut after its destination: flags 0, seq 1, destination "test/echo", then nothing
STALLED_MESSAGE = bytes([0, 0, 1, 9]) + b"test/echo"


def _server_findings(tmp_path, moves, gaps, services="on", params=None, closes=("client", "server")):
    """Findings against the server: ``moves`` a millisecond apart but for ``gaps`` (move index -> seconds
    before it), then the FINs of ``closes``, the first ``gaps["fin"]`` s after the last move."""
    segments = conversation(CLIENT, SERVER, moves, fin=False)
    offset = {side: sum(len(p) for s, p in moves if s == side) for side in ("client", "server")}
    isn, ends = {"client": 100, "server": 5100}, {"client": CLIENT, "server": SERVER}
    for side in closes:
        peer = "server" if side == "client" else "client"
        segments.append((ends[side], ends[peer], isn[side] + 1 + offset[side], dpkt.tcp.TH_ACK | dpkt.tcp.TH_FIN, b""))
    times, t = [1000.0, 1000.0005], 1000.001
    for i in range(len(moves)):
        t += gaps.get(i, 0.001)
        times.append(t)
    for i in range(len(closes)):
        t += gaps["fin"] if i == 0 else 0.001
        times.append(t)
    path = write_pcap(tmp_path / "mm2.pcap", segments, times=times)
    result = check_file(path, {SERVER[1]: "micromessage2"}, None, params or {}, test_services=services)
    assert result.problems == []
    return [f.requirement for f in result.findings if f.sender == "server"]


def test_a_hello_stalled_past_the_read_timeout_and_the_allowance_unanswered(tmp_path):
    # 5 s read timeout unless the run set one, and the case's 3 s: the client closes 8 s after its bytes
    moves = [("client", STALLED_HELLO)]
    assert _server_findings(tmp_path, moves, {"fin": 8.001}) == ["mm2-identity"]
    assert _server_findings(tmp_path, moves, {"fin": 8.001}, services="off") == []
    assert _server_findings(tmp_path, moves, {"fin": 7.9}) == []


def test_a_frame_stalled_after_the_handshake_is_the_payload_length(tmp_path):
    moves = [("client", HELLO), ("server", HELLO), ("client", HELLO), ("client", STALLED_MESSAGE)]
    assert _server_findings(tmp_path, moves, {"fin": 8.5}) == ["mm2-payload-length"]


def test_the_servers_error_in_time_or_its_close_owes_nothing(tmp_path):
    moves = [("client", STALLED_HELLO), ("server", ERROR)]
    assert _server_findings(tmp_path, moves, {1: 5.0, "fin": 3.5}) == []
    # the ERROR came, but 8.2 s after the client's last bytes: past what the case waits
    assert _server_findings(tmp_path, moves, {1: 8.2, "fin": 0.1}) == ["mm2-identity"]
    # the server closed first (at its read timeout, without ERROR: a close is judged elsewhere)
    assert _server_findings(tmp_path, [("client", STALLED_HELLO)], {"fin": 9.0}, closes=("server", "client")) == []


def test_the_runs_read_timeout_and_time_scale_set_the_window(tmp_path):
    moves = [("client", STALLED_HELLO)]
    # a target run with --param read_timeout_ms=1000: the case waited 4 s
    assert _server_findings(tmp_path, moves, {"fin": 4.001}, params={"read_timeout_ms": 1000}) == ["mm2-identity"]
    assert _server_findings(tmp_path, moves, {"fin": 3.9}, params={"read_timeout_ms": 1000}) == []
    # --time-scale 2 (the recorded expect_ms doubled): the case waited (5 + 3) * 2 s
    assert _server_findings(tmp_path, moves, {"fin": 15.9}, params={"expect_ms": 10000}) == []
    assert _server_findings(tmp_path, moves, {"fin": 16.001}, params={"expect_ms": 10000}) == ["mm2-identity"]


def test_bytes_that_finish_the_frame_late_are_not_judged_here(tmp_path):
    # the hello completed 9 s later: no frame is left stalled at the close
    moves = [("client", STALLED_HELLO), ("client", HELLO[6:])]
    assert _server_findings(tmp_path, moves, {1: 9.0, "fin": 0.1}) == []
