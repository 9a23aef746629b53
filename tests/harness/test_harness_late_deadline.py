"""A wait the suite notices ending late (its own event loop stalled: a busy machine) while the
target's answer is already there is no verdict on the target: ERROR, never FAILED. The answer may
have come in time. Without a stall, or when nothing arrived even by then, the verdict stands."""

from __future__ import annotations

import asyncio
import dataclasses
import time

import pytest

from suite_helpers import Grade, all_cases, run_case, run_client_case

from conformance.protocols import adapter_for
from conformance.scenario.runner import CaseRunner
from conformance.targets import LoopThread

CASE = "rsocket/request/response-with-metadata"  # REQUEST_RESPONSE, then expect its PAYLOAD
WINDOW = {"expect_ms": 300}


async def _grade(transport: str, stall_s: float | None, answer: bool = True):
    # the reference server on a loop of its own: it answers while the suite's loop is stalled
    adapter = adapter_for("rsocket")
    server_loop = LoopThread("late-deadline-ref")
    server = server_loop.run(adapter.start_reference(transport, {**adapter.params, **adapter.ref_params}), 10)
    send = CaseRunner._send

    async def stalling_send(self, spec):
        if spec.get("type") != "REQUEST_RESPONSE" or stall_s is None:
            return await send(self, spec)
        # the server answers about 100 ms after the request; the suite's loop is stalled from 20 ms
        # to 20 ms + stall_s, so the expect's 300 ms run out while the answer waits unread
        server_loop.loop.call_soon_threadsafe(time.sleep, 0.1)
        time.sleep(0.01)  # the server's loop is asleep before the request reaches it
        await send(self, spec)
        asyncio.get_running_loop().call_later(0.02, time.sleep, stall_s)

    case = all_cases("rsocket")[CASE]
    if not answer:  # a request the reference never answers: nothing arrives, stall or not
        steps = [dict(s) for s in case.steps]
        steps[1] = {"send": {**steps[1]["send"], "data": "never"}}
        case = dataclasses.replace(case, steps=steps)
    try:
        CaseRunner._send = stalling_send
        return await run_case(case, server.url, transport=transport, params=WINDOW)
    finally:
        CaseRunner._send = send
        server_loop.run(server.close(), 10)
        server_loop.stop()


@pytest.mark.parametrize("transport", ["tcp", "ws"])
def test_an_answer_there_when_a_stalled_suite_looks_is_error_not_failed(transport: str) -> None:
    result = asyncio.run(_grade(transport, stall_s=0.6))
    assert result.grade is Grade.ERROR, (result.grade, result.message)
    assert "fell behind" in result.message and "ms late" in result.message, result.message


def test_without_a_stall_the_case_passes() -> None:
    result = asyncio.run(_grade("tcp", stall_s=None))
    assert result.grade is Grade.PASSED, (result.grade, result.message)


def test_nothing_arrived_even_by_then_is_still_failed() -> None:
    result = asyncio.run(_grade("tcp", stall_s=0.6, answer=False))
    assert result.grade is Grade.FAILED, (result.grade, result.message)
    assert "nothing arrived" in result.message, result.message


# -- client role: the suite's listener and the client's exit ------------------------------------

def _threaded(launch):
    """The client on a loop of its own thread: it goes on while the suite's loop is stalled."""
    async def run(testcase: str, url: str) -> int:
        return await asyncio.to_thread(lambda: asyncio.run(launch(testcase, url)))
    return run


def _client_case(case_id: str, launch, stall_before, stall_s: float, params: dict):
    """``case_id`` against ``launch``, the suite's loop stalled for ``stall_s`` as the step
    ``stall_before(step)`` picks begins."""
    steps = CaseRunner._steps

    async def stalling_steps(self, steps_, names, depth):
        for step in steps_:
            if stall_before(step):
                asyncio.get_running_loop().call_soon(time.sleep, stall_s)
            await steps(self, [step], names, depth)

    try:
        CaseRunner._steps = stalling_steps
        return run_client_case(all_cases("rsocket")[case_id], launch, params)
    finally:
        CaseRunner._steps = steps


def test_a_reconnect_that_came_while_the_suite_stalled_is_still_checked() -> None:
    from conformance.selftest.buggy_rsocket_client import buggy_client

    # the optional accept's 300 ms run out during a 1 s stall; the client's RESUME is there by then
    result = _client_case("rsocket/handshake/client-resume-rejected", _threaded(buggy_client("resumes-after-rejection")),
                          lambda step: step.get("accept", {}).get("channel") == "again", 1.0, {"reply_ms": 300})
    assert result.grade is Grade.FAILED, (result.grade, result.message)
    assert "RESUME" in result.message, result.message


def test_a_client_exit_that_came_while_the_suite_stalled_is_error_not_failed() -> None:
    from reference_impl.rsocket.client import run_client_testcase

    async def exits_100_ms_after(testcase: str, url: str) -> int:
        code = await run_client_testcase(url, testcase)
        await asyncio.sleep(0.1)  # so it ends during the stall, inside the 300 ms window
        return code

    result = _client_case("rsocket/request/client-response-without-complete", _threaded(exits_100_ms_after),
                          lambda step: "expect_exit" in step, 1.0, {"reply_ms": 300})
    assert result.grade is Grade.ERROR, (result.grade, result.message)
    assert "fell behind" in result.message and "exit" in result.message, result.message
