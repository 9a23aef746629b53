"""The report on a real Spark standalone cluster (issue 17): one master, one worker, on 127.0.0.1.

The same inputs go into the same output folder three ways: embedded local
mode (the tests' session), ``--master spark://...``, and ``spark-submit`` of
the packaged entry point (reports/submit.py) with no --master of our own. The
JSON tables, summary.json and matrix.html must be the same bytes each time.
The worker's own ``python3`` is not the driver's (spark_cluster.FOREIGN_PYTHON),
so the cluster runs pass only if the executors run the driver's Python.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed: pip install .[report]")

from spark_cluster import spark_home, standalone_cluster  # noqa: E402

from reports.pipeline import ReportOptions, run_report  # noqa: E402
from reports.spark_session import java_problem  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
RUN_TIMEOUT_S = 150
# Fixed, so that the page's date is the same in all three runs whatever the clock says.
SOURCE_DATE_EPOCH = "1767225600"
# Slow (about a minute and a half on two idle cores) but part of CI (scripts/test.sh runs every test), where
# Java is installed (scripts/system-deps.sh test), so a missing one fails there rather than skipping.
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(java_problem() is not None and os.environ.get("CI") != "true", reason=str(java_problem())),
]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])])
    env["SPARK_LOCAL_IP"] = "127.0.0.1"  # the driver's address as the executors dial it back
    env["SOURCE_DATE_EPOCH"] = SOURCE_DATE_EPOCH
    return env


def _report_args(fixture_root: Path, out: Path) -> list[str]:
    return ["--input", str(fixture_root / "runs"), "--out", str(out), "--baseline", "a1",
            "--requirements", str(fixture_root / "requirements"), "--shuffle-partitions", "2"]


def _run(command: list[str], label: str, cluster) -> subprocess.CompletedProcess:
    done = subprocess.run(command, cwd=REPO, env=_env(), capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    if done.returncode != 0:
        pytest.fail(f"{label} exited {done.returncode}:\n{done.stderr[-4000:]}\n{cluster.log_tail()}")
    return done


def _take(out: Path) -> dict[str, bytes]:
    """Every JSON and HTML output keyed by its place (Spark names part files at random); then clear out."""
    found = {}
    for path in sorted(out.rglob("*")):
        if path.suffix in (".json", ".html"):
            found[str(path.relative_to(out)).rsplit("/part-", 1)[0]] = path.read_bytes()
    shutil.rmtree(out)
    return found


def test_cluster_and_spark_submit_outputs_equal_local_mode(
    spark, fixture_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    monkeypatch.setenv("SOURCE_DATE_EPOCH", SOURCE_DATE_EPOCH)
    run_report(spark, ReportOptions(inputs=[str(fixture_root / "runs")], out=out, baseline="a1",
                                    requirements_dir=fixture_root / "requirements"))
    local = _take(out)
    assert {"summary.json", "matrix.html", "json/matrix", "json/regressions"} <= set(local)

    with standalone_cluster(tmp_path / "cluster") as cluster:
        cli = [sys.executable, "-m", "reports.cli", *_report_args(fixture_root, out)]
        _run([*cli, "--master", cluster.master_url, "--conf", "spark.executor.memory=512m"], "--master", cluster)
        assert _take(out) == local

        submit = [str(spark_home() / "bin" / "spark-submit"), "--master", cluster.master_url,
                  "--name", "submitted-report", "--conf", "spark.executor.memory=512m",
                  str(REPO / "reports" / "submit.py"),
                  *_report_args(fixture_root, out)]
        submitted = _run(submit, "spark-submit", cluster)
        assert "Against baseline a1:" in submitted.stdout
        assert _take(out) == local

        # Both ran on the cluster, spark-submit's under its master and --name, not local[*] ...
        assert cluster.applications() == ["conformance-report", "submitted-report"]
        # ... and the worker's own python3 was never asked to run the job's Python code.
        assert not cluster.foreign_python_calls.exists(), cluster.foreign_python_calls.read_text()
