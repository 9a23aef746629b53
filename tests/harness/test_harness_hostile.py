"""Hostile targets end every case within its deadline, with a clear grade and bounded memory."""

from __future__ import annotations

import asyncio
import dataclasses
import resource
import time

import pytest

from hostile import BEHAVIOURS, HostileServer
from suite_helpers import Grade, all_cases, run_case

CASES = all_cases("stmp")
PROBES = ["stmp/handshake/one-version", "stmp/handshake/version-unsupported", "stmp/ack-wrap/id-max"]
CASE_DEADLINE_MS = 8000


async def _run(behaviour: str, case_id: str):
    server = await HostileServer(behaviour).start()
    case = dataclasses.replace(CASES[case_id], timeout_ms=CASE_DEADLINE_MS)
    try:
        started = time.monotonic()
        result = await run_case(case, server.url)
        return result, time.monotonic() - started, server.bytes_sent
    finally:
        await server.close()


@pytest.mark.parametrize("behaviour", BEHAVIOURS)
def test_hostile_target_gets_a_grade_within_the_deadline(behaviour: str) -> None:
    # one probe after another: the targets flood from this process's own event loop, so three floods
    # at once measure who gets the CPU (on a slow machine three endless-pings cases at once, taking
    # turns through 64 KiB backlogs of one-byte pings, ended their 5 s waits after 10.4 to 10.6 s;
    # one at a time, after 6.4 to 6.8 s)
    for case_id in PROBES:
        result, elapsed, _ = asyncio.run(_run(behaviour, case_id))
        assert result.grade is Grade.FAILED, (case_id, result.grade, result.message)
        assert elapsed < CASE_DEADLINE_MS / 1000 + 2, (case_id, elapsed)
        assert result.message  # says why, e.g. "waited 5000 ms" or "not valid: too-large"


def test_a_4gib_length_prefix_is_refused_at_once_without_buffering() -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result, elapsed, _ = asyncio.run(_run("announce-4gib", "stmp/handshake/one-version"))
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert "too-large" in result.message
    assert elapsed < 2
    assert grown_kib < 64 * 1024


def test_endless_bytes_do_not_grow_memory() -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result, _, sent = asyncio.run(_run("endless-pings", "stmp/handshake/one-version"))
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert sent > 1_000_000  # the target really flooded the suite
    assert "nothing arrived" in result.message  # pings are noise; the answer never came
    assert grown_kib < 64 * 1024


def test_garbage_is_reported_as_invalid_bytes() -> None:
    result, _, _ = asyncio.run(_run("endless-garbage", "stmp/handshake/one-version"))
    assert "not valid" in result.message
