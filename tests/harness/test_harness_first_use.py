"""What a first-time user types: unknown protocols, the vector checker's output, pytest on any path."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conformance.registry import NAMES

ROOT = Path(__file__).resolve().parents[2]
CONFORMANCE = [sys.executable, "-m", "conformance.cli"]
PROTOCOLS = NAMES
assert {"stmp", "micromessage2", "rsio", "mc0", "mtl", "rsocket"} <= set(PROTOCOLS)

# One STMP case, written the way a user would keep their own cases: in a folder not named scenarios.
OWN_CASE = """\
protocol: stmp
family: mine
spec_file: stmp.txt
cases:
  - id: stmp/mine/one-version
    title: The client offers 0.1 and the server accepts it
    section: Version negotiation
    spec: "the Ok payload is the selected protocol version"
    requirement: MUST
    transports: [tcp]
    steps:
      - send: {kind: request, id: 0, action: 0, encoding: raw, versions: ["0.1"]}
      - expect: {kind: response, id: 0, status: ok, encoding: raw, versions: ["0.1"]}
"""


def run(args: list[str], cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_cases_of_an_unknown_protocol_is_a_usage_error_listing_the_protocols() -> None:
    result = run(CONFORMANCE + ["cases", "foo"])
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "'foo'" in lines[0], result.stderr
    assert all(protocol in lines[0] for protocol in PROTOCOLS)
    assert result.stdout == ""


def test_run_of_an_unknown_protocol_lists_the_protocols(tmp_path: Path) -> None:
    result = run(CONFORMANCE + ["run", "foo", "--out", str(tmp_path)])
    assert result.returncode == 2
    assert "'foo'" in result.stderr and all(protocol in result.stderr for protocol in PROTOCOLS)


def test_vectors_check_prints_one_line_per_file_and_every_vector_with_v() -> None:
    files = sorted((ROOT / "vectors" / "stmp").glob("*.json"))
    assert len(files) >= 2
    brief = run(CONFORMANCE + ["vectors", "check", "vectors/stmp"])
    assert brief.returncode == 0, brief.stdout[-2000:]
    lines = brief.stdout.strip().splitlines()
    # one line per file, then the total
    assert len(lines) == len(files) + 1, lines[:5]
    for line, path in zip(lines, files):
        assert line.startswith("ok") and path.name in line and " 0 failed" in line
    assert lines[-1].startswith("vectors: ")
    verbose = run(CONFORMANCE + ["vectors", "check", "-v", "vectors/stmp"])
    total = int(lines[-1].split()[1])
    assert len(verbose.stdout.strip().splitlines()) == total + len(files) + 1


def test_pytest_collects_a_scenario_file_given_by_any_path(tmp_path: Path) -> None:
    own = tmp_path / "my-cases" / "handshake.yaml"
    own.parent.mkdir()
    own.write_text(OWN_CASE)
    result = run([sys.executable, "-m", "pytest", str(own), "-q", "-p", "no:cacheprovider"], cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-2000:]
    assert "1 passed" in result.stdout


def test_a_folder_yields_its_scenario_shaped_files_and_no_other_yaml(tmp_path: Path) -> None:
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "handshake.yaml").write_text(OWN_CASE)
    (folder / "ci.yml").write_text("jobs:\n  test:\n    runs-on: ubuntu\nprotocol_notes: none\n")
    result = run([sys.executable, "-m", "pytest", str(folder), "-q", "-p", "no:cacheprovider"], cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-2000:]
    assert "1 passed" in result.stdout and "ci.yml" not in result.stdout


def test_a_file_outside_scenarios_has_its_frames_checked_against_its_protocol(tmp_path: Path) -> None:
    own = tmp_path / "mine.yaml"
    own.write_text(OWN_CASE.replace("versions: [\"0.1\"]}\n      - expect", "versionz: [\"0.1\"]}\n      - expect"))
    result = run([sys.executable, "-m", "pytest", str(own), "-q", "-p", "no:cacheprovider"], cwd=tmp_path)
    assert result.returncode == 1
    assert "versionz" in result.stdout


def test_other_yaml_named_on_the_command_line_is_left_to_other_plugins(tmp_path: Path) -> None:
    other = tmp_path / "test_api.tavern.yaml"
    other.write_text("test_name: get the index\nstages:\n  - name: index\n")
    result = run([sys.executable, "-m", "pytest", str(other), "-q", "-p", "no:cacheprovider"], cwd=tmp_path)
    assert "broken scenario" not in result.stdout + result.stderr
    assert result.returncode == 4  # pytest's own "found no collectors": no plugin here reads such files


def test_a_scenario_file_named_on_the_command_line_without_cases_is_reported_broken(tmp_path: Path) -> None:
    own = tmp_path / "mine.yaml"
    own.write_text(OWN_CASE.replace("cases:", "case:"))
    result = run([sys.executable, "-m", "pytest", str(own), "-q", "-p", "no:cacheprovider"], cwd=tmp_path)
    assert result.returncode == 1
    assert "mine.yaml::<file> - broken scenario" in result.stdout
