"""Hostile mc0 (ZMTP/CURVE) targets: every case ends within its deadline with a FAILED grade that says why.

The suite's side of ZMTP is a session (conformance/protocols/mc0.py): what it cannot accept
ends its ZMTP connection and shows as "the suite's ZMTP side gave up: <code>".  FAILED, not
ERROR: the target is reachable and misbehaves; ERROR is for a case that could not run at all.
"""

from __future__ import annotations

import asyncio

import pytest

from hostile_targets import SCRIPTS, cases_of, check, run_against_reference, run_behaviours
from suite_helpers import Grade, run_case

PROTOCOL = "mc0"
CASES = ["mc0/handshake/curve-test-key", "mc0/ack-wrap/noop-id", "mc0/pubsub/put-reaches-subscriber"]
DEADLINE_MS = 2000
SLACK_S = 3.0
WAITED = r"no verdict within the case deadline of 2000 ms"

EXPECTED = {
    "silent": WAITED,
    "drip": WAITED,  # the greeting, one octet a second
    "partial-greeting": WAITED,  # signature and major version, then nothing
    # a real CURVE handshake with the test key, then NOOP after NOOP: declared noise, never the answer
    "endless": WAITED,
    "garbage": r"gave up: bad-mechanism",
    "announce-max": r"gave up: too-large \(frame of 9223372036854775807 octets exceeds the limit",
    "announce-over": r"gave up: bad-size \(long size 9223372036854775808 exceeds 2\^63-1\)",
    "reset-mid-frame": r"the target closed the connection while the suite waited for \{zmtp: ready",
    "http": r"gave up: bad-signature \(first octet is not ff",
    "foreign": r"gave up: bad-signature \(first octet is not ff",  # an STMP response
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
            assert all(o.bytes_sent > 512 * 1024 for o in outcomes)  # thousands of NOOPs, each decrypted by the suite
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
