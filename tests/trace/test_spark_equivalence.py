"""check-trace --spark gives the same findings and notes as the single-process checker on the
same captures (several files, connections of one file spread over partitions)."""

from __future__ import annotations

import json
import shutil

import pytest

from conformance.cli import main
from tests.trace import rsocket_frames as rs
from tests.trace.pcapfiles import (CLIENT, ECHO, ECHOED, NEGOTIATE, NEGOTIATED, SERVER, WRONG_ID, conversation, data,
                                   syns, write_pcap)

pytest.importorskip("pyspark")
pytestmark = pytest.mark.slow


def _key(record):
    return (record["capture"], record["connection"], record["case"], record["grade"], record["message"],
            record.get("byteOffset"), record.get("frameIndex"))


def test_spark_and_single_process_agree(tmp_path, capsys):
    if shutil.which("java") is None:
        pytest.skip("no Java runtime for Spark")
    captures = [
        write_pcap(tmp_path / "ok.pcap", [*syns(), data(CLIENT, 0, NEGOTIATE), data(SERVER, 0, NEGOTIATED),
                                          data(CLIENT, 12, ECHO), data(SERVER, 9, ECHOED)]),
        write_pcap(tmp_path / "wrong.pcap", [*syns(), data(CLIENT, 0, NEGOTIATE), data(SERVER, 0, NEGOTIATED),
                                             data(CLIENT, 12, ECHO), data(SERVER, 9, WRONG_ID)]),
        write_pcap(tmp_path / "gap.pcap", [*syns(), data(CLIENT, 0, NEGOTIATE), data(SERVER, 9, WRONG_ID)]),
    ]
    # a file with many connections, so that one file's flows land in several partitions
    many = []
    for n in range(12):
        client = ("127.0.0.1", 41000 + n)
        flip = {CLIENT: client, SERVER: SERVER}
        reply = WRONG_ID if n % 3 == 0 else ECHOED
        for src, dst, seq, flags, payload in [*syns(), data(CLIENT, 0, NEGOTIATE), data(SERVER, 0, NEGOTIATED),
                                              data(CLIENT, 12, ECHO), data(SERVER, 9, reply)]:
            many.append((flip[src], flip[dst], seq, flags, payload))
    captures.append(write_pcap(tmp_path / "many.pcap", many))
    # an RSocket session set up in one file and resumed in another: the server answered the
    # 17-byte REQUEST_STREAM, yet its RESUME_OK says 14 (a finding only across connections)
    rsocket = ("127.0.0.1", 7878)
    captures.append(write_pcap(tmp_path / "setup.pcap", conversation(("127.0.0.1", 42001), rsocket, [
        ("client", rs.setup() + rs.REQUEST_STREAM), ("server", rs.payload(b"0")), ("server", rs.payload(b"1"))])))
    captures.append(write_pcap(tmp_path / "resume.pcap", conversation(("127.0.0.1", 42002), rsocket, [
        ("client", rs.resume(14)), ("server", rs.resume_ok(14))])))
    garbage = tmp_path / "garbage.pcap"
    garbage.write_bytes(b"not a capture")
    files = [str(p) for p in captures] + [str(garbage)]

    single = tmp_path / "single.jsonl"
    ports = ["--port", "9000=stmp", "--port", "7878=rsocket"]
    assert main(["check-trace", *ports, *files, "--records", str(single)]) == 1
    out = tmp_path / "spark"
    assert main(["check-trace", "--spark", "--master", "local[2]", *ports, *files, "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"{garbage}: not a pcap or pcapng capture" in err

    expected = sorted(_key(json.loads(line)) for line in single.read_text().splitlines())
    got = sorted(_key(json.loads(line)) for line in (out / "records.jsonl").read_text().splitlines())
    assert got == expected
    # wrong.pcap, every third connection of many.pcap, and the resumed session
    assert sum(k[3] == "FAILED" for k in got) == 1 + 4 + 1
    assert [k[:3] for k in got if "resume-ok" in k[2]] == [(str(tmp_path / "resume.pcap"),
                                                             "127.0.0.1:42002 -> 127.0.0.1:7878",
                                                             "rsocket/passive/rsocket-resume-ok-position")]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["connections"] == 17
    assert summary["implementations"] == {"127.0.0.1:9000": {"FAILED": 5, "INFORMATIONAL": 1},
                                          "127.0.0.1:7878": {"FAILED": 1}}


def test_spark_and_single_process_agree_on_mc0_with_a_key_log(tmp_path, capsys):
    """--keylog reaches the executors: the boxes open there as in one process (the second answer
    to ID 7 is a finding in both, and no connection is left 'not checkable')."""
    if shutil.which("java") is None:
        pytest.skip("no Java runtime for Spark")
    from tests.trace import curvesession as cs
    from tests.trace.test_keylog import _keylog, _session
    captures = [str(_session(tmp_path, name=f"curve{n}.pcap")) for n in range(2)]
    keylog = str(_keylog(tmp_path, cs.key_line("SERVER", cs.S_T, cs.SERVER_T_SECRET)))

    single = tmp_path / "single.jsonl"
    assert main(["check-trace", "--port", "9000=mc0", *captures, "--keylog", keylog, "--records", str(single)]) == 1
    out = tmp_path / "spark"
    assert main(["check-trace", "--spark", "--master", "local[2]", "--port", "9000=mc0", *captures,
                 "--keylog", keylog, "--out", str(out)]) == 1
    capsys.readouterr()
    expected = sorted(_key(json.loads(line)) for line in single.read_text().splitlines())
    got = sorted(_key(json.loads(line)) for line in (out / "records.jsonl").read_text().splitlines())
    assert got == expected
    assert [k[2:4] for k in got] == [("mc0/passive/mc0-id-reply", "FAILED")] * 2


@pytest.mark.parametrize("mode", ["auto", "on", "off"])
def test_spark_and_single_process_agree_on_the_test_services(tmp_path, capsys, mode):
    """--test-services reaches the executors, and auto reads each file's header there as the single
    process does: rsio's test/fixed/2/3 answered with a third element, once as the suite writes it
    (run --pcap) and once as a plain pcap."""
    if shutil.which("java") is None:
        pytest.skip("no Java runtime for Spark")
    from tests.trace import test_rsio_services as rsio
    moves = [("client", rsio.CLIENT_HELLO), ("server", rsio.SERVER_HELLO), ("client", rsio.SUB_FIXED),
             ("server", rsio.SUBSCRIBED_FIXED), ("server", rsio.PACKED_0_1), ("server", rsio.ELEMENT_2)]
    suite = rsio._suite_capture(tmp_path / "run.pcapng", moves)
    plain = write_pcap(tmp_path / "tcpdump.pcap", conversation(rsio.CLIENT, rsio.SERVER, moves))
    files = [str(suite), str(plain)]
    single = tmp_path / "single.jsonl"
    ports = ["--port", "7000=rsio", "--test-services", mode]
    wanted = {"auto": [str(suite)], "on": [str(suite), str(plain)], "off": []}[mode]
    status = 1 if wanted else 0
    assert main(["check-trace", *ports, *files, "--records", str(single)]) == status
    out = tmp_path / "spark"
    assert main(["check-trace", "--spark", "--master", "local[2]", *ports, *files, "--out", str(out)]) == status
    capsys.readouterr()
    expected = sorted(_key(json.loads(line)) for line in single.read_text().splitlines())
    got = sorted(_key(json.loads(line)) for line in (out / "records.jsonl").read_text().splitlines())
    assert got == expected
    assert [k[0] for k in got if k[2] == "rsio/passive/rsio-fixed-size"] == sorted(wanted)
