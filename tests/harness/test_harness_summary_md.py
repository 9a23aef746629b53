"""`conformance run --summary-md`: the Markdown summary of a small, hand-written records file."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.summary_md import main as summary_main

ROOT = Path(__file__).resolve().parents[2]


def conformance(args: list[str]) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    return subprocess.run([sys.executable, "-m", "conformance.cli", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)

RUN = "20261125T090000Z-abc123"


def record(case: str, transport: str, grade: str, **fields) -> dict:
    return {"schemaVersion": 1, "run": RUN, "time": "2026-11-25T09:00:00.000Z", "implementation": "acme",
            "implementationVersion": "1.2", "target": "tcp://127.0.0.1:9000", "protocol": "stmp",
            "family": case.split("/")[1], "case": case, "transport": transport,
            "requirement": fields.pop("requirement", "MUST"), "grade": grade, "exchangeGrade": grade,
            "closeGrade": None, "message": fields.pop("message", ""), "spec": fields.pop("spec", "a sentence"),
            "specRef": fields.pop("specRef", "stmp.txt#Section"), "durationMs": 1.0,
            "wirelog": fields.pop("wirelog", None), **fields}


def write_records(path: Path, records: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


NOW = [
    record("stmp/handshake/echo", "tcp", "PASSED"),
    record("stmp/handshake/echo", "ws", "PASSED"),
    record("stmp/ack-wrap/id-max", "tcp", "FAILED", message="expected a reply with ID 65535,\n got ID 0",
           spec="the requester should guarantee that the ID is unique", specRef="stmp.txt#Message field",
           wirelog="wirelogs/stmp_ack-wrap_id-max_tcp_.log"),
    record("stmp/heartbeat/ping", "tcp", "NON-STRICT", requirement="SHOULD"),
    record("stmp/heartbeat/timeout", "tcp", "ERROR", message="connection refused"),
    record("stmp/close/idle", "tcp", "NOT-APPLICABLE"),
]
BASELINE = [
    record("stmp/handshake/echo", "tcp", "PASSED"),
    record("stmp/handshake/echo", "ws", "FAILED"),
    record("stmp/ack-wrap/id-max", "tcp", "PASSED"),
    record("stmp/heartbeat/ping", "tcp", "NON-STRICT", requirement="SHOULD"),
    record("stmp/heartbeat/timeout", "tcp", "PASSED"),
    record("stmp/gone/old", "tcp", "PASSED"),
]

# Written by hand from NOW and BASELINE above.
EXPECTED_HEAD = """\
## Conformance: stmp — acme 1.2 (target `tcp://127.0.0.1:9000`, run 20261125T090000Z-abc123)

| protocol | PASSED | FAILED | ERROR | NON-STRICT | INFORMATIONAL | UNSUPPORTED | NOT-APPLICABLE | total |
|---|---:|---:|---:|---:|---:|---:|---:|---:|
| stmp | 2 | 1 | 1 | 1 | 0 | 0 | 1 | 6 |

### FAILED: breaks a MUST (1)

- `stmp/ack-wrap/id-max` [tcp] MUST: expected a reply with ID 65535, got ID 0
  - spec (stmp.txt#Message field): "the requester should guarantee that the ID is unique"
  - wire log: `{run}/wirelogs/stmp_ack-wrap_id-max_tcp_.log`

### ERROR: the case could not run (1)

- `stmp/heartbeat/timeout` [tcp] MUST: connection refused
  - spec (stmp.txt#Section): "a sentence"
  - wire log: none
"""
EXPECTED_DIFF = """
### Against the baseline `{baseline}`

5 changed, 2 of them worse.

| case | transport | baseline | now |
|---|---|---|---|
| `stmp/ack-wrap/id-max` | tcp | PASSED | FAILED |
| `stmp/close/idle` | tcp | not run | NOT-APPLICABLE |
| `stmp/gone/old` | tcp | PASSED | not run |
| `stmp/handshake/echo` | ws | FAILED | PASSED |
| `stmp/heartbeat/timeout` | tcp | PASSED | ERROR |
"""


def test_summary_counts_failures_and_baseline_diff(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    run_dir = tmp_path / "out"
    records = write_records(run_dir / "records.jsonl", NOW)
    baseline = write_records(tmp_path / "base" / "records.jsonl", BASELINE)
    out = tmp_path / "summary.md"
    assert summary_main([str(records), "--out", str(out), "--baseline", str(baseline)]) == 0
    expected = EXPECTED_HEAD.format(run=run_dir) + EXPECTED_DIFF.format(baseline=baseline)
    assert out.read_text() == expected


def test_summary_without_baseline_has_no_diff_and_goes_to_the_step_summary(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    step_summary = tmp_path / "step_summary.md"
    step_summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step_summary))
    run_dir = tmp_path / "out"
    records = write_records(run_dir / "records.jsonl", NOW)
    assert summary_main([str(records), "--out", str(tmp_path / "summary.md")]) == 0
    assert (tmp_path / "summary.md").read_text() == EXPECTED_HEAD.format(run=run_dir)
    assert step_summary.read_text() == "earlier step\n" + EXPECTED_HEAD.format(run=run_dir)


def test_run_writes_the_summary_of_its_own_records(tmp_path: Path) -> None:
    baseline = write_records(tmp_path / "base.jsonl", [record("stmp/handshake/version-unsupported", "tcp", "FAILED")])
    done = conformance(["run", "stmp", "--target", "ref", "--out", str(tmp_path / "out"),
                        "-k", "stmp/handshake/version-unsupported", "--summary-md", str(tmp_path / "s.md"),
                        "--baseline", str(baseline)])
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    text = (tmp_path / "s.md").read_text()
    ran = [json.loads(line) for line in (tmp_path / "out" / "records.jsonl").read_text().splitlines()]
    passed = sum(r["grade"] == "PASSED" for r in ran)
    assert passed >= 1 and f"| stmp | {passed} | 0 | 0 |" in text
    assert "### FAILED" not in text
    assert "| `stmp/handshake/version-unsupported` | tcp | FAILED | PASSED |" in text


def test_run_refuses_a_baseline_without_a_summary(tmp_path: Path) -> None:
    baseline = write_records(tmp_path / "base.jsonl", NOW)
    alone = conformance(["run", "stmp", "--out", str(tmp_path), "--baseline", str(baseline)])
    assert alone.returncode == 2 and "--summary-md" in alone.stderr
    missing = conformance(["run", "stmp", "--out", str(tmp_path), "--summary-md", str(tmp_path / "s.md"),
                           "--baseline", str(tmp_path / "missing.jsonl")])
    assert missing.returncode == 2 and "missing.jsonl" in missing.stderr


def test_summary_of_a_failing_run_names_the_case_and_a_wire_log_that_exists(tmp_path: Path) -> None:
    """A one-bug server (its reply to request 0xFFFF carries ID 0): the summary's wire-log path is real."""
    server = f"cmd:{sys.executable} -m conformance.selftest.buggy_stmp --bug wrong-id-after-wrap --port {{port}}"
    done = conformance(["run", "stmp", "--target", server, "--out", str(tmp_path / "out"),
                        "-k", "stmp/ack-wrap/id-max", "--summary-md", str(tmp_path / "s.md")])
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    text = (tmp_path / "s.md").read_text()
    assert "### FAILED: breaks a MUST (1)\n\n- `stmp/ack-wrap/id-max` [tcp] MUST: " in text
    wirelog = re.search(r"  - wire log: `([^`]+)`", text).group(1)
    assert Path(wirelog).is_file() and Path(wirelog).parent == tmp_path / "out" / "wirelogs"
