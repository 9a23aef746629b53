"""Hostile rsio targets: every case ends within its deadline with a FAILED grade that says why.

FAILED, not ERROR: the target is reachable and misbehaves, so the harness judges it; ERROR
is for a case that could not run at all (nothing listening).
"""

from __future__ import annotations

import asyncio

import pytest

from hostile_targets import SCRIPTS, cases_of, check, run_against_reference, run_behaviours
from suite_helpers import Grade, run_case

PROTOCOL = "rsio"
CASES = ["rsio/handshake/version-0", "rsio/ack-wrap/initial-demand-exact", "rsio/split-message/large-element-joined"]
DEADLINE_MS = 2000
SLACK_S = 3.0

EXPECTED = {
    "silent": r"no verdict within the case deadline of 2000 ms",
    "drip": r"no verdict within the case deadline of 2000 ms",
    # onNextPart after onNextPart of one element: refused once the element passes the harness limit
    "endless": r"not valid: element-too-large: a split element over 67108864 bytes",
    "garbage": r"not valid: varint-too-large",
    # onNext whose element length is the largest varint allowed, 2^63-1
    "announce-max": r"not valid: too-large: a field of 9223372036854775807 bytes exceeds max_message",
    # ... and a 10-byte varint of 2^63, one past it
    "announce-over": r"not valid: varint-too-large",
    "reset-mid-frame": r"the target closed the connection while the suite waited for \{type: (onNext|element)",
    "http": r"not valid: unknown-extension-type: type 72",  # "H"
    "foreign": r"not valid: unknown-extension-type",  # a Micromessage2 handshake
}


def test_every_behaviour_is_covered() -> None:
    assert set(EXPECTED) == set(SCRIPTS[PROTOCOL])


# behaviours that can only end at the case deadline run together, sharing it
SLOW = ("silent", "drip")
GROUPS = [SLOW] + [(b,) for b in sorted(EXPECTED) if b not in SLOW]


@pytest.mark.parametrize("behaviours", GROUPS, ids="+".join)
def test_hostile_target_gets_a_clear_failed_grade_within_the_deadline(behaviours: tuple[str, ...]) -> None:
    async def run():
        outcomes = await run_behaviours(PROTOCOL, behaviours, CASES, DEADLINE_MS)
        return outcomes, await run_against_reference(PROTOCOL, CASES[0])

    runs, after = asyncio.run(run())
    assert after.grade is Grade.PASSED, after.message  # the harness goes on to the next case unharmed
    for behaviour, outcomes in runs.items():
        check(outcomes, Grade.FAILED, EXPECTED[behaviour], DEADLINE_MS, SLACK_S)
        if behaviour == "endless":
            assert all(o.bytes_sent > 64 * 1024 * 1024 for o in outcomes)
        if behaviour.startswith("announce"):
            assert all(o.elapsed < 2 and o.bytes_sent < 1024 * 1024 for o in outcomes)


def test_a_target_that_is_gone_is_an_error_not_a_failure() -> None:
    async def run():
        server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        url = f"tcp://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        server.close()
        await server.wait_closed()
        return await run_case(cases_of(PROTOCOL)[CASES[0]], url)

    result = asyncio.run(run())
    assert result.grade is Grade.ERROR and "cannot connect" in result.message, (result.grade, result.message)
