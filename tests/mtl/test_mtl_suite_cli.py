"""The MTL suite as users run it: the reference server in its own process, the CLI, the client role.
(The pyzmq third-party client runs in test_mtl_pyzmq_client.py.)"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from suite_helpers import all_cases

ROOT = Path(__file__).resolve().parents[2]
CONFORMANCE = [sys.executable, "-m", "conformance.cli"]
TIMERS = ["--param", "heartbeat_interval_ms=1000", "--param", "heartbeat_timeout_ms=2500",
          "--param", "redeliver_ms=600", "--param", "silence_ms=300"]


def run(args: list[str], timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def test_full_suite_passes_against_a_separate_process(tmp_path: Path) -> None:
    server = (f"cmd:{sys.executable} -m reference_impl.mtl.server --port {{port}} --heartbeat-interval 1 "
              f"--heartbeat-timeout 2.5 --redeliver 0.6")
    result = run(CONFORMANCE + ["run", "mtl", "--target", server, "--out", str(tmp_path), *TIMERS])
    assert result.returncode == 0, result.stdout[-3000:]
    records = [json.loads(line) for line in (tmp_path / "records.jsonl").read_text().splitlines()]
    cases = all_cases("mtl")
    assert {r["case"] for r in records} == set(cases)
    wrong = {r["case"]: (r["grade"], r["message"]) for r in records
             if r["grade"] != ("INFORMATIONAL" if cases[r["case"]].requirement in ("INFO", "MAY") else "PASSED")}
    assert not wrong, wrong
    assert {r["transport"] for r in records} == {"zmtp"}


@pytest.fixture
def served():
    """`conformance serve mtl` in its own process, stopped by its PID."""
    proc = subprocess.Popen(CONFORMANCE + ["serve", "mtl", "--port", "0", "--heartbeat-interval", "1",
                                           "--heartbeat-timeout", "3"],
                            cwd=ROOT, stdout=subprocess.PIPE, text=True)
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
            proc.wait(5)


def test_conformance_serve_mtl_with_cases_and_clients(served: str, tmp_path: Path) -> None:
    result = run(CONFORMANCE + ["run", "mtl", "--target", served, "--out", str(tmp_path), "-k", "handshake",
                                "--param", "heartbeat_interval_ms=1000", "--param", "heartbeat_timeout_ms=3000"])
    assert result.returncode == 0, result.stdout[-3000:]
    assert len((tmp_path / "records.jsonl").read_text().splitlines()) >= 20
    for testcase in ("test-profile", "scram"):
        client = run(CONFORMANCE + ["serve", "mtl", "--role", "client", "--connect", served, "--testcase", testcase])
        assert client.returncode == 0, client.stderr


def test_client_role_answers_127_to_an_unknown_testcase() -> None:
    result = run(CONFORMANCE + ["serve", "mtl", "--role", "client", "--connect", "tcp://127.0.0.1:1",
                                "--testcase", "no-such-case"])
    assert result.returncode == 127


def test_serve_refuses_websocket() -> None:
    result = run(CONFORMANCE + ["serve", "mtl", "--port", "0", "--transport", "ws"], timeout=60)
    assert result.returncode == 2
