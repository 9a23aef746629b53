"""Hostile mc0 (ZMTP/CURVE) targets: every case ends within its deadline with a FAILED grade that says why.

The suite's side of ZMTP is a session (conformance/protocols/mc0.py): what it cannot accept
ends its ZMTP connection and shows as "the suite's ZMTP side gave up: <code>".  FAILED, not
ERROR: the target is reachable and misbehaves; ERROR is for a case that could not run at all.
"""

from __future__ import annotations


import pytest

from hostile_targets import SCRIPTS, gone_target_grade, grade_behaviours
from suite_helpers import Grade

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


# The CURVE flood is paced and both ends encrypt in this one process, so what it gets out in the
# deadline follows the machine: 510 to 680 KiB on a slow one.  128 KiB is still some 1,800 NOOPs,
# each decrypted and dropped, far past any buffer: the suite kept reading to the end.
ENDLESS_MIN_BYTES = 128 * 1024


@pytest.mark.parametrize("behaviours", GROUPS, ids="+".join)
def test_hostile_target_gets_a_clear_failed_grade_within_the_deadline(behaviours: tuple[str, ...]) -> None:
    grade_behaviours(PROTOCOL, behaviours, CASES, EXPECTED, deadline_ms=DEADLINE_MS, slack_s=SLACK_S,
                     endless_min_bytes=ENDLESS_MIN_BYTES, refused_at_once=lambda b: b.startswith("announce"))


def test_a_target_that_is_gone_is_an_error_not_a_failure() -> None:
    result = gone_target_grade(PROTOCOL, CASES[0])
    assert result.grade is Grade.ERROR and "cannot connect" in result.message, (result.grade, result.message)
