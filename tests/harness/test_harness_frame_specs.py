"""Every adapter's load-time check sees every place a case names a frame.

The walk is shared (conformance/protocols/frame_specs.py); these tests put one
misspelt field in each place, for each protocol, and expect the load-time
check to name that exact path.  Before the walk was shared, MTL ignored
``allow`` and ``unsupported_if`` and only rsio looked inside ``unsupported_if``.
"""

from __future__ import annotations

import pytest

from conformance.protocols import adapter_for
from conformance.protocols.frame_specs import check_frame_specs

#: A frame each protocol's check accepts as something to match.
GOOD_MATCH = {
    "stmp": {"kind": "response", "status": "ok"},
    "micromessage2": {"frame": "error"},
    "rsio": {"type": "onComplete"},
    "mc0": {"verb": "OK"},
    "mtl": {"kind": "reply", "code": 200},
}
TYPO = "no_such_field"

#: A case with frame ``m`` in one place; ``good`` fills the other places a case needs.
PLACES = {
    "expect": lambda good, m: {"steps": [{"expect": m}]},
    "any_of": lambda good, m: {"steps": [{"expect": {"any_of": [good, m]}}]},
    "all_of": lambda good, m: {"steps": [{"expect": {"all_of": [m]}}]},
    "allow": lambda good, m: {"steps": [{"expect": {**good, "allow": [m]}}]},
    "unsupported_if": lambda good, m: {"steps": [{"expect": {**good, "unsupported_if": m}}]},
    "informational_if": lambda good, m: {"steps": [{"expect": {**good, "informational_if": m}}]},
    "close_allow": lambda good, m: {"steps": [{"expect_close": {"allow": [good, m]}}]},
    "repeat": lambda good, m: {"steps": [{"repeat": {"count": 2, "steps": [{"expect": m}]}}]},
    "noise": lambda good, m: {"noise": [m], "steps": [{"expect": good}]},
}
WHERE = {
    "expect": ("steps", 0, "expect", TYPO),
    "any_of": ("steps", 0, "expect", "any_of", 1, TYPO),
    "all_of": ("steps", 0, "expect", "all_of", 0, TYPO),
    "allow": ("steps", 0, "expect", "allow", 0, TYPO),
    "unsupported_if": ("steps", 0, "expect", "unsupported_if", TYPO),
    "informational_if": ("steps", 0, "expect", "informational_if", TYPO),
    "close_allow": ("steps", 0, "expect_close", "allow", 1, TYPO),
    "repeat": ("steps", 0, "repeat", "steps", 0, "expect", TYPO),
    "noise": ("noise", 0, TYPO),
}


@pytest.mark.parametrize("protocol", sorted(GOOD_MATCH))
def test_good_frames_pass_everywhere(protocol: str) -> None:
    check = adapter_for(protocol).frame_check
    good = GOOD_MATCH[protocol]
    for place, build in PLACES.items():
        assert check(build(dict(good), dict(good))) == [], place


@pytest.mark.parametrize("place", sorted(PLACES))
@pytest.mark.parametrize("protocol", sorted(GOOD_MATCH))
def test_a_typo_is_found_in_every_place(protocol: str, place: str) -> None:
    good = GOOD_MATCH[protocol]
    case = PLACES[place](dict(good), {**good, TYPO: 1})
    problems = adapter_for(protocol).frame_check(case)
    assert [path for path, _ in problems] == [WHERE[place]], problems
    assert TYPO in problems[0][1]


def _walk(case: dict) -> list:
    return check_frame_specs(case, send=lambda s, p: [], match=lambda s, p: [])


def test_fields_beside_any_of_are_refused() -> None:
    problems = _walk({"steps": [{"expect": {"any_of": [{"a": 1}], "b": 2}}]})
    assert problems == [(("steps", 0, "expect", "b"), "field 'b' beside any_of would be ignored: put it in each alternative")]


def test_any_of_and_all_of_together_are_refused() -> None:
    problems = _walk({"steps": [{"expect": {"any_of": [{"a": 1}], "all_of": [{"a": 1}]}}]})
    assert [p for p, _ in problems] == [("steps", 0, "expect", "all_of")]


@pytest.mark.parametrize("alternative", [{"closed": True, "a": 1}, {"closed": False}])
def test_a_close_alternative_is_only_closed_true(alternative: dict) -> None:
    problems = _walk({"steps": [{"expect": {"any_of": [{"a": 1}, alternative]}}]})
    assert [p for p, _ in problems] == [("steps", 0, "expect", "any_of", 1)]


