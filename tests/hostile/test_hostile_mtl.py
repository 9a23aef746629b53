"""Hostile 11/MTL (ZMTP/NULL) targets: every case ends within its deadline with a FAILED grade that says why.

FAILED, not ERROR: the target is reachable and misbehaves; ERROR is for a case that could
not run at all (nothing listening).
"""

from __future__ import annotations

import asyncio

import pytest

from hostile_targets import SCRIPTS, cases_of, check, run_against_reference, run_behaviours
from suite_helpers import Grade, run_case

PROTOCOL = "mtl"
CASES = ["mtl/handshake/plain-good", "mtl/handshake/open-first", "mtl/extension-index/profiles-listed"]
DEADLINE_MS = 2000
SLACK_S = 3.0
WAITED = r"no verdict within the case deadline of 2000 ms"

EXPECTED = {
    "silent": WAITED,
    "drip": WAITED,
    "partial-greeting": WAITED,
    # a NULL greeting and READY, then ZMTP PING after PING: declared noise, never the answer
    "endless": WAITED,
    "garbage": r"not valid: bad-mechanism",
    "announce-max": r"not valid: too-large: frame of 9223372036854775807 octets exceeds the limit",
    "announce-over": r"not valid: bad-size: long size 9223372036854775808 exceeds 2\^63-1",
    "reset-mid-frame": r"the target closed the connection while the suite waited for \{kind: command, command: READY",
    "http": r"not valid: bad-signature: first octet is not ff",
    "foreign": r"not valid: bad-signature: first octet is not ff",  # a Micromessage2 handshake
}


def test_every_behaviour_is_covered() -> None:
    assert set(EXPECTED) == set(SCRIPTS[PROTOCOL])


# behaviours that can only end at the case deadline run together, sharing it
SLOW = ("silent", "drip", "partial-greeting", "endless")
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
            assert all(o.bytes_sent > 1024 * 1024 for o in outcomes)
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
