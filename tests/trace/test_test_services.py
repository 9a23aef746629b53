"""check-trace --test-services: which captures the rules may judge by the profiles' test services.

A capture `conformance run --pcap` wrote is marked in its pcapng section header (shb_userappl,
pcapng spec section 4.1: option code 4, UTF-8 text); "auto" turns the services on for such a
file only.  The headers below that are not the suite's are written by hand from the pcapng
layout (a plain pcap; a dumpcap-like section header; a big-endian one carrying the marker)."""

from __future__ import annotations

import struct
from itertools import groupby

import dpkt
import pytest

from conformance.cli import main
from conformance.trace import capture, check
from conformance.trace.packets import recorded_target_clients, recorded_waits, written_by_suite
from conformance.trace.spark import _PROBLEM, _check_partition, _connection_of, _segments_of
from tests.trace.pcapfiles import CLIENT, NEGOTIATE, NEGOTIATED, SERVER, data, syns, tcp_frame, write_pcap


def _suite_capture(path, waits=None):
    """A capture as `run --pcap` writes it: one STMP negotiation from the suite (client) to port 9000."""
    recorder = capture.Recorder()
    conn = capture._Conn(CLIENT, SERVER, 10.0, "client")
    conn.events += [(10.1, "client", NEGOTIATE), (10.2, "server", NEGOTIATED), (10.3, "client", "FIN"),
                    (10.4, "server", "FIN")]
    recorder.conns.append(conn)
    capture.write(recorder, path, waits)
    return path


def _option(code: int, value: bytes, order: str) -> bytes:
    return struct.pack(order + "HH", code, len(value)) + value + b"\0" * (-len(value) % 4)


def _pcapng(path, userappl: bytes | None, order: str = "<", comment: bytes | None = None):
    """A pcapng by hand: a section header (with shb_userappl and opt_comment when given), one Ethernet
    interface, and the STMP negotiation's segments as enhanced packet blocks."""
    options = (_option(4, userappl, order) if userappl is not None else b"")
    options += _option(1, comment, order) if comment is not None else b""
    options += _option(0, b"", order) if options else b""
    length = 28 + len(options)
    shb = struct.pack(order + "IIIHHq", 0x0A0D0D0A, length, 0x1A2B3C4D, 1, 0, -1) + options + struct.pack(
        order + "I", length)
    idb = struct.pack(order + "IIHHII", 1, 20, 1, 0, 65535, 20)
    blocks = [shb, idb]
    for i, (src, dst, seq, flags, payload) in enumerate([*syns(), data(CLIENT, 0, NEGOTIATE),
                                                           data(SERVER, 0, NEGOTIATED)]):
        frame = tcp_frame(src, dst, seq, flags, payload)
        ts = (1000 + i) * 1_000_000  # microseconds, the default if_tsresol
        length = 32 + len(frame) + -len(frame) % 4  # type, length, 5 fields, the padded frame, length
        blocks.append(struct.pack(order + "IIIIIII", 6, length, 0, ts >> 32, ts & 0xFFFFFFFF, len(frame), len(frame))
                      + frame + b"\0" * (-len(frame) % 4) + struct.pack(order + "I", length))
    path.write_bytes(b"".join(blocks))
    return path


def test_the_suite_marks_its_captures_in_the_section_header(tmp_path):
    path = _suite_capture(tmp_path / "run.pcapng")
    raw = path.read_bytes()
    # shb_userappl (code 4) with "conformance run --pcap" (22 bytes), right after the SHB's fixed 24 bytes
    assert raw[24:28] == struct.pack("<HH" if raw[8:12] == b"\x4d\x3c\x2b\x1a" else ">HH", 4, 22)
    assert raw[28:50] == b"conformance run --pcap"
    assert written_by_suite(path)
    assert check.services_for(path, "auto") and check.services_for(path, "on")
    assert not check.services_for(path, "off")


