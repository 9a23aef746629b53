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
from conformance.trace.packets import written_by_suite
from conformance.trace.spark import _check_partition, _connection_of, _segments_of
from tests.trace.pcapfiles import CLIENT, NEGOTIATE, NEGOTIATED, SERVER, data, syns, tcp_frame, write_pcap


def _suite_capture(path):
    """A capture as `run --pcap` writes it: one STMP negotiation from the suite (client) to port 9000."""
    recorder = capture.Recorder()
    conn = capture._Conn(CLIENT, SERVER, 10.0, "client")
    conn.events += [(10.1, "client", NEGOTIATE), (10.2, "server", NEGOTIATED), (10.3, "client", "FIN"),
                    (10.4, "server", "FIN")]
    recorder.conns.append(conn)
    capture.write(recorder, path)
    return path


def _option(code: int, value: bytes, order: str) -> bytes:
    return struct.pack(order + "HH", code, len(value)) + value + b"\0" * (-len(value) % 4)


def _pcapng(path, userappl: bytes | None, order: str = "<"):
    """A pcapng by hand: a section header (with shb_userappl when given), one Ethernet interface,
    and the STMP negotiation's segments as enhanced packet blocks."""
    options = (_option(4, userappl, order) if userappl is not None else b"")
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
    assert {path: services for (path, _, _), (*_, services) in pairs} == {str(run): suite, str(other): plain}


def test_dpkt_reads_the_marked_capture(tmp_path):
    """The marker is a well-formed section header: dpkt's own reader takes the file."""
    path = _suite_capture(tmp_path / "run.pcapng")
    with path.open("rb") as fh:
        assert len(list(dpkt.pcapng.Reader(fh))) == 3 + 2 + 2  # handshake, two data segments, two FINs