def test_a_close_alternative_is_not_checked_as_a_frame() -> None:
    seen = []
    check_frame_specs({"steps": [{"expect": {"any_of": [{"a": 1}, {"closed": True}]}}]},
                      send=lambda s, p: [], match=lambda s, p: seen.append(p) or [])
    assert seen == [("steps", 0, "expect", "any_of", 0)]


@pytest.mark.parametrize("expect", [
    {"any_of": []}, {"all_of": "x"}, {"a": 1, "allow": {"b": 1}}, {"a": 1, "save": ["x"]},
    {"any_of": ["not a mapping"]},
])
def test_malformed_option_values_are_refused(expect: dict) -> None:
    assert _walk({"steps": [{"expect": expect}]})


def test_sends_are_handed_over_with_their_path() -> None:
    seen = []
    check_frame_specs({"steps": [{"send": {"hex": "00"}}, {"repeat": {"count": 1, "steps": [{"send": {"x": 1}}]}}]},
                      send=lambda s, p: seen.append((s, p)) or [], match=lambda s, p: [])
    assert seen == [({"hex": "00"}, ("steps", 0, "send")), ({"x": 1}, ("steps", 1, "repeat", "steps", 0, "send"))]


# -- expectations that would match anything (issue 14 item 7) ------------------

@pytest.mark.parametrize("expect, where", [
    ({"within_ms": 500}, ("steps", 0, "expect")),
    ({"within_ms": 500, "level": "SHOULD"}, ("steps", 0, "expect")),
    ({"closed": True, "a": 1}, ("steps", 0, "expect", "closed")),
    ({"closed": False}, ("steps", 0, "expect", "closed")),
    ({"closed": True, "any_of": [{"a": 1}]}, ("steps", 0, "expect", "closed")),
    ({"a": {}}, ("steps", 0, "expect", "a")),
    ({"any_of": [{"a": 1}, {}]}, ("steps", 0, "expect", "any_of", 1)),
    ({"all_of": [{"a": 1}, {"b": {}}]}, ("steps", 0, "expect", "all_of", 1, "b")),
    ({"a": 1, "allow": [{}]}, ("steps", 0, "expect", "allow", 0)),
    ({"a": 1, "unsupported_if": {}}, ("steps", 0, "expect", "unsupported_if")),
])
def test_an_expect_must_constrain_something(expect: dict, where: tuple) -> None:
    problems = _walk({"steps": [{"expect": expect}]})
    assert where in [p for p, _ in problems], problems


def test_closed_true_alone_is_an_expected_close() -> None:
    assert _walk({"steps": [{"expect": {"closed": True, "within_ms": 500}}]}) == []


def test_empty_noise_matches_anything_and_is_refused() -> None:
    problems = _walk({"noise": [{}], "steps": [{"expect": {"a": 1}}]})
    assert [p for p, _ in problems] == [("noise", 0)]


def test_fields_compared_whole_may_be_empty() -> None:
    problems = check_frame_specs({"steps": [{"expect": {"body": {}}}]}, send=lambda s, p: [],
                                 match=lambda s, p: [], exact_fields=("body",))
    assert problems == []
    mtl = adapter_for("mtl").frame_check({"steps": [{"expect": {"kind": "reply", "code": 200, "properties": {}}}]})
    assert mtl == []


@pytest.mark.parametrize("steps", [
    [],
    [{"send": {"a": 1}}],
    [{"send": {"a": 1}}, {"sleep_ms": 100}],
    [{"repeat": {"count": 2, "steps": [{"send": {"a": 1}}]}}],
])
def test_a_case_that_expects_nothing_is_refused(steps: list) -> None:
    problems = _walk({"steps": steps})
    assert [p for p, _ in problems] == [("steps",)], problems


@pytest.mark.parametrize("case", [
    {"steps": [{"send": {"a": 1}}, {"expect_close": {"within_ms": 100}}]},
    {"steps": [{"expect_silence": {"within_ms": 100}}]},
    {"steps": [{"macro": "handshake"}]},
    {"steps": [{"repeat": {"count": 1, "steps": [{"expect": {"a": 1}}]}}]},
    {"client_exit": 0, "steps": [{"send": {"a": 1}}]},
])
def test_a_case_with_any_graded_step_is_accepted(case: dict) -> None:
    assert _walk(case) == []


def test_a_range_with_no_bounds_matches_nothing() -> None:
    from conformance.protocols.base import _in_range
    ok, why = _in_range("status", 0, {})
    assert not ok and "status" in why
