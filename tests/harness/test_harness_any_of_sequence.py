"""An ``any_of`` alternative that is a list is a sequence: its first frame chooses it and the rest
must follow in order, with the expect's level, wait and ``allow`` list (e.g. RSocket's "the echo with
C, or the echo and then a PAYLOAD with C alone").

The target is hand-written STMP bytes from a socket: ``c0 12 34 XX`` is a Response, ID 0x1234,
STATUS XX, ENCODING 0 (the authors' own codec test gives ``c0 12 34 32`` as ``3|0|4660|50``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_harness_close_allow import _case, _run

from conformance.grading import Grade
from conformance.protocols.frame_specs import check_frame_specs

GATEWAY_TIMEOUT = bytes.fromhex("c0123432")
BAD_REQUEST = bytes.fromhex("c0123420")
UNAVAILABLE = bytes.fromhex("c0123426")

EXPECT = """\
- expect:
    within_ms: 1000
    any_of:
      - {kind: response, status: 0x32}
      - - {kind: response, status: 0x20}
        - {kind: response, status: 0x32}
"""


@pytest.mark.parametrize("sends", [GATEWAY_TIMEOUT, BAD_REQUEST + GATEWAY_TIMEOUT], ids=["single", "sequence"])
def test_either_the_single_frame_or_the_whole_sequence_passes(tmp_path: Path, sends: bytes) -> None:
    result = _run(_case(tmp_path, EXPECT), sends, then_close=False, linger=0)
    assert result.grade is Grade.PASSED, result.message


def test_a_sequence_cut_short_fails(tmp_path: Path) -> None:
    result = _run(_case(tmp_path, EXPECT), BAD_REQUEST)
    assert result.grade is Grade.FAILED and "closed the connection" in result.message, result.message


def test_a_sequence_whose_second_frame_is_another_fails(tmp_path: Path) -> None:
    result = _run(_case(tmp_path, EXPECT), BAD_REQUEST + BAD_REQUEST, then_close=False)
    assert result.grade is Grade.FAILED and "expected" in result.message, result.message


def test_the_rest_of_a_sequence_takes_the_expects_allow_list(tmp_path: Path) -> None:
    allowing = EXPECT.replace("within_ms: 1000", "within_ms: 1000\n    allow: [{kind: response, status: 0x26}]")
    sends = BAD_REQUEST + UNAVAILABLE + GATEWAY_TIMEOUT
    assert _run(_case(tmp_path, allowing), sends, then_close=False).grade is Grade.PASSED
    assert _run(_case(tmp_path, EXPECT), sends, then_close=False).grade is Grade.FAILED


@pytest.mark.parametrize("sequence,where", [
    ([{"kind": "response", "status": 0x20}], ("steps", 0, "expect", "any_of", 1)),
    ([{"kind": "response", "status": 0x20}, "not a frame"], ("steps", 0, "expect", "any_of", 1, 1)),
])
def test_a_sequence_of_one_frame_or_of_a_non_frame_is_refused(sequence, where) -> None:
    case = {"steps": [{"expect": {"any_of": [{"kind": "response", "status": 0x32}, sequence]}}]}
    problems = check_frame_specs(case, send=lambda s, p: [], match=lambda s, p: [])
    assert [p for p, _ in problems] == [where], problems
