"""Hostile rsio targets: every case ends within its deadline with a FAILED grade that says why.

FAILED, not ERROR: the target is reachable and misbehaves, so the harness judges it; ERROR
is for a case that could not run at all (nothing listening).
"""

from __future__ import annotations


import pytest

from hostile_targets import SCRIPTS, gone_target_grade, grade_behaviours
from suite_helpers import Grade

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
    grade_behaviours(PROTOCOL, behaviours, CASES, EXPECTED, deadline_ms=DEADLINE_MS, slack_s=SLACK_S,
                     endless_min_bytes=64 * 1024 * 1024, refused_at_once=lambda b: b.startswith("announce"))


def test_a_target_that_is_gone_is_an_error_not_a_failure() -> None:
    result = gone_target_grade(PROTOCOL, CASES[0])
    assert result.grade is Grade.ERROR and "cannot connect" in result.message, (result.grade, result.message)
