"""A case that keeps a connection alive must do so for any timer the spec allows: a correct
server whose heartbeat (dead-peer) timeout is shorter than the one the suite assumes passes.

The servers here time a silent peer out after 2 s while the suite is told (as --param would)
that the interval is 3 s and the timeout 4 s: a case pacing its traffic by the assumed interval
is closed on; one that sends every keepalive_ms (1 s) for longer than the assumed timeout is not."""

from __future__ import annotations

import asyncio

import pytest

from suite_helpers import Grade, all_cases, run_case

from conformance.protocols import adapter_for

SERVER_TIMERS = {"heartbeat_interval_ms": 1000, "heartbeat_timeout_ms": 2000, "redeliver_ms": 600,
                 "request_timeout_ms": 2000}
ASSUMED = {"heartbeat_interval_ms": 3000, "heartbeat_timeout_ms": 4000}

KEEP_ALIVE = [
    ("stmp", "stmp/error-disconnect/heartbeats-keep-alive", "tcp"),
    ("mtl", "mtl/error-disconnect/traffic-keeps-alive", "zmtp"),
]


async def _grade(protocol: str, case_id: str, transport: str):
    adapter = adapter_for(protocol)
    server = await adapter.start_reference(transport, {**adapter.params, **SERVER_TIMERS})
    try:
        return await run_case(all_cases(protocol)[case_id], server.url, transport=transport, params=ASSUMED)
    finally:
        await server.close()


@pytest.mark.parametrize("protocol,case_id,transport", KEEP_ALIVE, ids=[c for _, c, _ in KEEP_ALIVE])
def test_a_shorter_heartbeat_timeout_than_assumed_passes(protocol: str, case_id: str, transport: str) -> None:
    result = asyncio.run(_grade(protocol, case_id, transport))
    assert result.grade is Grade.PASSED, (result.grade, result.message)


@pytest.mark.parametrize("protocol,case_id,transport", KEEP_ALIVE, ids=[c for _, c, _ in KEEP_ALIVE])
def test_the_server_really_times_a_silent_peer_out(protocol: str, case_id: str, transport: str) -> None:
    # the twin case without keep-alive traffic is closed on: the short timer is real
    dead = {"stmp": "stmp/error-disconnect/heartbeat-timeout", "mtl": "mtl/error-disconnect/dead-peer"}[protocol]
    result = asyncio.run(_grade(protocol, dead, transport))
    assert result.grade is Grade.PASSED, (result.grade, result.message)
    assert result.duration_ms < ASSUMED["heartbeat_timeout_ms"], result.duration_ms


def test_keep_alive_cases_pace_at_most_every_second() -> None:
    # every keep_alive step in scenarios/ paces by keepalive_ms (1 s) or faster
    from conformance.scenario.timing import SUITE_WAITS
    from conformance.scenario.values import millis
    from conformance.registry import NAMES
    for protocol in NAMES:
        params = {**SUITE_WAITS, **adapter_for(protocol).params}
        for case in all_cases(protocol).values():
            for step in case.steps:
                if "keep_alive" in step:
                    assert millis(step["keep_alive"].get("every_ms", "keepalive_ms"), params) <= 1000, case.id


def test_a_misspelt_field_in_keep_alive_send_is_a_load_error() -> None:
    case = {"steps": [{"keep_alive": {"send": {"kind": "ping", "kinde": 1}, "for_ms": 1000}}]}
    problems = adapter_for("stmp").frame_check(case)
    assert [path for path, _ in problems] == [("steps", 0, "keep_alive", "send", "kinde")], problems


MC0_PRESENT = "mc0/error-disconnect/traffic-keeps-client-present"


async def _grade_mc0(bug: str | None, stall_before_send: int | None):
    """The mc0 presence case, the suite's own loop stalled for 1.3 s (past the case's 1000 ms TTL)
    before its ``stall_before_send``-th send: the broker then rightly finds the client absent."""
    from conformance.scenario.runner import CaseRunner
    from conformance.selftest.buggy_mc0 import start_buggy

    send, sends = CaseRunner._send, 0

    async def stalling_send(self, spec, *args, **kwargs):
        nonlocal sends
        sends += 1
        if sends == stall_before_send:
            await asyncio.sleep(1.3)
        return await send(self, spec, *args, **kwargs)

    server = await start_buggy(bug)
    CaseRunner._send = stalling_send
    try:
        return await run_case(all_cases("mc0")[MC0_PRESENT], server.url, transport="zmtp")
    finally:
        CaseRunner._send = send
        await server.close()


def test_a_suite_that_falls_behind_its_own_pace_grades_error_not_the_target() -> None:
    # CONNECT, SUB, then NOOPs: the 6th send is the 4th NOOP
    result = asyncio.run(_grade_mc0(None, 6))
    assert result.grade is Grade.ERROR, (result.grade, result.message)
    assert "the suite fell behind its own pace" in result.message and "FAILED" in result.message, result.message


def test_a_stall_shorter_than_the_timer_leaves_the_verdict_alone() -> None:
    # the same broker and a pace kept: PASSED; a broker deaf to NOOPs: FAILED, the target's fault
    assert asyncio.run(_grade_mc0(None, None)).grade is Grade.PASSED
    result = asyncio.run(_grade_mc0("noop-not-heard", None))
    assert result.grade is Grade.FAILED, (result.grade, result.message)