def test_other_tools_captures_are_not_the_suites(tmp_path):
    plain = write_pcap(tmp_path / "tcpdump.pcap", [*syns(), data(CLIENT, 0, NEGOTIATE), data(SERVER, 0, NEGOTIATED)])
    dumpcap = _pcapng(tmp_path / "dumpcap.pcapng", b"Dumpcap (Wireshark) 4.2.2 (Git v4.2.2)")
    bare = _pcapng(tmp_path / "bare.pcapng", None)
    lookalike = _pcapng(tmp_path / "prefix.pcapng", b"conformance run --pcap and more")
    garbage = tmp_path / "garbage.pcapng"
    garbage.write_bytes(b"\x0a\x0d\x0d\x0a" + b"\xff" * 20)
    for path in (plain, dumpcap, bare, lookalike, garbage, tmp_path / "missing.pcapng"):
        assert not written_by_suite(path), path.name
        assert not check.services_for(path, "auto") and not check.services_for(path, "off")
    assert check.services_for(plain, "on")
    # the hand-built files are captures the checker reads (so the header above is a real one)
    assert check.check_file(dumpcap, {9000: "stmp"}, None, {}).frames == 2


def test_a_big_endian_section_header_with_the_marker_is_the_suites(tmp_path):
    path = _pcapng(tmp_path / "be.pcapng", b"conformance run --pcap", order=">")
    assert written_by_suite(path)
    assert check.check_file(path, {9000: "stmp"}, None, {}).frames == 2


def test_a_second_section_ends_the_file_with_a_message(tmp_path):
    """Two captures run together (``cat a.pcapng b.pcapng``): another tool's traffic after the suite's
    must not be judged by the suite's section header, nor read with its byte order."""
    suite = _suite_capture(tmp_path / "run.pcapng")
    first = suite.read_bytes()
    for order in ("<", ">"):
        other = _pcapng(tmp_path / f"dumpcap{order}.pcapng", b"Dumpcap (Wireshark) 4.2.2 (Git v4.2.2)", order=order)
        both = tmp_path / "both.pcapng"
        both.write_bytes(first + other.read_bytes())
        result = check.check_file(both, {9000: "stmp"}, None, {})
        assert (result.connections, result.frames) == (1, 2)  # the suite's negotiation only
        assert result.problems == [f"{both}: a second pcapng section begins at byte {len(first)}: only the first "
                                   "is read (split the file, e.g. with editcap, and check each part)"]
        assert check.services_for(both, "auto")  # by the first section, the only one read
        problems = [value for key, value in _segments_of(str(both), both, None) if key[0] == _PROBLEM]
        assert problems == result.problems
    # a file of one section reads to its end, without a message
    assert check.check_file(suite, {9000: "stmp"}, None, {}).problems == []


@pytest.fixture
def made(monkeypatch):
    """The rules objects check-trace makes, to see the services flag they were given."""
    rules: list = []
    real = check.rules_for

    def recording(*args, **kwargs):
        rules.append(real(*args, **kwargs))
        return rules[-1]

    monkeypatch.setattr(check, "rules_for", recording)
    return rules


@pytest.mark.parametrize("mode,suite,plain", [("auto", True, False), ("on", True, True), ("off", False, False)])
def test_the_mode_reaches_the_rules(tmp_path, made, mode, suite, plain):
    run = _suite_capture(tmp_path / "run.pcapng")
    other = write_pcap(tmp_path / "lo.pcap", [*syns(), data(CLIENT, 0, NEGOTIATE), data(SERVER, 0, NEGOTIATED)])
    check.check_file(run, {9000: "stmp"}, None, {}, test_services=mode)
    check.check_file(other, {9000: "stmp"}, None, {}, test_services=mode)
    assert [r.services for r in made] == [suite, plain]
    made.clear()
    assert main(["check-trace", "--port", "9000=stmp", "--test-services", mode, str(run), str(other)]) == 0
    assert [r.services for r in made] == [suite, plain]


def test_auto_is_the_default_of_the_command(tmp_path, made):
    run = _suite_capture(tmp_path / "run.pcapng")
    other = write_pcap(tmp_path / "lo.pcap", [*syns(), data(CLIENT, 0, NEGOTIATE), data(SERVER, 0, NEGOTIATED)])
    assert main(["check-trace", "--port", "9000=stmp", str(run), str(other)]) == 0
    assert [r.services for r in made] == [True, False]
    with pytest.raises(SystemExit):
        main(["check-trace", "--port", "9000=stmp", "--test-services", "maybe", str(run)])


