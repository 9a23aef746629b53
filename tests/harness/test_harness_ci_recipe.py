"""docs/ci.md: the GitHub Actions and GitLab CI recipes parse, and their shell steps run here
against a reference server on 127.0.0.1, the way each CI service runs them."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
GITHUB = DOCS / "ci" / "github-actions.yml"
GITLAB = DOCS / "ci" / "gitlab-ci.yml"
STEP_TIMEOUT = 300
# A few cases only: the recipe is under test here, not the suite.
SUITE_ARGS = "-k stmp/handshake/version"


def fenced_yaml(markdown: str) -> list[str]:
    return re.findall(r"^```yaml\n(.*?)^```$", markdown, flags=re.S | re.M)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def ci_env(tmp_path: Path) -> dict[str, str]:
    """PATH with a `conformance` command of this checkout (what `pip install protocol-conformance` gives)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "conformance"
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH="{ROOT}" exec "{sys.executable}" -m conformance.cli "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_STEP_SUMMARY", "CONFORMANCE_NOTE_TOKEN")}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    return env


def job_variables(declared: dict[str, str], port: int) -> dict[str, str]:
    """The recipe's own variables, with what a user (and this machine) changes: port, timers, a short run."""
    values = {name: str(value) for name, value in declared.items()}
    for name, value in values.items():
        if "${{" in value or value.startswith("$CI_"):  # filled by the CI service
            values[name] = "test-version"
    assert values["SERVER_CMD"].endswith(f"--port {values['PORT']}")
    values["SERVER_CMD"] = values["SERVER_CMD"].replace(f"--port {values['PORT']}", f"--port {port}")
    values["PORT"] = str(port)
    values["SUITE_ARGS"] = SUITE_ARGS
    return values


def write_baseline(workdir: Path, relative: str) -> None:
    """A baseline in which stmp/handshake/version-unsupported had FAILED: the summary must report the change."""
    path = workdir / relative
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"case": "stmp/handshake/version-unsupported", "transport": "tcp",
                                "grade": "FAILED", "protocol": "stmp"}) + "\n")


def run_shell(script: str, workdir: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-e", "-c", script], cwd=workdir, env=env, capture_output=True, text=True,
                          timeout=STEP_TIMEOUT, stdin=subprocess.DEVNULL)


def stop_leftover_server(workdir: Path) -> bool:
    """True when the recipe left its server running (it is then killed here, by its PID)."""
    pid_file = workdir / "server.pid"
    if not pid_file.is_file():
        return False
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while alive(pid):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            return True
        time.sleep(0.1)
    return False


def alive(pid: int) -> bool:
    """Running, not a zombie waiting for init to reap it (the step's shell that started it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return False
    return fields[0] != "Z"


def check_results(workdir: Path) -> str:
    out = workdir / "out"
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    assert records and {r["implementation"] for r in records} == {"my-server"}
    assert {r["implementationVersion"] for r in records} == {"test-version"}
    assert all(r["case"].startswith("stmp/handshake/version") for r in records)
    assert (out / "junit.xml").is_file() and any((out / "allure-results").iterdir())
    assert (out / "server.log").is_file()
    summary = (out / "summary.md").read_text()
    assert summary.startswith("## Conformance: stmp — my-server test-version")
    assert "| `stmp/handshake/version-unsupported` | tcp | FAILED | PASSED |" in summary
    return summary


def test_docs_ci_md_shows_the_shipped_recipes_word_for_word() -> None:
    blocks = fenced_yaml((DOCS / "ci.md").read_text())
    assert blocks == [GITHUB.read_text(), GITLAB.read_text()]


def test_github_workflow_parses_and_uploads_what_the_run_writes() -> None:
    workflow = yaml.safe_load(GITHUB.read_text())
    assert set(workflow[True]) == {"push", "pull_request"}  # YAML 1.1 reads the key `on` as true
    steps = workflow["jobs"]["conformance"]["steps"]
    assert all(("uses" in step) != ("run" in step) for step in steps)
    upload = next(step for step in steps if str(step.get("uses", "")).startswith("actions/upload-artifact"))
    assert upload["if"] == "always()" and upload["with"]["path"] == "out/"


def test_github_workflow_steps_run_as_a_script(tmp_path: Path, ci_env: dict[str, str]) -> None:
    job = yaml.safe_load(GITHUB.read_text())["jobs"]["conformance"]
    steps = {step["name"]: step["run"] for step in job["steps"] if "name" in step and "run" in step}
    workdir = tmp_path / "repo"
    workdir.mkdir()
    variables = job_variables(job["env"], free_port())
    write_baseline(workdir, variables["BASELINE"])
    step_summary = tmp_path / "step_summary.md"
    env = {**ci_env, **variables, "GITHUB_STEP_SUMMARY": str(step_summary)}
    try:
        # each step is its own `bash -e` (GitHub's default shell); the server outlives its step
        for name in ("Start the server", "Run the suite", "Stop the server"):
            done = run_shell(steps[name], workdir, env)
            assert done.returncode == 0, f"{name}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
    finally:
        left_running = stop_leftover_server(workdir)
    assert not left_running, "the Stop the server step left the server running"
    summary = check_results(workdir)
    assert step_summary.read_text() == summary


def test_gitlab_job_parses_and_keeps_its_artifacts_always() -> None:
    job = yaml.safe_load(GITLAB.read_text())["conformance"]
    assert job["artifacts"]["when"] == "always"
    assert job["artifacts"]["paths"] == ["out/"] and job["artifacts"]["reports"]["junit"] == "out/junit.xml"


def test_gitlab_job_script_runs_as_a_script(tmp_path: Path, ci_env: dict[str, str]) -> None:
    job = yaml.safe_load(GITLAB.read_text())["conformance"]
    workdir = tmp_path / "repo"
    workdir.mkdir()
    variables = job_variables(job["variables"], free_port())
    write_baseline(workdir, variables["BASELINE"])
    env = {**ci_env, **variables}
    try:
        # GitLab runs `script` in one shell and `after_script` in another
        done = run_shell("\n".join(job["script"]), workdir, env)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        after = run_shell("\n".join(job["after_script"]), workdir, env)
        assert after.returncode == 0, after.stdout[-2000:] + after.stderr[-2000:]
    finally:
        left_running = stop_leftover_server(workdir)
    assert not left_running, "after_script left the server running"
    summary = check_results(workdir)
    assert summary in done.stdout  # the job log shows the summary
