from __future__ import annotations

import pytest

from conformance.grading import Grade, grade_for_violation, worst
from conformance.scenario.values import (
    UNIQUE_SUFFIX, ValueError_, build_payload, evaluate, millis, pattern_bytes, payload_matches, unique_payloads,
)


def test_expressions_are_integer_arithmetic_only() -> None:
    assert evaluate("= i % 65535 + 1", {"i": 65535}) == 1
    assert evaluate("=(i+2)*3", {"i": 1}) == 9
    with pytest.raises(ValueError_):
        evaluate("= __import__('os')", {})
    with pytest.raises(ValueError_):
        evaluate("= j", {"i": 1})


def test_millis_reads_target_parameters() -> None:
    assert millis(250, {}) == 250
    assert millis("heartbeat_timeout_ms + 2000", {"heartbeat_timeout_ms": 3000}) == 5000
    with pytest.raises(ValueError_, match="unknown target parameter"):
        millis("nope", {"heartbeat_timeout_ms": 1})


def test_payload_forms() -> None:
    assert build_payload("h\u00e9") == b"h\xc3\xa9"
    assert build_payload({"hex": "00 ff"}) == b"\x00\xff"
    assert pattern_bytes(3, offset=254) == b"\xfe\xff\x00"
    assert build_payload({"size": 258})[255:] == b"\xff\x00\x01"
    assert payload_matches({"len": 2}, b"ab")[0]
    ok, why = payload_matches({"hex": "aa"}, b"\xab")
    assert not ok and "expected aa" in why


def test_unique_payloads_belong_to_one_run_of_a_case() -> None:
    with unique_payloads("mtl/ack-wrap/confirm-multiple"):
        first = build_payload({"unique": "one"})
        assert build_payload({"unique": "one"}) == first  # the expect matches what the send wrote
        assert payload_matches({"unique": "one"}, first)[0]
    with unique_payloads("mtl/ack-wrap/confirm-multiple"):
        again = build_payload({"unique": "one"})
    assert first.startswith(b"one [mtl/ack-wrap/confirm-multiple ") and len(first) == len(again) and first != again
    assert UNIQUE_SUFFIX.search(first) and UNIQUE_SUFFIX.search(again)
    # outside a case: still unique to the process; a case id with spaces or brackets still frames
    assert UNIQUE_SUFFIX.search(build_payload({"unique": "x"}))
    with unique_payloads("a b]c"):
        assert build_payload({"unique": "x"}).startswith(b"x [a_b_c ")
    assert not UNIQUE_SUFFIX.search(b"one [mtl/ack-wrap/confirm-multiple]")


def test_grades() -> None:
    assert grade_for_violation("MUST") is Grade.FAILED
    assert grade_for_violation("SHOULD") is Grade.NON_STRICT
    assert grade_for_violation("MAY") is Grade.INFORMATIONAL
    assert worst(Grade.PASSED, None, Grade.NON_STRICT) is Grade.NON_STRICT
    assert Grade.NON_STRICT.is_failure(strict=True) and not Grade.NON_STRICT.is_failure(strict=False)


def test_millis_does_arithmetic_over_target_parameters() -> None:
    params = {"heartbeat_interval_ms": 5000, "heartbeat_timeout_ms": 15000}
    assert millis("= 4 * heartbeat_interval_ms + 10000", params) == 30000
    assert millis("= (heartbeat_timeout_ms - heartbeat_interval_ms) * 2", params) == 20000
    with pytest.raises(ValueError_, match="unknown name 'redeliver_ms'"):
        millis("= redeliver_ms + 1", params)
    with pytest.raises(ValueError_, match="only integer arithmetic"):
        millis("= heartbeat_interval_ms ** 99", params)
