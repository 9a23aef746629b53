"""A suite that cannot fail proves nothing: each one-bug server FAILS the right case."""

from __future__ import annotations

import asyncio

import pytest

from buggy_stmp import BuggyStmpServer
from suite_helpers import Grade, all_cases, run_case

CASES = all_cases("stmp")
SERVER_TCP_CASES = sorted(cid for cid, c in CASES.items() if c.role == "server" and "tcp" in c.transports)

BUG_TO_CASE = [
    ("no-close-after-0x35", "stmp/handshake/version-unsupported"),
    ("wrong-id-after-wrap", "stmp/ack-wrap/id-wrap-to-one"),
    ("wrong-id-after-wrap", "stmp/ack-wrap/id-max"),
    ("ps-missing", "stmp/encoding/raw"),
    ("kind-bits-swapped", "stmp/handshake/one-version"),
    ("no-heartbeat-timeout", "stmp/error-disconnect/heartbeat-timeout"),
    ("accepts-before-negotiation", "stmp/handshake/request-before-negotiation"),
    ("no-heartbeats", "stmp/error-disconnect/server-sends-heartbeats"),
    ("answers-unknown-response", "stmp/ack-wrap/response-to-unknown-id"),
    ("reserved-bits-ignored", "stmp/error-disconnect/reserved-bits-set"),
]


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
