"""The suite as an image: `docker run --network host conformance-suite run ...` against a server on the host."""

from __future__ import annotations

import json
import os
import socket
import signal
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import docker
import pytest

from conformance.images import cli as images_cli
from conformance.images.build import build_images
from conformance.images.layout import CHECKOUT, LABEL_PROTOCOLS, SUITE_REPOSITORY
from conformance.paths import scenarios_dir
from conformance.protocols import adapter_for
from conformance.scenario.loader import load_file

RUN_TIMEOUT = 300
UNKNOWN_USER = "4242:4242"


@pytest.fixture(scope="session")
def suite_image(docker_engine: docker.DockerClient, project_snapshot: Path) -> str:
    outcomes = build_images([], project_dir=project_snapshot, suite=True, log=print)
    return outcomes[-1].what


@pytest.fixture
def host_stmp_server() -> Iterator[str]:
    """A reference STMP server on the host (127.0.0.1, port 0), with short heartbeat timers, stopped by its PID."""
    proc = subprocess.Popen([sys.executable, "-m", "conformance.cli", "serve", "stmp", "--port", "0",
                             "--heartbeat-interval", "1", "--heartbeat-timeout", "3"],
                            cwd=CHECKOUT, env={**os.environ, "PYTHONPATH": str(CHECKOUT)},
                            stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline().strip()
        assert line.startswith("listening on tcp://127.0.0.1:"), line
        yield line.split()[-1]
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def run_suite_container(client: docker.DockerClient, image: str, out: Path, args: list[str],
                        user: str | None = None) -> tuple[int, str]:
    """The README's command: host network, OUT mounted at /out, as the calling user so the files are ours."""
    container = client.containers.run(image, args, detach=True, network_mode="host",
                                      user=user or f"{os.getuid()}:{os.getgid()}",
                                      volumes={str(out): {"bind": "/out", "mode": "rw"}})
    try:
        code = container.wait(timeout=RUN_TIMEOUT)["StatusCode"]
        return code, container.logs().decode(errors="replace")
    finally:
        container.remove(force=True)


def stmp_case_ids() -> set[str]:
    frame_check = adapter_for("stmp").frame_check
    return {case.id for path in sorted((scenarios_dir() / "stmp").glob("*.yaml"))
            for case in load_file(path, frame_check).cases}


@pytest.mark.docker
@pytest.mark.slow
def test_suite_image_grades_a_server_on_the_host(docker_engine: docker.DockerClient, suite_image: str,
                                                 host_stmp_server: str, tmp_path: Path) -> None:
    code, logs = run_suite_container(docker_engine, suite_image, tmp_path, [
        "run", "stmp", "--target", host_stmp_server, "--out", "/out", "--summary-md", "/out/summary.md",
        "--param", "heartbeat_interval_ms=1000", "--param", "heartbeat_timeout_ms=3000"])
    assert code == 0, logs[-3000:]
    assert (tmp_path / "summary.md").read_text().startswith(f"## Conformance: stmp — {host_stmp_server}")
    records = [json.loads(line) for line in (tmp_path / "records.jsonl").read_text().splitlines()]
    assert {r["target"] for r in records} == {host_stmp_server}
    assert {r["case"] for r in records} == stmp_case_ids()
    assert {r["grade"] for r in records} <= {"PASSED", "INFORMATIONAL", "NOT-APPLICABLE"}
    ran = [r for r in records if r["grade"] != "NOT-APPLICABLE"]
    assert len(ran) >= 25 and {r["transport"] for r in ran} == {"tcp"}
    assert (tmp_path / "junit.xml").is_file() and any((tmp_path / "allure-results").iterdir())


@pytest.mark.docker
@pytest.mark.slow
def test_suite_image_exit_code_is_the_runs(docker_engine: docker.DockerClient, suite_image: str,
                                           tmp_path: Path) -> None:
    """A target that never answers: the cases are ERROR and the container's exit code says so."""
    with socket.socket() as unused:  # bound, never listening: connections to it are refused
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
        code, logs = run_suite_container(docker_engine, suite_image, tmp_path, [
            "run", "stmp", "--target", f"tcp://127.0.0.1:{port}", "--out", "/out", "-k", "handshake"])
    assert code == 1, logs[-3000:]
    records = [json.loads(line) for line in (tmp_path / "records.jsonl").read_text().splitlines()]
    assert records and "ERROR" in {r["grade"] for r in records}


@pytest.mark.docker
def test_suite_image_is_latest_and_not_an_implementation(docker_engine: docker.DockerClient,
                                                         suite_image: str) -> None:
    image = docker_engine.images.get(suite_image)
    assert f"{SUITE_REPOSITORY}:latest" in image.tags
    # `conformance matrix` runs every image labelled conformance.protocols: the suite must not be one
    assert LABEL_PROTOCOLS not in (image.labels or {})


def test_images_build_suite_builds_the_suite_image_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    monkeypatch.setattr("conformance.images.build.build_images",
                        lambda protocols, **kw: calls.append((protocols, kw["suite"], kw["suite_reports"])) or [])
    assert images_cli.main(["build", "--suite"]) == 0
    assert images_cli.main(["build"]) == 0
    assert images_cli.main(["build", "--protocol", "stmp"]) == 0
    assert images_cli.main(["build", "--suite-reports"]) == 0
    assert calls == [([], True, False), (None, True, False), (["stmp"], False, False), ([], True, True)]


@pytest.mark.docker
def test_suite_image_second_build_reuses_it(docker_engine: docker.DockerClient, project_snapshot: Path,
                                            suite_image: str) -> None:
    outcomes = build_images([], project_dir=project_snapshot, suite=True, log=print)
    assert [(o.what, o.action) for o in outcomes[-1:]] == [(suite_image, "reused")]
    assert all(o.action == "reused" for o in outcomes)


@pytest.fixture(scope="session")
def suite_reports_image(docker_engine: docker.DockerClient, project_snapshot: Path) -> str:
    outcomes = build_images([], project_dir=project_snapshot, suite_reports=True, log=print)
    return outcomes[-1].what


@pytest.mark.docker
@pytest.mark.slow
def test_suite_reports_image_makes_the_compliance_matrix(docker_engine: docker.DockerClient,
                                                        suite_reports_image: str, host_stmp_server: str,
                                                        tmp_path: Path) -> None:
    assert suite_reports_image.startswith("conformance-suite-reports:")
    # a user the image has no passwd entry for, as `--user "$(id -u):$(id -g)"` gives on most hosts
    tmp_path.chmod(0o777)
    code, logs = run_suite_container(docker_engine, suite_reports_image, tmp_path, [
        "run", "stmp", "--target", host_stmp_server, "--out", "/out/run", "-k", "stmp/handshake/version"],
        user=UNKNOWN_USER)
    assert code == 0, logs[-3000:]
    code, logs = run_suite_container(docker_engine, suite_reports_image, tmp_path, [
        "report", "--input", "/out/run", "--out", "/out/report"], user=UNKNOWN_USER)
    assert code == 0, logs[-3000:]
    ran = {json.loads(line)["case"] for line in (tmp_path / "run" / "records.jsonl").read_text().splitlines()}
    page = (tmp_path / "report" / "matrix.html").read_text()
    assert ran and all(case in page for case in ran)
    assert (tmp_path / "report" / "summary.json").is_file()
