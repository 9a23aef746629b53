"""A suite that cannot fail proves nothing: each one-bug rsio server FAILS the right case,
and the bug-free twin passes those same cases (and every other server-role case)."""

from __future__ import annotations

import asyncio
from functools import lru_cache

import pytest

from conformance.selftest.buggy_rsio import BUGS, BuggyRsioServer
from suite_helpers import Grade, all_cases, run_case
from conformance.selftest.rsio_bugs import BUG_TO_CASE, SHOULD_BUG_TO_CASE  # one table for the tests and `conformance selftest`

CASES = all_cases("rsio")
SERVER_CASES = sorted(cid for cid, c in CASES.items() if c.role == "server")



async def _run(bug: str | None, case_id: str):
    server = await BuggyRsioServer(bug).start()
    try:
        return await run_case(CASES[case_id], server.url)
    finally:
        await server.close()


@lru_cache(maxsize=None)
def _grade(bug: str | None, case_id: str):
    """One run per (bug, case) for the whole module."""
    return asyncio.run(_run(bug, case_id))


async def _grade_all(case_ids: list[str]):
    server = await BuggyRsioServer(None).start()
    try:
        return {cid: await run_case(CASES[cid], server.url) for cid in case_ids}
    finally:
        await server.close()




def test_every_bug_has_a_case() -> None:
    assert {bug for bug, _ in BUG_TO_CASE + SHOULD_BUG_TO_CASE} == BUGS


@pytest.mark.parametrize("bug,case_id", BUG_TO_CASE, ids=[f"{b}->{c}" for b, c in BUG_TO_CASE])
def test_each_bug_fails_its_case(bug: str, case_id: str) -> None:
    result = _grade(bug, case_id)
    assert result.grade is Grade.FAILED, (result.grade, result.message, result.log.render())
    assert result.message


def test_close_failure_is_graded_on_its_own() -> None:
    result = _grade("no-close-after-goodbye", "rsio/handshake/wrong-version")
    assert result.exchange is Grade.PASSED
    assert result.close is Grade.FAILED
    assert "still open" in result.message


def test_the_bug_free_twin_passes_every_server_case() -> None:
    # Covers every case of BUG_TO_CASE, so each failure above comes from its bug alone.
    assert {c for _, c in BUG_TO_CASE} <= set(SERVER_CASES)
    results = asyncio.run(_grade_all(SERVER_CASES))
    expected = {cid: (Grade.INFORMATIONAL if CASES[cid].requirement in ("INFO", "MAY") else Grade.PASSED)
                for cid in SERVER_CASES}
    wrong = {cid: (r.grade, r.message) for cid, r in results.items() if r.grade is not expected[cid]}
    assert not wrong, wrong


def test_a_bug_leaves_unrelated_cases_passing() -> None:
    result = _grade("ignores-cancel", "rsio/split-message/fixed-size-elements")
    assert result.grade is Grade.PASSED, result.message


def test_ending_the_streams_and_saying_goodbye_before_the_close_passes() -> None:
    async def run():
        server = await BuggyRsioServer(None, explains=True).start()
        try:
            return await run_case(CASES["rsio/error-disconnect/transport-close-releases-streams"], server.url), \
                server.explained
        finally:
            await server.close()

    result, explained = asyncio.run(run())
    assert explained == 1  # the other path was taken
    assert result.grade is Grade.PASSED, (result.message, result.log.render()[-3000:])


def test_completing_a_stream_that_never_completed_is_not_an_allowed_ending() -> None:
    # the case is a SHOULD: onComplete for subscriber 1 (test/never) is outside its allow list
    result = _grade("completes-on-eof", "rsio/error-disconnect/transport-close-releases-streams")
    assert result.close is Grade.NON_STRICT and "instead of closing" in result.message, result.message
