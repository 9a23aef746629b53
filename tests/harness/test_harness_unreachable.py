"""A target that cannot be used gives one clear message: a usage error (exit 2) when it cannot
be parsed, and ERROR for every case (never FAILED) when it does not answer."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.targets import free_port
from tests.harness.suite_helpers import Grade, all_cases, asyncio, run_case

ROOT = Path(__file__).resolve().parents[2]
PYTEST = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q"]


def _pytest(args: list[str], timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(PYTEST + args, cwd=ROOT, capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("option", [
    ["--target", "tcp://127.0.0.1:abc"],
    ["--target", "tcp://127.0.0.1"],
    ["--target", "gopher://127.0.0.1:70"],
    ["--target", "tcp://192.0.2.1:9000"],
    ["--target", "cmd:server-without-port-placeholder"],
    ["--target-client", "client-without-url-placeholder"],
])
def test_a_malformed_target_is_a_usage_error(option: list[str]) -> None:
    result = _pytest(["scenarios/stmp/handshake.yaml", *option], timeout=60)
    assert result.returncode == 2, result.stdout[-2000:]
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "conformance: bad --target" in result.stderr
    assert "Traceback" not in result.stdout + result.stderr


def test_an_unreachable_target_makes_every_case_error_once(tmp_path: Path) -> None:
    records = tmp_path / "records.jsonl"
    url = f"tcp://127.0.0.1:{free_port()}"  # nobody listens there
    files = ["scenarios/stmp/split-message.yaml", "scenarios/micromessage2/split-message.yaml",
             "scenarios/stmp/handshake.yaml"]
    result = _pytest([*files, "--target", url, "--records", str(records)])
    assert result.returncode == 1
    graded = [json.loads(line) for line in records.read_text().splitlines()]
    # client-role cases need no server endpoint: the URL target offers no client role
    tcp = [r for r in graded if r["transport"] == "tcp" and "client role" not in r["message"]]
    assert tcp and {r["grade"] for r in tcp} == {"ERROR"}, {r["case"]: r["grade"] for r in tcp}
    assert all("unreachable" in r["message"] for r in tcp)
    summary = [line for line in result.stdout.splitlines() if line.startswith("target endpoint not usable")]
    assert len(summary) == 2, summary  # one per protocol endpoint probed
    assert "Traceback" not in result.stdout


def test_a_fault_proxy_that_cannot_reach_the_target_is_an_error() -> None:
    case = all_cases("micromessage2")["micromessage2/split-message/fragments-byte-by-byte"]
    assert case.fault, "the case goes through the fault proxy"
    result = asyncio.run(run_case(case, f"tcp://127.0.0.1:{free_port()}"))
    assert result.grade is Grade.ERROR, result.message
    assert "fault proxy could not connect" in result.message
