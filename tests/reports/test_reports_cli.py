"""``reports.cli.main``: the command line, run as the lead's ``conformance report`` runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed: pip install .[report]")

from reports.cli import main, parser  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def test_usage_names_the_documented_options() -> None:
    usage = parser().format_help()
    for option in ("--input", "--out", "--baseline", "--master"):
        assert option in usage


def test_missing_input_fails_before_spark_starts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--input", str(tmp_path / "nope"), "--out", str(tmp_path / "out")]) == 3
    assert "inputs not found" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_end_to_end_prints_the_summary(fixture_root: Path, tmp_path: Path) -> None:
    # Its own interpreter: main() stops its SparkSession, which would end the tests' shared one.
    # As users run it: `conformance report`, on the embedded local[*] default.
    out = tmp_path / "out"
    argv = [
        "report",
        "--input",
        str(fixture_root / "runs" / "a1"),
        str(fixture_root / "runs" / "a2"),
        str(fixture_root / "runs" / "b1"),
        "--out",
        str(out),
        "--baseline",
        "a1",
        "--fail-on-regressions",
        "--shuffle-partitions",
        "2",
        "--requirements",
        str(fixture_root / "requirements"),
    ]
    run = subprocess.run([sys.executable, "-m", "conformance.cli", *argv], cwd=REPO, capture_output=True, text=True,
                         timeout=600)
    # The gate: a1 -> a2 regressed one cell, so the documented regressions code.
    assert run.returncode == 1, run.stderr[-3000:]
    # Without a3 the latest alpha run is a2: version-unsupported FAILED, version-ok PASSED.
    # stmp has four MUST cases: the two recorded and two only the catalogue names, which nobody ran.
    assert (
        "alpha 1.0: non-compliant (MUST cases 4: 1 passed, 1 failed or error, 2 not tested; "
        "cells: PASSED 1, FAILED 1, NON-STRICT 1, INFORMATIONAL 1)"
    ) in run.stdout
    assert "beta 2.0: not fully tested (MUST cases 4: 2 passed, 0 failed or error, 2 not tested;" in run.stdout
    assert "Against baseline a1: 1 regressions, 0 new passes" in run.stdout
    assert "MUST coverage (sentences a case ran for, any implementation): rsio unknown" in run.stdout
    assert "stmp 2/4 tested (50%)" in run.stdout
    assert f"Matrix page: {out / 'matrix.html'}" in run.stdout
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["records"] == {"valid": 13, "invalid": 0, "files": 3}
