"""Two STMP rules on hand-built captures (docs/profiles/stmp.md): a NotFound to a Request with a
reserved ACTION (0x01..0xFF: "an unknown reserved one gets NotImplemented (0x31)"), and a server
that ends the connection without the BadRequest owed to a first message that is not the
negotiation ("Any other message before negotiation completes: BadRequest (0x20) and close").
Beside each finding, the legitimate variants next to it give none."""

from __future__ import annotations

import dpkt

from conformance.trace.check import check_file
from tests.trace.pcapfiles import CLIENT, NEGOTIATE, NEGOTIATED, SERVER, data, syns, write_pcap

FIN = dpkt.tcp.TH_FIN | dpkt.tcp.TH_ACK
PARAMS = {"heartbeat_interval_ms": 1000, "heartbeat_timeout_ms": 3000, "prompt_ms": 1000}
PING = bytes([0x00])
BAD_REQUEST_0 = bytes.fromhex("c0" "0000" "20")  # Response ID 0 STATUS BadRequest, ENCODING 0


def _request(request_id: int, action: int) -> bytes:
    """Request (KIND 01, ENCODING Raw: 0x68) with ID, ACTION, PS 1 and the payload "?"."""
    return bytes([0x68]) + request_id.to_bytes(2, "big") + action.to_bytes(4, "big") + bytes.fromhex("00000001") + b"?"


def _response(request_id: int, status: int) -> bytes:
    """Response (KIND 11, ENCODING 0: 0xC0) with ID and STATUS, no PS, no payload."""
    return bytes([0xC0]) + request_id.to_bytes(2, "big") + bytes([status])


def _server_findings(path):
    return [f.requirement for f in check_file(path, {9000: "stmp"}, None, PARAMS).findings if f.sender == "server"]


def _negotiated(tmp_path, requests, responses):
    """Negotiate, then the client's requests (one segment each), then the server's responses."""
    segments, offset = [*syns(), data(CLIENT, 0, NEGOTIATE), data(SERVER, 0, NEGOTIATED)], len(NEGOTIATE)
    for request in requests:
        segments.append(data(CLIENT, offset, request))
        offset += len(request)
    offset = len(NEGOTIATED)
    for response in responses:
        segments.append(data(SERVER, offset, response))
        offset += len(response)
    return _server_findings(write_pcap(tmp_path / "t.pcap", segments))


# -- a reserved ACTION ----------------------------------------------------------------------------

def test_not_found_to_the_last_reserved_action_is_a_finding(tmp_path):
    assert _negotiated(tmp_path, [_request(23, 0xFF)], [_response(23, 0x24)]) == ["stmp-action-dispatch"]
    assert _negotiated(tmp_path, [_request(5, 0x05)], [_response(5, 0x24)]) == ["stmp-action-dispatch"]


def test_not_implemented_or_a_status_that_does_not_say_unknown_is_not(tmp_path):
    assert _negotiated(tmp_path, [_request(23, 0xFF)], [_response(23, 0x31)]) == []
    for status in (0x00, 0x20, 0x26, 0x33):  # served, a bad payload, too large, unavailable: not judged
        assert _negotiated(tmp_path, [_request(23, 0xFF)], [_response(23, status)]) == []


def test_not_found_to_an_application_action_is_not(tmp_path):
    assert _negotiated(tmp_path, [_request(23, 0x100)], [_response(23, 0x24)]) == []
    assert _negotiated(tmp_path, [_request(23, 0x12345678)], [_response(23, 0x24)]) == []


def test_a_reply_to_an_id_two_outstanding_requests_share_is_not_judged(tmp_path):
    # ID 23 reused while outstanding (the profile grades reuse INFORMATIONAL): the NotFound may be ACTION 0x200's
    requests = [_request(23, 0x200), _request(23, 0xFF)]
    assert _negotiated(tmp_path, requests, [_response(23, 0x24), _response(23, 0x31)]) == []
    assert _negotiated(tmp_path, requests[::-1], [_response(23, 0x24), _response(23, 0x31)]) == []


# -- the refusal owed to a first message that is not the negotiation -------------------------------

def _ping_first(tmp_path, tail, times):
    segments = [*syns(), data(CLIENT, 0, PING), *tail]
    times = [1000 + t for t in (0.0, 0.0, 0.0, *times)]
    return _server_findings(write_pcap(tmp_path / "t.pcap", segments, times=times))


def test_a_server_that_closes_long_after_an_unanswered_ping_first_is_a_finding(tmp_path):
    # the suite gives up after its wait and closes; the server closes too, its BadRequest never sent
    tail = [data(CLIENT, 1, b"", FIN), data(SERVER, 0, b"", FIN)]
    assert _ping_first(tmp_path, tail, [5.0, 5.001]) == ["stmp-negotiation-request"]
    # a server closing on its own (a pre-negotiation timer) without answering is no better
    assert _ping_first(tmp_path, [data(SERVER, 0, b"", FIN)], [3.0]) == ["stmp-negotiation-request"]


def test_the_refusal_or_a_close_within_the_prompt_is_not(tmp_path):
    refused = [data(SERVER, 0, BAD_REQUEST_0), data(SERVER, 3, b"", FIN), data(CLIENT, 1, b"", FIN)]
    assert _ping_first(tmp_path, refused, [0.01, 0.02, 0.03]) == []
    # a close crossing the ping (a pre-negotiation timer that ran out just then): the server may not have read it
    assert _ping_first(tmp_path, [data(SERVER, 0, b"", FIN), data(CLIENT, 1, b"", FIN)], [0.5, 0.6]) == []


def test_a_capture_that_ends_before_the_servers_close_is_not(tmp_path):
    # the client closed, the server's answer and close are past the capture's end: 'never' is not 'later'
    assert _ping_first(tmp_path, [data(CLIENT, 1, b"", FIN)], [5.0]) == []
