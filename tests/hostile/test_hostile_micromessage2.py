"""Hostile Micromessage2 targets: every case ends within its deadline with a FAILED grade that says why.

FAILED, not ERROR: the target is reachable and answered (or did not) as no conformant server
would, so the harness judges it.  ERROR is for a case that could not run at all (nothing
listening), checked last.
"""

from __future__ import annotations


import pytest

from hostile_targets import SCRIPTS, gone_target_grade, grade_behaviours
from suite_helpers import Grade

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
    grade_behaviours(PROTOCOL, behaviours, CASES, EXPECTED, deadline_ms=DEADLINE_MS, slack_s=SLACK_S,
                     endless_min_bytes=64 * 1024 * 1024, refused_at_once=lambda b: b == "announce-max")


def test_a_target_that_is_gone_is_an_error_not_a_failure() -> None:
    result = gone_target_grade(PROTOCOL, CASES[0])
    assert result.grade is Grade.ERROR and "cannot connect" in result.message, (result.grade, result.message)
