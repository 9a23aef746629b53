"""Broken scenario files get errors naming file, line and field; the rest still loads."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from conformance.protocols import adapter_for
from conformance.scenario.loader import BrokenCase, Case, ScenarioError, load_file

def write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "scenarios" / "stmp" / "handshake.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(body))
    return path


def load(path: Path):
    return load_file(path, adapter_for("stmp").frame_check)


def test_yaml_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, "protocol: stmp\nfamily: handshake\ncases:\n  - id: x\n    title: a: b\n")
    with pytest.raises(ScenarioError, match=rf"{path}:5: not valid YAML"):
        load(path)


def test_missing_top_level_field(tmp_path: Path) -> None:
    path = write(tmp_path, "protocol: stmp\ncases: []\n")
    with pytest.raises(ScenarioError, match=r"handshake.yaml:1: field \(top level\): 'family' is a required property"):
        load(path)


def test_bad_case_is_reported_and_the_others_load(tmp_path: Path) -> None:
    path = write(tmp_path, """\
        protocol: stmp
        family: handshake
        cases:
          - id: stmp/handshake/bad
            title: no requirement level here
            spec: "x"
            requirement: MUSTY
            steps:
              - macro: negotiate
          - id: stmp/handshake/good
            title: fine
            spec: "quoted"
            requirement: MUST
            steps:
              - macro: negotiate
        """)
    loaded = load(path)
    broken, good = loaded.cases
    assert isinstance(broken, BrokenCase) and isinstance(good, Case)
    assert broken.error.startswith(f"{path}:7: field cases/0/requirement:")
    assert "MUSTY" in broken.error


def test_unknown_frame_field_names_the_step(tmp_path: Path) -> None:
    path = write(tmp_path, """\
        protocol: stmp
        family: handshake
        cases:
          - id: stmp/handshake/typo
            title: a typo in a frame field
            spec: "x"
            requirement: MUST
            steps:
              - send: {kind: request, id: 1, actoin: 5}
        """)
    (case,) = load(path).cases
    assert isinstance(case, BrokenCase)
    assert f"{path}:9: field cases/0/steps/0/send/actoin: unknown STMP field 'actoin'" in case.error


def test_step_with_two_verbs(tmp_path: Path) -> None:
    path = write(tmp_path, """\
        protocol: stmp
        family: handshake
        cases:
          - id: stmp/handshake/two
            title: two verbs
            spec: "x"
            requirement: MUST
            steps:
              - send: {kind: ping}
                expect: {kind: ping}
        """)
    (case,) = load(path).cases
    assert isinstance(case, BrokenCase)
    assert ":9: field cases/0/steps/0: a step needs exactly one of" in case.error


def test_case_id_must_follow_protocol_and_family(tmp_path: Path) -> None:
    path = write(tmp_path, """\
        protocol: stmp
        family: handshake
        cases:
          - id: stmp/other/thing
            title: wrong family
            spec: "x"
            requirement: MUST
            steps:
              - macro: negotiate
        """)
    (case,) = load(path).cases
    assert "must start with 'stmp/handshake/'" in case.error


def test_every_shipped_scenario_loads_cleanly() -> None:
    from conformance.paths import scenarios_dir
    from conformance.protocols import available
    for protocol in available():
        for path in sorted((scenarios_dir() / protocol).glob("*.yaml")):
            for case in load_file(path, adapter_for(protocol).frame_check).cases:
                assert isinstance(case, Case), case.error


@pytest.mark.parametrize("timeout, ok", [
    (20000, True), ('"= 4 * heartbeat_interval_ms + 9000"', True), ("heartbeat_timeout_ms + 2000", True),
    (50, False), ('"= open(1)"', False), ('"2 seconds"', False),
])
def test_a_case_deadline_may_follow_the_target_timers(tmp_path: Path, timeout, ok: bool) -> None:
    path = write(tmp_path, f"""\
        protocol: stmp
        family: handshake
        cases:
          - id: stmp/handshake/x
            title: t
            spec: s
            requirement: MUST
            timeout_ms: {timeout}
            steps:
              - send: {{hex: "00"}}
              - expect_close: {{within_ms: 100}}
        """)
    (case,) = load(path).cases
    assert isinstance(case, Case) is ok, case
    if not ok:
        assert "timeout_ms" in case.error


def test_a_default_requirement_is_refused_not_silently_ignored(tmp_path: Path) -> None:
    # Every case states its own level (the loader never read defaults.requirement): a file-wide
    # default would look like it applies while each case's own level is what gets graded.
    path = write(tmp_path, """\
        protocol: stmp
        family: handshake
        defaults: {requirement: SHOULD}
        cases: []
        """)
    with pytest.raises(ScenarioError, match=r"handshake.yaml:3: .*'requirement' was unexpected"):
        load(path)
