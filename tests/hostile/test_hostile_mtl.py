"""Hostile 11/MTL (ZMTP/NULL) targets: every case ends within its deadline with a FAILED grade that says why.

FAILED, not ERROR: the target is reachable and misbehaves; ERROR is for a case that could
not run at all (nothing listening).
"""

from __future__ import annotations


import pytest

from hostile_targets import SCRIPTS, gone_target_grade, grade_behaviours
from suite_helpers import Grade

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
    grade_behaviours(PROTOCOL, behaviours, CASES, EXPECTED, deadline_ms=DEADLINE_MS, slack_s=SLACK_S,
                     endless_min_bytes=1024 * 1024, refused_at_once=lambda b: b.startswith("announce"))


def test_a_target_that_is_gone_is_an_error_not_a_failure() -> None:
    result = gone_target_grade(PROTOCOL, CASES[0])
    assert result.grade is Grade.ERROR and "cannot connect" in result.message, (result.grade, result.message)
