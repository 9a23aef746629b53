"""STMP's heartbeat timeout judged from capture timestamps (docs/profiles/stmp.md: "no ping (or
other traffic) within the agreed timeout: disconnect"), on hand-built captures: a server that
outlives the timeout plus a heartbeat interval of slack is a finding; traffic the rules cannot
time (part of a message) never is."""

from __future__ import annotations

import dpkt

from conformance.trace.check import check_file
from tests.trace.pcapfiles import CLIENT, NEGOTIATE, NEGOTIATED, SERVER, data, syns, write_pcap

PING = bytes([0x00])  # KIND ping (00), ENCODING 0: the whole message
# Request ID 9 ACTION 0x100 Raw "ab" (the test cuts it after its 5th byte)
REQUEST = bytes.fromhex("68" "0009" "00000100" "00000002" "6162")
FIN = dpkt.tcp.TH_FIN | dpkt.tcp.TH_ACK
PARAMS = {"heartbeat_interval_ms": 1000, "heartbeat_timeout_ms": 3000, "prompt_ms": 1000}  # judged past 4 s


def _check(tmp_path, tail, times):
    segments = [*syns(), data(CLIENT, 0, NEGOTIATE), data(SERVER, 0, NEGOTIATED), *tail]
    path = write_pcap(tmp_path / "t.pcap", segments, times=[1000 + t for t in (0.0, 0.0, 0.0, 0.01, *times)])
    return [f.requirement for f in check_file(path, {9000: "stmp"}, None, PARAMS).findings if f.sender == "server"]


def test_a_server_pinging_a_silent_client_past_the_timeout_is_a_finding(tmp_path):
    pings = [data(SERVER, 9 + i, PING) for i in range(5)]
    assert _check(tmp_path, pings, [1.0, 2.0, 3.0, 4.0, 5.0]) == ["stmp-heartbeat-timeout"]


def test_a_server_closing_within_the_slack_is_not(tmp_path):
    tail = [data(SERVER, 9, PING), data(SERVER, 10, PING), data(SERVER, 11, PING), data(SERVER, 12, b"", FIN)]
    assert _check(tmp_path, tail, [1.0, 2.0, 3.0, 3.9]) == []


def test_a_message_arriving_in_parts_across_the_silence_is_traffic(tmp_path):
    tail = [data(CLIENT, 12, REQUEST[:5]), *[data(SERVER, 9 + i, PING) for i in range(5)],
            data(CLIENT, 17, REQUEST[5:])]
    assert _check(tmp_path, tail, [0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 5.5]) == []
