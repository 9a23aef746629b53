"""The rsio suite as users run it: the reference server and client in their own processes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from suite_helpers import all_cases

ROOT = Path(__file__).resolve().parents[2]
CONFORMANCE = [sys.executable, "-m", "conformance.cli"]


def run(args: list[str], timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run(CONFORMANCE + args, cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def test_full_suite_passes_against_separate_reference_processes(tmp_path: Path) -> None:
    server = f"cmd:{sys.executable} -m conformance.cli serve rsio --port {{port}}"
    client = f"{sys.executable} -m conformance.cli serve rsio --role client --connect {{url}} --testcase {{testcase}}"
    result = run(["run", "rsio", "--target", server, "--target-client", client, "--out", str(tmp_path),
                  "--param", "silence_ms=300"])
    assert result.returncode == 0, result.stdout[-3000:]
    records = [json.loads(line) for line in (tmp_path / "records.jsonl").read_text().splitlines()]
    cases = all_cases("rsio")
    assert {r["case"] for r in records} == set(cases)
    wrong = {r["case"]: (r["grade"], r["message"]) for r in records
             if r["grade"] != ("INFORMATIONAL" if cases[r["case"]].requirement in ("INFO", "MAY") else "PASSED")}
    assert not wrong, wrong
    assert any(cases[r["case"]].role == "client" for r in records)


def test_client_role_answers_127_to_an_unknown_testcase() -> None:
    result = run(["serve", "rsio", "--role", "client", "--connect", "tcp://127.0.0.1:1", "--testcase", "no-such-case"])
    assert result.returncode == 127


def test_serve_refuses_websocket() -> None:
    result = run(["serve", "rsio", "--port", "0", "--transport", "ws"], timeout=60)
    assert result.returncode == 2
