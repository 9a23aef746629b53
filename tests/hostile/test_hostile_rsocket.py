"""Hostile RSocket targets: every case ends within its deadline with a FAILED grade that says why.

FAILED, not ERROR: the target is reachable and misbehaves, so the harness judges it; ERROR
is for a case that could not run at all (nothing listening).
"""

from __future__ import annotations

import pytest

from hostile_targets import SCRIPTS, gone_target_grade, grade_behaviours
from suite_helpers import Grade

PROTOCOL = "rsocket"
CASES = ["rsocket/handshake/setup-then-request", "rsocket/ack-wrap/initial-n-exact",
         "rsocket/split-message/request-fragmented"]
DEADLINE_MS = 2000
SLACK_S = 3.0

EXPECTED = {
    "silent": r"no verdict within the case deadline of 2000 ms",
    "drip": r"no verdict within the case deadline of 2000 ms",
    # PAYLOAD fragments (F set) of one message, forever: refused once the message passes the harness limit
    "endless": r"not valid: fragmented-message-too-large: over 67108864 bytes",
    # 0xffffff is the largest legal length: the frame it announces is an EXT whose extended type has its
    # reserved top bit set
    "garbage": r"not valid: reserved-bit-set",
    # the largest legal frame length, then a trickle: nothing wrong until the deadline
    "announce-max": r"no verdict within the case deadline of 2000 ms",
    # a frame length of 3, shorter than the 6 header bytes
    "announce-short": r"not valid: frame-too-short",
    "reset-mid-frame": r"the target closed the connection while the suite waited for \{type: PAYLOAD",
    # "HTT" read as a frame length of 4,740,180 bytes that never come
    "http": r"no verdict within the case deadline of 2000 ms",
    # a Micromessage2 handshake: its first bytes (01 00 00) read as a frame length of 65,536 that never comes
    "foreign": r"no verdict within the case deadline of 2000 ms",
}


def test_every_behaviour_is_covered() -> None:
    assert set(EXPECTED) == set(SCRIPTS[PROTOCOL])


# behaviours that can only end at the case deadline run together, sharing it
SLOW = ("silent", "drip", "announce-max", "http", "foreign")
GROUPS = [SLOW] + [(b,) for b in sorted(EXPECTED) if b not in SLOW]


@pytest.mark.parametrize("behaviours", GROUPS, ids="+".join)
def test_hostile_target_gets_a_clear_failed_grade_within_the_deadline(behaviours: tuple[str, ...]) -> None:
    grade_behaviours(PROTOCOL, behaviours, CASES, EXPECTED, deadline_ms=DEADLINE_MS, slack_s=SLACK_S,
                     endless_min_bytes=64 * 1024 * 1024, refused_at_once=lambda b: b == "announce-short")


def test_a_target_that_is_gone_is_an_error_not_a_failure() -> None:
    result = gone_target_grade(PROTOCOL, CASES[0])
    assert result.grade is Grade.ERROR and "cannot connect" in result.message, (result.grade, result.message)
