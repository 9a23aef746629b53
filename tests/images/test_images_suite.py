"""Every reference image passes its protocol's suite through testcontainers (`--target docker:IMAGE`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("transport", ["tcp", "ws"])
def test_stmp_image_passes_the_stmp_suite(stmp_image: str, tmp_path: Path, transport: str) -> None:
    # the image's timers are the CLI defaults (5 s interval, 15 s timeout): the suite is told so
    out = tmp_path / "out"
    run = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "run", "stmp", "--target", f"docker:{stmp_image}",
         "--out", str(out), "--param", "heartbeat_interval_ms=5000", "--param", "heartbeat_timeout_ms=15000",
         "-k", f"[{transport}]"],
        cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-4000:]
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    graded = [r for r in records if r["grade"] != "NOT-APPLICABLE"]
    assert len(graded) >= 25
    assert {r["grade"] for r in graded} <= {"PASSED", "INFORMATIONAL"}
    assert {r["implementation"] for r in records} == {"conformance-ref-stmp"}
