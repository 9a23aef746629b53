"""What a run calls the implementation and its version in the records (issue 16, item 10)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import conformance
from conformance.targets import CommandTarget, command_name

ROOT = Path(__file__).resolve().parents[2]
CASE = "stmp/handshake/version-unsupported"


@pytest.mark.parametrize(("command", "name"), [
    # the main job's third-party broker: the interpreter alone would name every Python server alike
    (".venv/bin/python thirdparty/pyzmq_mc0_broker.py --port {port}", "python pyzmq_mc0_broker.py"),
    # the README's example: "conformance" alone reads as the suite itself
    ("conformance serve stmp --port {port} --transport {transport}", "conformance serve"),
    ("/usr/bin/python3 -m myserver --port {port}", "python3 -m myserver"),
    ("./my-server --port {port}", "my-server"),
    ("/opt/srv/bin/srv {port}", "srv"),
])
def test_a_command_target_is_named_by_its_program_and_what_it_runs(command: str, name: str) -> None:
    assert command_name(command) == name
    assert CommandTarget(f"cmd:{command}").name == name


def test_impl_name_wins_over_the_command() -> None:
    assert CommandTarget("cmd:conformance serve stmp --port {port}", "acme-stmp").name == "acme-stmp"


def _run(tmp_path: Path, *extra: str) -> list[dict]:
    out = tmp_path / "out"
    tmp_path.mkdir(exist_ok=True)
    proc = subprocess.run([sys.executable, "-m", "conformance.cli", "run", "stmp", "-k", CASE, "--out", str(out), *extra],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines() if line.strip()]
    assert records
    return records


def test_ref_records_carry_the_suite_version_and_a_given_version_wins(tmp_path: Path) -> None:
    # the reference implementations are released with the suite: their version is the package's
    assert {r["implementationVersion"] for r in _run(tmp_path / "a")} == {conformance.__version__}
    assert {r["implementationVersion"] for r in _run(tmp_path / "b", "--impl-version", "2.5")} == {"2.5"}


def test_a_docker_target_takes_the_images_oci_version_label(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("docker", reason="the docker SDK is the interop extra")
    from conformance import docker_target
    from conformance.images import engine

    class Image:
        labels = {"org.opencontainers.image.version": "1.4.2", "conformance.protocols": "stmp"}

    class Client:
        class images:
            @staticmethod
            def get(name: str) -> Image:
                assert name == "acme/stmp:nightly"
                return Image()

        def close(self) -> None:
            pass

    monkeypatch.setattr(engine, "docker_client", lambda *a, **k: Client())
    assert docker_target.DockerTarget("acme/stmp:nightly").version() == "1.4.2"
    Image.labels = {}
    assert docker_target.DockerTarget("acme/stmp:nightly").version() is None


def _handshake_cases_from_the_yaml() -> tuple[int, int]:
    """(cases, case x transport results) of scenarios/stmp/handshake.yaml, read from the file itself."""
    import yaml

    doc = yaml.safe_load((ROOT / "scenarios" / "stmp" / "handshake.yaml").read_text(encoding="utf-8"))
    default = (doc.get("defaults") or {}).get("transports")
    cases = doc["cases"]
    return len(cases), sum(len(c.get("transports", default)) for c in cases)


def test_the_run_summary_names_cases_and_results_apart(tmp_path: Path) -> None:
    # the same run once said "366 cases" (results) and once listed 333 (cases): both, each named
    cases, results = _handshake_cases_from_the_yaml()
    assert results > cases  # otherwise this test could not tell them apart
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "conformance.cli", "run", "stmp", "-k", "stmp/handshake/",
                           "--out", str(out)], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stdout[-2000:]
    row = next(line.split() for line in proc.stdout.splitlines() if line.startswith("stmp "))
    header = next(line.split() for line in proc.stdout.splitlines() if line.startswith("protocol "))
    assert header[1:3] == ["cases", "results"]
    assert row[1:3] == [str(cases), str(results)]
    assert sum(map(int, row[3:])) == results
    # the main job's closing table (conformance.finish) reads the same records the same way
    from conformance.finish import summarize
    from conformance.records import grade_table

    counts, seen = summarize(out / "records.jsonl")
    row = next(line.split() for line in grade_table(counts, seen, ["PASSED"]) if line.startswith("stmp "))
    assert row[1:3] == [str(cases), str(results)]


def test_the_reference_images_declare_the_suite_version() -> None:
    pytest.importorskip("docker", reason="the docker SDK is the interop extra")
    from conformance.images.reference import _labels

    assert _labels("stmp", "")["org.opencontainers.image.version"] == conformance.__version__
