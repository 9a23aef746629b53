"""One attempt of one (implementation, protocol) pair: `conformance run` in a subprocess, bounded.

The subprocess gets its own process group and a run label for the containers
it starts.  Past the pair timeout it is interrupted (SIGINT, so pytest closes
its target), then killed; its containers are then removed by that label.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from conformance.images.layout import RUN_LABEL, RUN_LABEL_ENV

INTERRUPT_GRACE_SECONDS = 20
KILL_WAIT_SECONDS = 10
NO_TESTS_COLLECTED = 5  # pytest's exit code when -k leaves nothing to run


@dataclass
class Attempt:
    number: int
    out: Path
    exit_code: int | None
    timed_out: bool
    seconds: float
    grades: dict[str, int]
    case_grades: dict[str, str]  # "case[transport]" -> grade
    run_label: str  # the value of RUN_LABEL on the containers this attempt started

    @property
    def outcome(self) -> str:
        if self.timed_out:
            return "timeout"
        if self.exit_code == 0:
            return "passed"
        if self.exit_code == NO_TESTS_COLLECTED and not self.grades:
            return "no-cases"
        return "failed"

    def as_json(self, root: Path) -> dict:
        def rel(path: Path) -> str:
            return os.path.relpath(path, root)
        return {"attempt": self.number, "outcome": self.outcome, "exitCode": self.exit_code,
                "timedOut": self.timed_out, "seconds": round(self.seconds, 1), "grades": self.grades,
                "out": rel(self.out), "records": rel(self.out / "records.jsonl"), "junit": rel(self.out / "junit.xml"),
                "allureResults": rel(self.out / "allure-results"), "log": rel(self.out / "run.log"),
                "runLabel": self.run_label}


def run_command(protocol: str, image: str, name: str, out: Path, params: dict[str, int],
                keyword: str | None) -> list[str]:
    command = [sys.executable, "-m", "conformance.cli", "run", protocol, "--target", f"docker:{image}",
               "--impl-name", name, "--out", str(out)]
    for key, value in sorted(params.items()):
        command += ["--param", f"{key}={value}"]
    if keyword:
        command += ["-k", keyword]
    return command


def run_attempt(number: int, command: list[str], out: Path, timeout: float) -> Attempt:
    out.mkdir(parents=True, exist_ok=True)
    label = f"matrix-{secrets.token_hex(6)}"
    env = {**os.environ, RUN_LABEL_ENV: label}
    started = time.monotonic()
    timed_out = False
    with (out / "run.log").open("w") as log:
        log.write("$ " + " ".join(command) + "\n")
        log.flush()
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   env=env, start_new_session=True)
        try:
            code: int | None = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            code = _stop(process)
            log.write(f"\nconformance matrix: stopped after the pair timeout of {timeout:g}s\n")
        except BaseException:  # e.g. Ctrl-C: the run has its own session and would not get it
            _stop(process)
            _remove_containers(label)
            raise
    _remove_containers(label)
    grades, case_grades = read_records(out / "records.jsonl")
    return Attempt(number, out, None if timed_out else code, timed_out, time.monotonic() - started,
                   grades, case_grades, label)


def _stop(process: subprocess.Popen) -> int | None:
    """SIGINT to the run's own process group (pytest then stops its containers), then SIGKILL."""
    for sig, wait in ((signal.SIGINT, INTERRUPT_GRACE_SECONDS), (signal.SIGKILL, KILL_WAIT_SECONDS)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            pass
        try:
            return process.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
    return None


def _remove_containers(label: str) -> None:
    """Containers a killed run left behind, found by the label only that run put on them."""
    from conformance.images.engine import EngineUnavailableError, docker_client
    try:
        client = docker_client(timeout=60)
    except EngineUnavailableError:
        return
    try:
        for container in client.containers.list(all=True, filters={"label": f"{RUN_LABEL}={label}"}):
            container.remove(force=True)
    finally:
        client.close()


def read_records(path: Path) -> tuple[dict[str, int], dict[str, str]]:
    if not path.is_file():
        return {}, {}
    grades: Counter[str] = Counter()
    cases: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        grades[record["grade"]] += 1
        cases[f"{record['case']}[{record.get('transport', '')}]"] = record["grade"]
    return dict(sorted(grades.items())), cases