@pytest.mark.parametrize("mode,suite,plain", [("auto", True, False), ("on", True, True), ("off", False, False)])
def test_the_spark_partitions_give_the_rules_the_same_flag(tmp_path, made, mode, suite, plain):
    """The executors' side of --spark without Spark: a file's segments carry its flag into the
    partition's checks (the same services_for as the single process)."""
    run = _suite_capture(tmp_path / "run.pcapng")
    other = write_pcap(tmp_path / "lo.pcap", [*syns(), data(CLIENT, 0, NEGOTIATE), data(SERVER, 0, NEGOTIATED)])
    pairs = sorted([*_segments_of(str(run), run, None, mode), *_segments_of(str(other), other, None, mode)],
                   key=lambda kv: kv[0])
    rows = []
    for _, part in groupby(pairs, key=lambda kv: _connection_of(kv[0])):
        rows += _check_partition(list(part), {9000: "stmp"}, None, {}, "run", "time", None)
    assert sum(r.get("connections", 0) for r in rows) == 2
    assert sorted(r.services for r in made) == sorted([suite, plain])
    assert {path: services for (path, _, _), (*_, services, _header) in pairs} == {
        str(run): suite, str(other): plain}


def test_dpkt_reads_the_marked_capture(tmp_path):
    """The marker is a well-formed section header: dpkt's own reader takes the file."""
    path = _suite_capture(tmp_path / "run.pcapng")
    with path.open("rb") as fh:
        assert len(list(dpkt.pcapng.Reader(fh))) == 3 + 2 + 2  # handshake, two data segments, two FINs


# -- the run's waits, which the rules hold the test services to ------------------------------------

def test_the_run_waits_follow_the_runner():
    """Defaults (conformance/scenario/timing.py, README "Timing"): expect 5000, close 3000, prompt 1000,
    transfer 10000, keep-alive pace 1000.  --time-scale 2 doubles every wait but the keep-alive pace,
    a user's reply_ms (an adapter's wait) too, and leaves a target timer as given."""
    assert capture.run_waits({}) == {"expect_ms": 5000, "close_ms": 3000, "prompt_ms": 1000, "transfer_ms": 10000,
                                     "keepalive_ms": 1000}
    assert capture.run_waits({"expect_ms": 8000, "reply_ms": 2000, "heartbeat_interval_ms": 700}, 2.0) == {
        "expect_ms": 16000, "close_ms": 6000, "prompt_ms": 2000, "transfer_ms": 20000, "keepalive_ms": 1000,
        "reply_ms": 4000, "heartbeat_interval_ms": 700}


def test_a_suite_capture_carries_its_waits(tmp_path):
    waits = {"expect_ms": 16000, "close_ms": 6000}
    path = _suite_capture(tmp_path / "run.pcapng", waits)
    assert written_by_suite(path) and recorded_waits(path) == waits
    assert b'conformance run waits (ms): {"close_ms": 6000, "expect_ms": 16000}' in path.read_bytes()
    assert recorded_waits(_suite_capture(tmp_path / "older.pcapng")) == {}
    with path.open("rb") as fh:  # still a header dpkt reads
        assert len(list(dpkt.pcapng.Reader(fh))) == 7


def test_waits_in_another_tools_capture_are_not_taken(tmp_path):
    """Only the suite's own section header is read for waits: the same comment in a capture another
    tool wrote (or a malformed one in the suite's) gives none."""
    comment = b'conformance run waits (ms): {"expect_ms": 1}'
    other = _pcapng(tmp_path / "other.pcapng", b"Dumpcap (Wireshark) 4.2.2", comment=comment)
    assert comment in other.read_bytes() and recorded_waits(other) == {}
    # the same comment in a hand-written header that does carry the marker is read (the layout is right)
    assert recorded_waits(_pcapng(tmp_path / "marked.pcapng", b"conformance run --pcap", comment=comment)) == {
        "expect_ms": 1}
    for bad in ({"expect_ms": -1}, {"expect_ms": 1.5}, {"expect_ms": True}, ["expect_ms"]):
        path = tmp_path / "bad.pcapng"
        recorder = capture.Recorder()
        recorder.conns.append(capture._Conn(CLIENT, SERVER, 10.0, "client"))
        capture.write(recorder, path, bad)
        assert written_by_suite(path) and recorded_waits(path) == {}, bad


