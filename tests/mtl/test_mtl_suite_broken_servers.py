"""A suite that cannot fail proves nothing: each one-bug MTL server FAILS the right case,
and the bug-free twin passes those same cases (and every other case)."""

from __future__ import annotations

import asyncio
from functools import lru_cache

import pytest

from conformance.selftest.buggy_mtl import BUGS, TIMERS, BuggyMtlServer
from reference_impl.mtl.server import MtlServer
from reference_impl.mtl.service import Broker, BrokerOptions
from suite_helpers import Grade, all_cases, run_case
from conformance.selftest.mtl_bugs import BUG_TO_CASE, SHOULD_BUG_TO_CASE  # one table for the tests and `conformance selftest`

CASES = all_cases("mtl")



async def _run(bug: str | None, case_id: str):
    server = await BuggyMtlServer(bug).start()
    try:
        return await run_case(CASES[case_id], server.url, transport="zmtp")
    finally:
        await server.close()


@lru_cache(maxsize=None)
def _grade(bug: str | None, case_id: str):
    return asyncio.run(_run(bug, case_id))


def test_every_bug_has_a_case() -> None:
    assert {bug for bug, _ in BUG_TO_CASE + SHOULD_BUG_TO_CASE} == BUGS


@pytest.mark.parametrize("bug,case_id", BUG_TO_CASE, ids=[f"{b}->{c}" for b, c in BUG_TO_CASE])
def test_each_bug_fails_its_case(bug: str, case_id: str) -> None:
    result = _grade(bug, case_id)
    assert result.grade is Grade.FAILED, (result.grade, result.message, result.log.render()[-3000:])
    assert result.message


@pytest.mark.parametrize("bug,case_id", SHOULD_BUG_TO_CASE, ids=[f"{b}->{c}" for b, c in SHOULD_BUG_TO_CASE])
def test_each_should_bug_is_non_strict_and_fails_strict(bug: str, case_id: str) -> None:
    result = _grade(bug, case_id)
    assert result.grade is Grade.NON_STRICT, (result.grade, result.message)
    assert result.grade.is_failure(strict=True) and not result.grade.is_failure(strict=False)


@pytest.mark.parametrize("case_id", sorted({c for _, c in BUG_TO_CASE + SHOULD_BUG_TO_CASE}))
def test_the_same_cases_pass_without_the_bug(case_id: str) -> None:
    result = _grade(None, case_id)
    assert result.grade is Grade.PASSED, (result.grade, result.message, result.log.render()[-3000:])


@pytest.mark.parametrize("case_id", ["mtl/handshake/scram-full-cycle", "mtl/handshake/scram-wrong-proof"])
def test_an_unanswerable_server_first_fails_every_scram_case(case_id: str) -> None:
    result = _grade("server-first-no-iterations", case_id)
    assert result.grade is Grade.FAILED, (result.grade, result.message)
    assert "server-first message" in result.message, result.message


async def _run_anonymous(case_id: str):
    server = await MtlServer(Broker(BrokerOptions(anonymous=True, **TIMERS))).listen("127.0.0.1", 0)
    try:
        return await run_case(CASES[case_id], server.url, transport="zmtp")
    finally:
        await server.close()


def test_a_server_that_never_challenges_is_not_credited_with_its_challenge() -> None:
    # Anonymous access is allowed (a MAY), but then no 401 was seen: not tested, never PASSED.
    result = asyncio.run(_run_anonymous("mtl/handshake/challenge-lists-mechanisms"))
    assert result.grade is Grade.UNSUPPORTED, (result.grade, result.message)


def test_answering_ill_formed_requests_still_serves() -> None:
    # the SHOULD is broken, the MUST (the next request is served) is not
    result = _grade("answers-ill-formed", "mtl/error-disconnect/control-one-frame")
    assert "should have sent nothing" in result.message and "reply 400" in result.message


def test_the_ignored_multiple_shows_as_a_redelivery() -> None:
    result = _grade("ignores-multiple", "mtl/ack-wrap/confirm-multiple")
    assert 'payload="one [mtl/ack-wrap/confirm-multiple ' in result.message  # "one" came back


def test_server_final_in_201_fails_where_the_last_402_belongs() -> None:
    # docs/profiles/mtl.md: "a 201 with an invented field carrying server-final is FAILED"
    result = _grade("server-final-in-201", "mtl/handshake/scram-full-cycle")
    assert result.exchange is Grade.FAILED and "201" in result.message, result.message


def test_a_dead_peer_forgotten_but_left_connected_is_only_informational() -> None:
    # docs/profiles/mtl.md: "the server forgets its lease and state and sends it nothing more. Closing that
    # peer's TCP connection is INFORMATIONAL (a libzmq ROUTER cannot close one peer's connection)."
    async def run():
        server = await BuggyMtlServer(None, router_keeps_dead_peers_open=True).start()
        try:
            return await run_case(CASES["mtl/error-disconnect/dead-peer"], server.url, transport="zmtp")
        finally:
            await server.close()

    result = asyncio.run(run())
    assert result.exchange is Grade.PASSED, (result.message, result.log.render()[-3000:])
    assert result.close is Grade.INFORMATIONAL and "still open" in result.message, result.message
    assert not result.grade.is_failure(strict=True)


def test_a_peer_never_declared_dead_is_caught_by_its_pings() -> None:
    # no-dead-peer leaves the connection open too: what fails it is the Ping after the timeout
    result = _grade("no-dead-peer", "mtl/error-disconnect/dead-peer")
    assert result.exchange is Grade.NON_STRICT and "ping" in result.message.lower(), result.message
