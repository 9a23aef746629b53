"""A suite that cannot fail proves nothing: each one-bug server FAILS the right case."""

from __future__ import annotations

import asyncio

import pytest

from conformance.selftest.buggy_stmp import BuggyStmpServer
from suite_helpers import Grade, all_cases, run_case
from conformance.selftest.stmp_bugs import BUG_TO_CASE  # one table for the tests and `conformance selftest`

CASES = all_cases("stmp")
SERVER_TCP_CASES = sorted(cid for cid, c in CASES.items() if c.role == "server" and "tcp" in c.transports)



async def _grade(bug: str | None, case_id: str):
    server = await BuggyStmpServer(bug).start()
    try:
        return await run_case(CASES[case_id], server.url)
    finally:
        await server.close()


@pytest.mark.parametrize("bug,case_id", BUG_TO_CASE, ids=[f"{b}->{c}" for b, c in BUG_TO_CASE])
def test_each_bug_fails_its_case(bug: str, case_id: str) -> None:
    result = asyncio.run(_grade(bug, case_id))
    assert result.grade is Grade.FAILED, (result.grade, result.message, result.log.render())
    assert result.message


def test_close_failure_is_graded_on_its_own() -> None:
    result = asyncio.run(_grade("no-close-after-0x35", "stmp/handshake/version-unsupported"))
    assert result.exchange is Grade.PASSED
    assert result.close is Grade.FAILED
    assert "still open" in result.message


@pytest.mark.parametrize("case_id", [c for _, c in BUG_TO_CASE])
def test_the_same_cases_pass_without_the_bug(case_id: str) -> None:
    # The bug-free twin passes, so each failure above comes from its bug alone.
    result = asyncio.run(_grade(None, case_id))
    assert result.grade is Grade.PASSED, (result.grade, result.message, result.log.render())


def test_wrong_id_bug_leaves_other_cases_passing() -> None:
    result = asyncio.run(_grade("wrong-id-after-wrap", "stmp/encoding/json"))
    assert result.grade is Grade.PASSED, result.message


def test_should_violation_is_non_strict() -> None:
    result = asyncio.run(_grade("not-found-as-bad-request", "stmp/status/unknown-action-not-found"))
    assert result.grade is Grade.NON_STRICT, result.message
    must = asyncio.run(_grade("not-found-as-bad-request", "stmp/status/unknown-action-is-error"))
    assert must.grade is Grade.PASSED  # 0x20 is still an error status: the MUST holds


async def _grade_explaining(case_id: str):
    server = await BuggyStmpServer(None, explains=True).start()
    try:
        return await run_case(CASES[case_id], server.url)
    finally:
        await server.close()


def test_a_bad_request_before_closing_a_truncated_stream_passes() -> None:
    result = asyncio.run(_grade_explaining("stmp/error-disconnect/truncated-frame"))
    assert result.grade is Grade.PASSED, (result.message, result.log.render())
    assert "c0 00 00 20" in result.log.render()  # the other path was taken: Response ID 0 STATUS 0x20


def test_another_status_before_closing_a_truncated_stream_is_non_strict() -> None:
    # the case is a SHOULD; only BadRequest may come before the close
    result = asyncio.run(_grade("truncated-as-server-error", "stmp/error-disconnect/truncated-frame"))
    assert result.close is Grade.NON_STRICT and "instead of closing" in result.message, result.message
    twin = asyncio.run(_grade(None, "stmp/error-disconnect/truncated-frame"))
    assert twin.grade is Grade.PASSED, twin.message
