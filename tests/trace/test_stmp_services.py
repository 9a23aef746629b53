"""STMP's test-service rule (conformance/trace/rules/stmp_services.py) on hand-written captures.

docs/profiles/stmp.md, "Test service (server role)": Request ACTION 0x100 echoes, 0x102 replies Ok
after a delay, and "any other non-reserved ACTION gets a Response NotFound (0x24; another error
status >= 0x20 is NON-STRICT)".  With --test-services on: a status below 0x20 to such an ACTION is
FAILED, another error status that speaks of the ACTION NON-STRICT (as the suite's cases
unknown-action-is-error and unknown-action-not-found grade them, both under stmp-action-dispatch);
with it off, or for NotFound, nothing."""

from __future__ import annotations

from conformance.cli import main
from conformance.trace.check import check_file
from conformance.trace.findings import record_of
from tests.trace.pcapfiles import CLIENT, SERVER, data, syns, write_pcap

# the negotiation, by the spec's binary layout: Request = KIND 01, ENCODING 5 (Raw), reserved 000 -> 0x68;
# ID 0, ACTION 0, PS 1, payload 0x01 (version 0.1: major nibble 0, minor nibble 1); the Ok Response =
# KIND 11, ENCODING 5 -> 0xE8, ID 0, STATUS 0, PS 1, the chosen version 0x01
NEGOTIATE = bytes.fromhex("68" "0000" "00000000" "00000001" "01")
NEGOTIATED = bytes.fromhex("e8" "0000" "00" "00000001" "01")
UNKNOWN = 0x12345678  # the ACTION the suite's unknown-action cases send


def _request(request_id: int, action: int) -> bytes:
    """Request, Raw (0x68): ID u16 BE, ACTION u32 BE, PS u32 BE = 1, payload "?"."""
    return b"\x68" + request_id.to_bytes(2, "big") + action.to_bytes(4, "big") + b"\x00\x00\x00\x01?"


def _response(request_id: int, status: int) -> bytes:
    """Response, ENCODING 0 (0xC0: no PS, no payload): ID u16 BE, STATUS u8."""
    return b"\xc0" + request_id.to_bytes(2, "big") + bytes([status])


def _findings(tmp_path, action: int, status: int, services: str = "on"):
    request, response = _request(22, action), _response(22, status)
    segments = [*syns(), data(CLIENT, 0, NEGOTIATE), data(SERVER, 0, NEGOTIATED),
                data(CLIENT, len(NEGOTIATE), request), data(SERVER, len(NEGOTIATED), response)]
    path = write_pcap(tmp_path / f"stmp-{services}.pcap", segments)
    result = check_file(path, {SERVER[1]: "stmp"}, None, {}, test_services=services)
    assert result.problems == []
    return result.findings


def test_bad_request_to_an_action_the_service_lacks_is_non_strict(tmp_path):
    found = _findings(tmp_path, UNKNOWN, 0x20)
    assert [(f.sender, f.requirement, f.level) for f in found] == [("server", "stmp-action-dispatch", "SHOULD")]
    record = record_of(found[0], run="r", time="t", source="c.pcap", implementation=None)
    assert (record["grade"], record["requirement"], record["requirementId"]) == \
        ("NON-STRICT", "SHOULD", "stmp-action-dispatch")


def test_other_error_statuses_that_speak_of_the_action_are_non_strict(tmp_path):
    for status in (0x31, 0x35, 0x28):  # NotImplemented, VersionNotSupported, an unassigned error status
        assert [(f.requirement, f.level) for f in _findings(tmp_path, UNKNOWN, status)] == \
            [("stmp-action-dispatch", "SHOULD")], hex(status)


def test_a_status_below_0x20_to_an_action_the_service_lacks_is_failed(tmp_path):
    for status in (0x00, 0x11):  # Ok; Found (302)
        found = _findings(tmp_path, UNKNOWN, status)
        assert [(f.requirement, f.level) for f in found] == [("stmp-action-dispatch", "MUST")], hex(status)
        assert record_of(found[0], run="r", time="t", source="c.pcap", implementation=None)["grade"] == "FAILED"


def test_not_found_is_what_the_service_sends(tmp_path):
    assert _findings(tmp_path, UNKNOWN, 0x24) == []
    assert _findings(tmp_path, 0x100 + 3, 0x24) == []  # the first non-reserved ACTION past the service's


def test_without_the_services_an_application_action_is_not_judged(tmp_path):
    for status in (0x00, 0x20, 0x31):
        assert _findings(tmp_path, UNKNOWN, status, services="off") == []


def test_the_services_own_actions_and_their_answers_are_not_judged(tmp_path):
    assert _findings(tmp_path, 0x100, 0x00) == []  # the echo
    assert _findings(tmp_path, 0x102, 0x20) == []  # the delay with a payload that is not a u32
    assert _findings(tmp_path, 0x101, 0x20) == []  # 0x101 is the service's Notify; a Request 0x101 is not judged


def test_statuses_a_server_may_owe_whatever_the_action_are_not_judged(tmp_path):
    # Unauthorized, Forbidden, RequestEntityTooLarge, TooManyRequests, InternalServerError, ServiceUnavailable,
    # and a user-defined status (0x80..0xFF: its meaning is the ACTION's)
    for status in (0x21, 0x23, 0x26, 0x27, 0x30, 0x33, 0x80, 0xFF):
        assert _findings(tmp_path, UNKNOWN, status) == [], hex(status)


