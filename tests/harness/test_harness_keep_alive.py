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
