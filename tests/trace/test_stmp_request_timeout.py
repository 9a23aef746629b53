"""The request-timeout client case's close (conformance/trace/rules/stmp_testcases.py), on hand-made
timings: the bounds are the profile's (docs/profiles/stmp.md: no sooner than request_timeout_ms,
the case allowing 250 ms, and within 3 s after it)."""

from __future__ import annotations

from conformance.trace.rules.stmp_testcases import RequestTimeoutCase

PARAMS = {"request_timeout_ms": 2000, "heartbeat_timeout_ms": 3000}


def _case(**params):
    run = {**PARAMS, **params}
    case = RequestTimeoutCase(run, 1.0, run["heartbeat_timeout_ms"] / 1000)
    case.server_message(10.0, "response")  # the negotiation's Ok
    case.client_request(10.1, 1)
    return case


def test_a_close_before_the_request_timeout_is_early():
    assert [f[1] for f in _case().client_closed(11.0, "FIN", True)] == ["stmp-request-timeout"]
    # at the timeout (less the case's 250 ms), or with the Request answered meanwhile: as the case does
    assert _case().client_closed(11.9, "FIN", True) == []
    assert _case().client_closed(11.0, "FIN", False) == []


def test_a_close_the_heartbeat_timeout_may_explain_is_not_judged():
    case = _case(request_timeout_ms=10000)
    assert case.client_closed(13.2, "FIN", True) == []  # 3.2 s after the server's last message


def test_a_request_still_waiting_past_its_timeout_and_three_seconds_never_fired():
    case = _case()
    assert case.still_open(15.0, "then the server closed") == []
    assert [f[1] for f in case.still_open(15.2, "then the server closed")] == ["stmp-request-timeout"]
    assert case.still_open(16.0, "again") == []  # judged once


def test_a_server_message_after_the_request_is_another_case():
    case = _case()
    case.server_message(10.2, "response")
    assert case.still_open(20.0, "later") == [] and case.client_closed(10.3, "FIN", True) == []
    pinged = _case()
    pinged.server_message(10.2, "ping")  # a Ping answers nothing: still request-timeout's wait
    assert [f[1] for f in pinged.still_open(15.2, "later")] == ["stmp-request-timeout"]


def test_unrecorded_timeouts_are_never_stricter_than_the_run():
    from conformance.protocols.stmp import ADAPTER
    case = RequestTimeoutCase({}, 1.0, 15.0)
    shortest = min(ADAPTER.params["request_timeout_ms"], ADAPTER.ref_params["request_timeout_ms"]) / 1000
    longest = max(ADAPTER.params["request_timeout_ms"], ADAPTER.ref_params["request_timeout_ms"]) / 1000
    assert (case.early, case.late) == (shortest - 0.25, longest + 3)
