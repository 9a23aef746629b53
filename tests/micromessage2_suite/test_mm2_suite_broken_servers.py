"""A suite that cannot fail proves nothing: each one-bug Micromessage2 server gets the right grade
on the right case, and the bug-free twin passes the same case."""

from __future__ import annotations

import asyncio

import pytest

from conformance.selftest.buggy_mm2 import BuggyMm2Server
from conformance.selftest.micromessage2_bugs import BUG_TO_CASE as CATALOGUE
from suite_helpers import Grade, all_cases, run_case

CASES = all_cases("micromessage2")

# the catalogue `conformance selftest` reads, less the 70,000-message wrap case that
# test_acks_across_the_wrap runs once on its own
BUG_TO_CASE = [(bug, case) for bug, case in CATALOGUE if bug != "ack-not-cumulative-across-wrap"]

# docs/profiles/micromessage2.md: where a server may just close, "an ERROR frame before the close is allowed (both pass)"
CLOSE_MAY_EXPLAIN = [
    "micromessage2/error-disconnect/error-instead-of-hello",
    "micromessage2/error-disconnect/error-received-close",
    "micromessage2/error-disconnect/error-with-large-flag",
    "micromessage2/error-disconnect/truncated-frame-then-eof",
]


async def _grade(bug: str | None, case_id: str):
    server = await BuggyMm2Server(bug).start()
    try:
        return await run_case(CASES[case_id], server.url)
    finally:
        await server.close()


def _show(result) -> str:
    return f"{result.grade}: {result.message}\n{result.log.render()[-3000:]}"


@pytest.mark.parametrize("bug,case_id", BUG_TO_CASE, ids=[f"{b}->{c}" for b, c in BUG_TO_CASE])
def test_each_bug_fails_its_case(bug: str, case_id: str) -> None:
    result = asyncio.run(_grade(bug, case_id))
    assert result.grade is Grade.FAILED, _show(result)
    assert result.message


@pytest.mark.parametrize("case_id", sorted({c for _, c in BUG_TO_CASE}))
def test_the_same_cases_pass_without_the_bug(case_id: str) -> None:
    result = asyncio.run(_grade(None, case_id))
    assert result.grade is Grade.PASSED, _show(result)


def test_missing_required_bug_is_an_exchange_failure() -> None:
    # the server answered with its hello where ERROR belongs: the exchange fails, not only the close
    result = asyncio.run(_grade("no-error-missing-required", "micromessage2/handshake/required-missing-vendor"))
    assert result.exchange is Grade.FAILED and "handshake" in result.message, _show(result)


def test_zero_based_ids_fail_on_the_id_field() -> None:
    result = asyncio.run(_grade("zero-based-ids", "micromessage2/extension-index/server-acks-on-its-id"))
    assert "id is 1, expected 2" in result.message, _show(result)


def test_window_overrun_is_caught_by_the_silence_after_a_full_window() -> None:
    result = asyncio.run(_grade("window-overrun", "micromessage2/ack-wrap/batch-ack-window-3"))
    assert "should have sent nothing" in result.message and "seq=4" in result.message, _show(result)


def test_no_split_is_non_strict_and_the_payload_still_arrives_intact() -> None:
    # docs/profiles/micromessage2.md: "A single frame over 1 MiB: NON-STRICT." The data itself is intact, so the MUST case passes.
    split = asyncio.run(_grade("no-split", "micromessage2/split-message/reply-over-1mib-split"))
    assert split.grade is Grade.NON_STRICT, _show(split)
    assert "max_fragment" in split.message and "0x500000" in split.message
    intact = asyncio.run(_grade("no-split", "micromessage2/split-message/payload-5mib"))
    assert intact.grade is Grade.PASSED, _show(intact)
    twin = asyncio.run(_grade(None, "micromessage2/split-message/reply-over-1mib-split"))
    assert twin.grade is Grade.PASSED, _show(twin)


def test_large_threshold_bug_leaves_short_payloads_passing() -> None:
    result = asyncio.run(_grade("large-threshold-512", "micromessage2/split-message/payload-255"))
    assert result.grade is Grade.PASSED, _show(result)


def test_acks_across_the_wrap() -> None:
    """70,000 pushed messages: the twin passes; acks that are not cumulative across 65535 -> 1 stall the
    window after the wrap (the ack of 465 leaves 65001..65535 unacked), and only there."""

    async def both():
        return await asyncio.gather(_grade(None, "micromessage2/ack-wrap/cumulative-across-wrap"),
                                    _grade("ack-not-cumulative-across-wrap", "micromessage2/ack-wrap/cumulative-across-wrap"),
                                    _grade("ack-not-cumulative-across-wrap", "micromessage2/ack-wrap/batch-ack-window-3"))

    twin, wrapped, before_wrap = asyncio.run(both())
    assert twin.grade is Grade.PASSED, _show(twin)
    assert wrapped.grade is Grade.FAILED, _show(wrapped)
    assert "nothing arrived" in wrapped.message and "seq: 0x3a3" in wrapped.message, _show(wrapped)
    assert before_wrap.grade is Grade.PASSED, _show(before_wrap)


async def _grade_explaining(case_id: str):
    server = await BuggyMm2Server(None, explains=True).start()
    try:
        return await run_case(CASES[case_id], server.url), server.errors_sent
    finally:
        await server.close()


@pytest.mark.parametrize("case_id", CLOSE_MAY_EXPLAIN)
def test_an_error_saying_why_before_the_close_passes(case_id: str) -> None:
    result, errors_sent = asyncio.run(_grade_explaining(case_id))
    assert errors_sent == 1  # the other path really was taken
    assert result.grade is Grade.PASSED, _show(result)


def test_a_hello_before_the_close_is_not_an_allowed_explanation() -> None:
    result = asyncio.run(_grade("hello-before-check", "micromessage2/error-disconnect/error-instead-of-hello"))
    assert result.close is Grade.FAILED and "handshake" in result.message, _show(result)
