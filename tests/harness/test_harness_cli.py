"""The suite as users run it: separate processes, exit codes, -k with a case id, records."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONFORMANCE = [sys.executable, "-m", "conformance.cli"]


def run(args: list[str], timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(CONFORMANCE + args, cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]


@pytest.fixture
def served(request):
    """A reference STMP server in its own process, stopped by its PID."""
    procs = []

    def start(transport: str) -> str:
        proc = subprocess.Popen(CONFORMANCE + ["serve", "stmp", "--port", "0", "--transport", transport,
                                               "--heartbeat-interval", "1", "--heartbeat-timeout", "3"],
                                cwd=ROOT, stdout=subprocess.PIPE, text=True)
        procs.append(proc)
        line = proc.stdout.readline().strip()
        assert line.startswith("listening on "), line
        return line.split()[-1]

    yield start
    for proc in procs:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.mark.parametrize("transport", ["tcp", "ws"])
def test_full_suite_passes_against_a_separate_reference_process(served, tmp_path: Path, transport: str) -> None:
    url = served(transport)
    result = run(["run", "stmp", "--target", url, "--out", str(tmp_path),
                  "--param", "heartbeat_interval_ms=1000", "--param", "heartbeat_timeout_ms=3000"])
    assert result.returncode == 0, result.stdout[-3000:]
    grades = {r["grade"] for r in records(tmp_path)}
    assert grades <= {"PASSED", "INFORMATIONAL", "NOT-APPLICABLE"}, grades
    ran = [r for r in records(tmp_path) if r["grade"] != "NOT-APPLICABLE"]
    assert len(ran) >= 25 and all(r["transport"] == transport for r in ran)
    assert (tmp_path / "junit.xml").exists() and any((tmp_path / "allure-results").iterdir())


def test_spawned_command_target_and_k_selects_one_case(tmp_path: Path) -> None:
    target = f"cmd:{sys.executable} -m conformance.cli serve stmp --port {{port}} --transport {{transport}}"
    result = run(["run", "stmp", "--target", target, "--out", str(tmp_path),
                  "-k", "stmp/handshake/version-unsupported"])
    assert result.returncode == 0, result.stdout[-3000:]
    ran = records(tmp_path)
    assert {r["case"] for r in ran} == {"stmp/handshake/version-unsupported"}
    assert {r["transport"] for r in ran} == {"tcp", "ws"} and {r["grade"] for r in ran} == {"PASSED"}


def test_must_failure_gives_nonzero_exit_and_junit(tmp_path: Path) -> None:
    # a "server" that accepts and never answers
    silent = f"cmd:{sys.executable} -c \"import socket,time;s=socket.socket();s.bind(('127.0.0.1',{{port}}));s.listen();c=s.accept();time.sleep(60)\""
    result = run(["run", "stmp", "--target", silent, "--out", str(tmp_path), "-k", "stmp/handshake/one-version"])
    assert result.returncode == 1
    rec, not_offered = sorted(records(tmp_path), key=lambda r: r["transport"])
    assert not_offered["transport"] == "ws" and not_offered["grade"] == "NOT-APPLICABLE"
    assert rec["grade"] == "FAILED" and "nothing arrived" in rec["message"]
    assert rec["wirelog"] and (tmp_path / rec["wirelog"]).exists()
    assert "failures=\"1\"" in (tmp_path / "junit.xml").read_text()
    results = [json.loads(p.read_text()) for p in (tmp_path / "allure-results").glob("*-result.json")]
    failed = [r for r in results if r["status"] == "failed"]
    assert len(failed) == 1 and failed[0]["labels"]
    labels = {(l["name"], l["value"]) for l in failed[0]["labels"]}
    assert ("epic", "stmp") in labels and ("story", "stmp/handshake/one-version") in labels
    (attachment,) = failed[0]["attachments"]
    assert attachment["name"] == "wire log"
    assert "nothing arrived" not in attachment["source"]  # a file name, holding the hex log
    assert ">>" in (tmp_path / "allure-results" / attachment["source"]).read_text()


def test_unreachable_target_is_an_error_not_a_hang(tmp_path: Path) -> None:
    from conformance.targets import free_port
    result = run(["run", "stmp", "--target", f"tcp://127.0.0.1:{free_port()}", "--out", str(tmp_path), "-k", "one-version"], timeout=60)
    assert result.returncode == 1
    assert {r["grade"] for r in records(tmp_path) if r["transport"] == "tcp"} == {"ERROR"}


def test_non_loopback_targets_are_refused(tmp_path: Path) -> None:
    result = run(["run", "stmp", "--target", "tcp://192.0.2.1:9000", "--out", str(tmp_path), "-k", "one-version"], timeout=60)
    assert result.returncode == 2  # a usage error, before any case
    assert "127.0.0.1" in result.stderr


def test_vectors_check_command() -> None:
    result = run(["vectors", "check", "-q", "vectors/stmp"])
    assert result.returncode == 0, result.stdout[-2000:]
    assert "0 failed" in result.stdout


def test_broken_vector_file_is_reported_with_its_path(tmp_path: Path) -> None:
    bad = tmp_path / "vectors" / "bad.json"
    bad.parent.mkdir()
    bad.write_text('{"algorithm": "x",\n "schema": 3}')
    result = run(["vectors", "check", str(bad)])
    assert result.returncode == 1
    assert str(bad) in result.stdout


def test_client_role_served_by_the_cli() -> None:
    result = run(["serve", "stmp", "--role", "client", "--connect", "tcp://127.0.0.1:1", "--testcase", "no-such-case"])
    assert result.returncode == 127


@pytest.mark.parametrize("strict,code", [(False, 0), (True, 1)])
def test_strict_fails_on_non_strict(tmp_path: Path, strict: bool, code: int) -> None:
    target = f"cmd:{sys.executable} -m conformance.selftest.buggy_stmp --bug not-found-as-bad-request --port {{port}}"
    args = ["run", "stmp", "--target", target, "--out", str(tmp_path), "-k", "unknown-action-not-found"]
    result = run(args + (["--strict"] if strict else []))
    assert result.returncode == code, result.stdout[-2000:]
    graded = [r for r in records(tmp_path) if r["transport"] == "tcp"]
    assert [r["grade"] for r in graded] == ["NON-STRICT"]


def test_delegated_commands_own_their_options(tmp_path: Path) -> None:
    # argparse.REMAINDER would refuse a command line that starts with an option
    missing = str(tmp_path / "nowhere")
    report = run(["report", "--input", missing, "--out", str(tmp_path / "r")], timeout=120)
    assert report.returncode == 3 and "inputs not found" in report.stderr, report.stderr
    for command in (["matrix", "--out", missing, "--help"], ["images", "build", "--help"]):
        result = run(command, timeout=120)
        assert result.returncode == 0 and "usage:" in result.stdout, (command, result.stderr)


def test_a_reader_that_goes_away_gets_no_traceback() -> None:
    """`conformance cases | head -1`: the pipe closes after one line; the command stops quietly
    with the shell's SIGPIPE status instead of printing a BrokenPipeError traceback."""
    proc = subprocess.Popen(CONFORMANCE + ["cases"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = proc.stdout.readline()
    proc.stdout.close()  # the reader goes away with most of the list unread
    try:
        stderr = proc.stderr.read()
        code = proc.wait(60)
    finally:
        proc.kill()
    assert first.strip()
    assert b"Traceback" not in stderr and b"BrokenPipeError" not in stderr, stderr.decode()
    assert code == 141