def test_a_reserved_action_keeps_its_own_rule(tmp_path):
    # 0x05 is reserved: NotFound breaks "an unknown reserved one gets NotImplemented" (MUST) whatever the services
    for services in ("on", "off"):
        assert [(f.requirement, f.level) for f in _findings(tmp_path, 0x05, 0x24, services)] == \
            [("stmp-action-dispatch", "MUST")]
    assert _findings(tmp_path, 0x05, 0x20) == []


def test_check_trace_prints_it_non_strict_and_fails_only_with_strict(tmp_path, capsys):
    segments = [*syns(), data(CLIENT, 0, NEGOTIATE), data(SERVER, 0, NEGOTIATED),
                data(CLIENT, len(NEGOTIATE), _request(22, UNKNOWN)), data(SERVER, len(NEGOTIATED), _response(22, 0x20))]
    path = write_pcap(tmp_path / "tcpdump.pcap", segments)
    args = ["check-trace", "--port", f"{SERVER[1]}=stmp", "--test-services", "on", str(path)]
    assert main(args) == 0
    assert "NON-STRICT SHOULD stmp-action-dispatch" in capsys.readouterr().out
    assert main([*args, "--strict"]) == 1
    assert main(["check-trace", "--port", f"{SERVER[1]}=stmp", "--test-services", "off", "--strict", str(path)]) == 0


# -- the service's close: any message restarts its heartbeat timeout (the run's) -------------

NOTIFY = bytes.fromhex("a8" "12345678" "00000001") + b"k"  # KIND 2 (Notify), ENCODING 5 (Raw), ACTION, length, "k"


def _closed(tmp_path, after_notify: float, services: str = "on", params=None):
    """The suite negotiates, sends a Notify a second for three seconds, and the server closes
    ``after_notify`` after the last one (a capture as `run --pcap` writes it, the suite the client)."""
    from conformance.trace import capture
    conn = capture._Conn(CLIENT, SERVER, 10.0, "client")
    conn.events += [(10.01, "client", NEGOTIATE), (10.02, "server", NEGOTIATED)]
    conn.events += [(11.0 + i, "client", NOTIFY) for i in range(3)]
    conn.events += [(13.0 + after_notify, "server", "FIN"), (13.01 + after_notify, "client", "FIN")]
    recorder = capture.Recorder()
    recorder.conns.append(conn)
    path = tmp_path / "run.pcapng"
    capture.write(recorder, path)
    result = check_file(path, {SERVER[1]: "stmp"}, None, {"heartbeat_interval_ms": 60000, **(params or {})},
                        test_services=services)
    assert result.problems == []
    return [f.requirement for f in result.findings if f.sender == "server"]


def test_the_service_closing_within_its_timeout_of_the_last_notify(tmp_path):
    # the shorter of the adapter's default timeout and the reference's (3 s) unless the run recorded one
    assert _closed(tmp_path, 1.0) == ["stmp-heartbeat-timeout"]
    assert _closed(tmp_path, 3.5) == []
    assert _closed(tmp_path, 3.5, params={"heartbeat_timeout_ms": 5000}) == ["stmp-heartbeat-timeout"]
    # not a conformance run's service: a server may close at any time
    assert _closed(tmp_path, 1.0, services="off") == []


# -- what else the service pins: a Notify of another ACTION is never answered; it speaks 0.1 only --

def _exchange(tmp_path, client: bytes, server: bytes, services: str, negotiated: bool = True):
    moves = [data(CLIENT, 0, NEGOTIATE), data(SERVER, 0, NEGOTIATED)] if negotiated else []
    offset = (len(NEGOTIATE), len(NEGOTIATED)) if negotiated else (0, 0)
    segments = [*syns(), *moves, data(CLIENT, offset[0], client), data(SERVER, offset[1], server)]
    path = write_pcap(tmp_path / f"stmp-{services}.pcap", segments)
    result = check_file(path, {SERVER[1]: "stmp"}, None, {}, test_services=services)
    assert result.problems == []
    return [f.requirement for f in result.findings if f.sender == "server"]


def test_a_response_right_after_a_notify_of_another_action_answers_it(tmp_path):
    # NotFound (0x24) with ID 0, which no Request of the client's holds
    assert _exchange(tmp_path, NOTIFY, _response(0, 0x24), "on") == ["stmp-notify-no-reply"]
    assert _exchange(tmp_path, NOTIFY, _response(0, 0x24), "off") == ["stmp-reply-id"]


def test_an_ok_to_an_offer_without_0_1_owed_version_not_supported(tmp_path):
    offer_02 = bytes.fromhex("68" "0000" "00000000" "00000001" "02")  # versions: 0.2 (one byte, minor 2)
    assert _exchange(tmp_path, offer_02, NEGOTIATED, "on", negotiated=False) == ["stmp-negotiation-refused"]
    assert _exchange(tmp_path, offer_02, NEGOTIATED, "off", negotiated=False) == ["stmp-negotiation-ok"]