@pytest.mark.parametrize("mode,expect", [("auto", 16000), ("on", 16000), ("off", None)])
def test_the_rules_get_the_run_waits_under_the_users_params(tmp_path, made, mode, expect):
    run = _suite_capture(tmp_path / "run.pcapng", {"expect_ms": 16000, "close_ms": 6000})
    check.check_file(run, {9000: "stmp"}, None, {"close_ms": 4000}, test_services=mode)
    assert made[-1].params.get("expect_ms") == expect
    assert made[-1].params["close_ms"] == 4000  # --param wins over the recorded wait
    made.clear()
    assert main(["check-trace", "--port", "9000=stmp", "--test-services", mode, "--param", "close_ms=4000",
                 str(run)]) == 0
    assert made[-1].params.get("expect_ms") == expect and made[-1].params["close_ms"] == 4000
    made.clear()
    # the executors' side of --spark: the file's waits travel with its segments
    pairs = sorted(_segments_of(str(run), run, None, mode), key=lambda kv: kv[0])
    for _, part in groupby(pairs, key=lambda kv: _connection_of(kv[0])):
        list(_check_partition(list(part), {9000: "stmp"}, None, {"close_ms": 4000}, "run", "time", None))
    assert made[-1].params.get("expect_ms") == expect and made[-1].params["close_ms"] == 4000


def test_run_pcap_records_the_waits(tmp_path):
    """`conformance run --pcap` end to end: the capture holds the run's waits after --time-scale."""
    path = tmp_path / "run.pcapng"
    code = main(["run", "stmp", "--pcap", str(path), "--out", str(tmp_path / "out"), "--time-scale", "2",
                 "--param", "expect_ms=6000", "-k", "negotiation-not-raw"])
    assert code == 0
    assert recorded_waits(path)["expect_ms"] == 12000 and recorded_waits(path)["close_ms"] == 6000


# -- which connections' client was the target (a client-role case: the suite its server) --------------

TARGET_CLIENT = ("127.0.0.1", 40111)  # the target's client, connected to the suite's server on 9000
TARGET_CLIENT_NAME = "127.0.0.1:40111 -> 127.0.0.1:9000"


def _capture_with_a_target_client(path):
    """Two STMP connections to port 9000: the suite's client's (CLIENT), and the target client's."""
    recorder = capture.Recorder()
    for client, suite, t in ((CLIENT, "client", 10.0), (TARGET_CLIENT, "server", 20.0)):
        conn = capture._Conn(client, SERVER, t, suite)
        conn.events += [(t + 0.1, "client", NEGOTIATE), (t + 0.2, "server", NEGOTIATED), (t + 0.3, "client", "FIN"),
                        (t + 0.4, "server", "FIN")]
        recorder.conns.append(conn)
    capture.write(recorder, path)
    return path


def test_a_suite_capture_names_the_connections_whose_client_was_the_target(tmp_path):
    path = _capture_with_a_target_client(tmp_path / "run.pcapng")
    assert b'conformance run target clients: ["127.0.0.1:40111 -> 127.0.0.1:9000"]' in path.read_bytes()
    assert recorded_target_clients(path) == {TARGET_CLIENT_NAME}
    assert recorded_target_clients(_suite_capture(tmp_path / "suite-clients-only.pcapng")) == frozenset()
    # the same comment in another tool's capture is not taken; a malformed one in the suite's gives none
    comment = b'conformance run target clients: ["127.0.0.1:40111 -> 127.0.0.1:9000"]'
    other = _pcapng(tmp_path / "other.pcapng", b"Dumpcap (Wireshark) 4.2.2", comment=comment)
    assert recorded_target_clients(other) == frozenset()
    assert recorded_target_clients(_pcapng(tmp_path / "marked.pcapng", b"conformance run --pcap",
                                           comment=comment)) == {TARGET_CLIENT_NAME}
    for bad in (b'{"a": 1}', b"[1]", b"[not json"):
        marked = _pcapng(tmp_path / "bad.pcapng", b"conformance run --pcap",
                         comment=b"conformance run target clients: " + bad)
        assert recorded_target_clients(marked) == frozenset(), bad


@pytest.mark.parametrize("mode,expect", [("auto", [False, True]), ("on", [False, True]), ("off", [False, False])])
def test_the_rules_know_a_target_client_with_the_services_on(tmp_path, made, mode, expect):
    path = _capture_with_a_target_client(tmp_path / "run.pcapng")
    check.check_file(path, {9000: "stmp"}, None, {}, test_services=mode)
    assert [r.test_client for r in made] == expect
    made.clear()
    # the executors' side of --spark: the file's target clients travel with its segments
    pairs = sorted(_segments_of(str(path), path, None, mode), key=lambda kv: kv[0])
    for _, part in groupby(pairs, key=lambda kv: _connection_of(kv[0])):
        list(_check_partition(list(part), {9000: "stmp"}, None, {}, "run", "time", None))
    assert sorted(r.test_client for r in made) == sorted(expect)
