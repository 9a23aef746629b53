"""`expect: {closed: true}` means the connection closed, not "whatever came next"."""

from __future__ import annotations

import textwrap
from pathlib import Path

from conformance.protocols import adapter_for
from conformance.scenario.loader import Case, load_file
from tests.harness.suite_helpers import Grade, asyncio, run_case
from conformance.targets import RefTarget

CASE = """\
protocol: stmp
family: handshake
cases:
  - id: stmp/handshake/x
    title: the server answers a good negotiation and stays open
    spec: s
    requirement: MUST
    steps:
      - send: {kind: request, id: 0, action: 0, encoding: raw, versions: ["0.1"]}
      - expect: {closed: true, within_ms: 1500}
"""


def test_a_frame_where_a_close_is_expected_is_not_a_close(tmp_path: Path) -> None:
    path = tmp_path / "scenarios" / "stmp" / "handshake.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(textwrap.dedent(CASE))
    (case,) = load_file(path, adapter_for("stmp").frame_check).cases
    assert isinstance(case, Case), case
    target = RefTarget()
    try:
        # the reference server answers the negotiation: a response frame, not a close
        result = asyncio.run(run_case(case, target.endpoint("stmp", "tcp")))
    finally:
        target.close()
    assert result.grade is Grade.FAILED, result.message
