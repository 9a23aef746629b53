"""``unsupported_if`` and ``informational_if`` beside ``all_of`` grade as they do beside a single
frame: the reference STMP server accepts version 0.1, so a step that wants VersionNotSupported
(status 0x35) and declares an OK answer UNSUPPORTED or INFORMATIONAL gets that grade, not FAILED."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from conformance.protocols import adapter_for
from conformance.scenario.loader import load_file
from conformance.selftest.buggy_stmp import BuggyStmpServer
from suite_helpers import Grade, run_case

SCENARIO = """\
protocol: stmp
family: handshake
spec_file: stmp.txt
defaults:
  transports: [tcp]
cases:
  - id: stmp/handshake/declared-beside-all-of
    title: all_of with a declared answer
    section: Version negotiation
    spec: "the Ok payload is the selected protocol version"
    requirement: MUST
    steps:
      - send: {kind: request, id: 0, action: 0, encoding: raw, versions: ["0.1"]}
      - expect:
          all_of: [{kind: response, id: 0, status: versionnotsupported}]
          DECLARED: {kind: response, id: 0, status: ok}
"""


@pytest.mark.parametrize("declared,grade", [("unsupported_if", Grade.UNSUPPORTED),
                                            ("informational_if", Grade.INFORMATIONAL)])
def test_a_declared_answer_beside_all_of_gets_its_grade(tmp_path: Path, declared: str, grade: Grade) -> None:
    path = tmp_path / "declared.yaml"
    path.write_text(SCENARIO.replace("DECLARED", declared))
    (case,) = load_file(path, adapter_for("stmp").frame_check).cases

    async def main():
        server = await BuggyStmpServer(None).start()
        try:
            return await run_case(case, server.url)
        finally:
            await server.close()

    result = asyncio.run(main())
    assert result.grade is grade, (result.grade, result.message)
