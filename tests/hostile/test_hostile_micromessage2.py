"""Hostile Micromessage2 targets: every case ends within its deadline with a FAILED grade that says why.

FAILED, not ERROR: the target is reachable and answered (or did not) as no conformant server
would, so the harness judges it.  ERROR is for a case that could not run at all (nothing
listening), checked last.
"""

from __future__ import annotations

import asyncio

import pytest

from hostile_targets import SCRIPTS, cases_of, check, run_against_reference, run_behaviours
from suite_helpers import Grade, run_case

PROTOCOL = "micromessage2"
CASES = ["micromessage2/handshake/same-version", "micromessage2/split-message/payload-256",
         "micromessage2/pubsub/subscribe-then-publish"]
DEADLINE_MS = 2000
SLACK_S = 3.0  # the chunk in flight when the deadline passes, and the close, on a loaded machine

EXPECTED = {
    "silent": r"no verdict within the case deadline of 2000 ms",
    "drip": r"no verdict within the case deadline of 2000 ms",
    # CONTINUED fragments of one MESSAGE, without end: refused once they join past the harness limit
    "endless": r"not valid: too-large: fragments join to more than the harness limit of 67108864 bytes",
    "garbage": r"not valid: non-ascii",
    "announce-max": r"not valid: too-large: payload length 4294967295 exceeds the limit",
    "reset-mid-frame": r"the target closed the connection while the suite waited for \{frame: message",
    "http": r"not valid: foreign-protocol: the target answered with HTTP \('HTTP/1.1 400 Bad Request'\)",
    "foreign": r"expected \{frame: handshake, major: 1.*got MM2 handshake 232\.0 .*major is 0xe8, expected 1",
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
            assert all(o.bytes_sent > 64 * 1024 * 1024 for o in outcomes)  # the target really flooded
        if behaviour == "announce-max":
            # refused from the length field alone: at once, without waiting for (or buffering) the 4 GiB
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
