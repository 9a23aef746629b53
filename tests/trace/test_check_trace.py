"""check-trace on hand-built captures: reassembly, findings, and bad input.

Expected bytes and findings come from the STMP profile (hand-computed frames in pcapfiles.py),
not from the checker's own output."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import dpkt
import pytest

from conformance.cli import main
from conformance.trace.check import check_file
from tests.trace.pcapfiles import (CLIENT, ECHO, ECHOED, NEGOTIATE, NEGOTIATED, SERVER, WRONG_ID, data, syns,
                                   write_pcap)

FIN = dpkt.tcp.TH_FIN | dpkt.tcp.TH_ACK


def check(path: Path):
    return check_file(path, {9000: "stmp"}, None, {})


def conversation():
    return [*syns(), data(CLIENT, 0, NEGOTIATE), data(SERVER, 0, NEGOTIATED), data(CLIENT, 12, ECHO),
            data(SERVER, 9, ECHOED)]


def test_a_conformant_conversation_has_no_finding(tmp_path):
    result = check(write_pcap(tmp_path / "ok.pcap", conversation()))
    assert (result.findings, result.notes, result.problems) == ([], [], [])
    assert result.frames == 4


def test_out_of_order_retransmitted_and_overlapping_segments_reassemble(tmp_path):
    neg = NEGOTIATE
    segments = [*syns(),
                data(CLIENT, 5, neg[5:]),  # the second half first
                data(CLIENT, 0, neg[:7]),  # then the first, overlapping the second by two bytes
                data(CLIENT, 0, neg[:7]),  # retransmitted
                data(SERVER, 0, NEGOTIATED), data(CLIENT, 12, ECHO[:4]), data(CLIENT, 12, ECHO),  # a longer retransmission
                data(SERVER, 9, ECHOED)]
    result = check(write_pcap(tmp_path / "shuffled.pcap", segments))
    assert (result.findings, result.notes) == ([], [])
    assert result.frames == 4


def test_a_wrong_reply_id_is_a_finding_with_place_and_requirement(tmp_path):
    segments = [*conversation()[:-1], data(SERVER, 9, WRONG_ID)]
    result = check(write_pcap(tmp_path / "wrong.pcap", segments))
    assert len(result.findings) == 1
    finding = result.findings[0]
    assert (finding.requirement, finding.level, finding.sender) == ("stmp-reply-id", "MUST", "server")
    assert (finding.frame, finding.offset) == (1, 9)  # the server's second frame, after its 9-byte Ok
    assert finding.connection == "127.0.0.1:40000 -> 127.0.0.1:9000"


def test_a_gap_makes_the_rest_not_checkable_never_a_finding(tmp_path):
    # the server's first frame is lost: its stream starts at offset 12 with a (wrong-ID) reply
    segments = [*syns(), data(CLIENT, 0, NEGOTIATE), data(CLIENT, 12, ECHO), data(SERVER, 9, WRONG_ID)]
    result = check(write_pcap(tmp_path / "gap.pcap", segments))
    assert result.findings == []
    assert [(n.sender, n.offset) for n in result.notes] == [("server", 0)]
    assert "9 bytes at offset 0 are not in the capture" in result.notes[0].reason


def test_a_snap_length_cut_is_not_checkable(tmp_path):
    result = check(write_pcap(tmp_path / "cut.pcap", conversation(), cut_last=5))
    assert result.findings == []
    assert len(result.notes) == 1 and "snap length" in result.notes[0].reason


def test_a_capture_without_the_handshake_is_not_checkable(tmp_path):
    result = check(write_pcap(tmp_path / "mid.pcap", conversation()[2:]))
    assert result.findings == []
    assert {n.sender for n in result.notes} == {"client", "server"}
    assert all("no SYN" in n.reason for n in result.notes)


def test_websocket_binding_is_read(tmp_path):
    upgrade = (b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
    answer = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
    key = b"\x01\x02\x03\x04"
    body = bytes.fromhex("68" "0000" "00000000" "01")  # the negotiation without PS (message form)
    masked = bytes(b ^ key[i % 4] for i, b in enumerate(body))
    client_frame = bytes([0x82, 0x80 | len(body)]) + key + masked
    reply = bytes.fromhex("e8" "0009" "00" "01")  # an Ok for ID 9, not 0: the negotiation's reply is wrong
    server_frame = bytes([0x82, len(reply)]) + reply
    segments = [*syns(), data(CLIENT, 0, upgrade), data(SERVER, 0, answer),
                data(CLIENT, len(upgrade), client_frame), data(SERVER, len(answer), server_frame)]
    result = check(write_pcap(tmp_path / "ws.pcap", segments))
    assert [(f.requirement, f.sender, f.transport) for f in result.findings] == [("stmp-negotiation-ok", "server", "ws")]


# -- bad input: a clear message per file, the other files still checked -------------------------

def test_bad_files_each_get_a_message_and_the_rest_is_checked(tmp_path, capsys):
    good = write_pcap(tmp_path / "wrong.pcap", [*conversation()[:-1], data(SERVER, 9, WRONG_ID)])
    truncated = tmp_path / "truncated.pcap"
    truncated.write_bytes(good.read_bytes()[:-30])
    garbage = tmp_path / "garbage.pcap"
    garbage.write_bytes(b"this is not a capture at all")
    udp = dpkt.udp.UDP(sport=1, dport=2, data=b"x")
    ip = dpkt.ip.IP(src=socket.inet_aton("127.0.0.1"), dst=socket.inet_aton("127.0.0.1"), p=17, data=udp)
    ip.len = 20 + len(bytes(udp))
    frame = bytes(dpkt.ethernet.Ethernet(src=b"\0" * 6, dst=b"\0" * 6, type=dpkt.ethernet.ETH_TYPE_IP, data=ip))
    only_udp = write_pcap(tmp_path / "udp.pcap", [], extra_frames=[frame])
    records = tmp_path / "findings.jsonl"
    code = main(["check-trace", "--port", "9000=stmp", "--port", "9001=nosuch", str(garbage), str(truncated),
                 str(only_udp), str(tmp_path / "missing.pcap"), str(good), "--records", str(records)])
    err = capsys.readouterr().err
    assert code == 1  # the good file's MUST finding
    assert "unknown protocol 'nosuch'" in err
    assert f"{garbage}: not a pcap or pcapng capture" in err
    assert f"{truncated}: the capture is cut short inside packet 6" in err
    assert f"{only_udp}: 1 packets, none of them TCP" in err
    assert f"{tmp_path / 'missing.pcap'}: cannot open" in err
    lines = [json.loads(line) for line in records.read_text().splitlines()]
    failed = [r for r in lines if r["grade"] == "FAILED"]
    assert len(failed) == 1  # the good file's: the truncated copy lost the offending packet
    assert all(r["passive"] and r["case"] == "stmp/passive/stmp-reply-id" and r["requirement"] == "MUST" for r in failed)


def test_records_follow_the_schema(tmp_path):
    import jsonschema
    from conformance.record_format import record_schema
    path = write_pcap(tmp_path / "wrong.pcap", [*conversation()[:-1], data(SERVER, 9, WRONG_ID)])
    records = tmp_path / "r.jsonl"
    assert main(["check-trace", "--protocol", "stmp", str(path), "--records", str(records)]) == 1
    for line in records.read_text().splitlines():
        jsonschema.validate(json.loads(line), record_schema())


def test_usage_errors(tmp_path, capsys):
    path = write_pcap(tmp_path / "ok.pcap", conversation())
    assert main(["check-trace", str(path)]) == 2
    assert "give --protocol P or --port PORT=P" in capsys.readouterr().err
    assert main(["check-trace", "--protocol", "nosuch", str(path)]) == 2
    assert main(["check-trace", "--protocol", "stmp", str(path)]) == 0


def test_replies_to_requests_lost_by_the_capture_are_no_finding(tmp_path):
    # the client's echo request is lost (a hole before its later bytes): the server's reply to it
    # answers a request the checker never saw, which is no reason to fail the server
    segments = [*syns(), data(CLIENT, 0, NEGOTIATE), data(SERVER, 0, NEGOTIATED),
                data(CLIENT, 12 + len(ECHO), ECHO), data(SERVER, 9, ECHOED)]
    result = check(write_pcap(tmp_path / "lost.pcap", segments))
    assert result.findings == []
    assert [(n.sender, n.offset) for n in result.notes] == [("client", 12)]


PREFIX = {"stmp": "stmp", "micromessage2": "mm2", "rsio": "rsio", "mc0": "mc0", "mtl": "mtl", "rsocket": "rsocket"}


@pytest.mark.parametrize("protocol", sorted(PREFIX))
def test_each_rules_file_names_only_catalogued_must_and_should_requirements(protocol):
    """A finding is graded from its requirement's level: a MAY (or a typo) named by a rule would
    have no grade, and writing the records would fail on it."""
    import re

    from conformance.trace import rules, sessions
    from conformance.trace.findings import GRADE_OF_LEVEL, requirements
    source = Path(rules.__file__).with_name(f"{protocol}.py").read_text()
    across = Path(sessions.__file__).with_name(f"{protocol}.py")  # the checks across connections
    source += across.read_text() if across.exists() else ""
    named = set(re.findall(rf'"({PREFIX[protocol]}-[a-z0-9-]+)"', source))
    known = requirements(protocol)
    assert named
    assert {r: known[r].level if r in known else "not catalogued" for r in named
            if r not in known or known[r].level not in GRADE_OF_LEVEL} == {}
