"""The report as a Spark job run the way Spark users run jobs (issue 17, A-G).

Pure-Python checks of the session settings and command line, and local-mode
runs for URIs, deterministic outputs and empty tables. The standalone cluster
is in test_reports_cluster.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed: pip install .[report]")

from report_fixtures import OK, record, write_run  # noqa: E402

from reports import pipeline  # noqa: E402
from reports.cli import EXIT_BAD_INPUT, EXIT_REGRESSIONS, EXIT_SPARK_FAILED, EXIT_USAGE, main, parser  # noqa: E402
from reports.pipeline import ReportOptions, run_report  # noqa: E402
from reports.spark_session import default_settings, parse_conf, python_for_workers, shuffle_partitions_for  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


# A: the executors' Python


def test_workers_run_the_drivers_python_unless_told(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    assert python_for_workers({}) == sys.executable
    monkeypatch.setenv("PYSPARK_PYTHON", "/opt/py/bin/python3")
    assert python_for_workers({}) == "/opt/py/bin/python3"
    assert python_for_workers({"spark.pyspark.python": "/usr/bin/python3.12"}) == "/usr/bin/python3.12"


# B: locations are URIs


def test_inputs_and_output_as_file_uris_without_walking_local_paths(
    spark, fixture_root: Path, tmp_path: Path, report, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_walk(*_args, **_kwargs):
        raise AssertionError("inputs are listed through Hadoop's FileSystem, not os.walk")

    monkeypatch.setattr(os, "walk", no_walk)
    out = tmp_path / "uri-out"  # Hadoop takes URIs unescaped: "file:///a b", never %20
    options = ReportOptions(
        inputs=[(fixture_root / "runs").as_uri()],
        out=out.as_uri(),
        baseline=(fixture_root / "runs" / "a1").as_uri(),
        requirements_dir=fixture_root / "requirements",
        profiles_dir=fixture_root / "docs" / "profiles",
    )
    summary = run_report(spark, options)
    expected, _ = report
    assert summary["records"] == expected["records"] and summary["regressions"] == expected["regressions"]
    assert summary["implementations"] == expected["implementations"]
    assert (out / "summary.json").is_file() and (out / "matrix.html").is_file()
    assert summary["outputs"]["matrixHtml"] == str(out / "matrix.html")


# C and D: partitions and settings


def test_adaptive_execution_and_partitions_follow_the_cores() -> None:
    assert default_settings("spark://10.0.0.5:7077")["spark.sql.adaptive.enabled"] == "true"
    # Embedded, adaptive execution costs more planning and jobs than it saves: one partition per core instead.
    assert default_settings("local[*]")["spark.sql.adaptive.enabled"] == "false"
    assert shuffle_partitions_for(2, local=True) == 2
    # Not Spark's 200 on a small cluster; scales with a large one.
    assert shuffle_partitions_for(2) == 8 and shuffle_partitions_for(64) == 128
    # A cluster's driver must be reachable from the executors: loopback binding is for local mode only.
    assert "spark.driver.bindAddress" not in default_settings("spark://10.0.0.5:7077")


def test_conf_is_repeatable_and_master_has_no_cli_default() -> None:
    args = parser().parse_args(
        ["--input", "r", "--out", "o", "--conf", "spark.executor.memory=4g", "--conf", "spark.a=b=c"]
    )
    assert parse_conf(args.conf) == {"spark.executor.memory": "4g", "spark.a": "b=c"}
    # None, so that spark-submit's --master is not overridden by a default of ours.
    assert args.master is None
    with pytest.raises(ValueError, match="key=value"):
        parse_conf(["spark.executor.memory"])


# E: deterministic outputs


def test_first_findings_are_a_total_order(spark, monkeypatch: pytest.MonkeyPatch) -> None:
    columns = pipeline.FLAKY_COLUMNS
    # Equal on the first three columns; only later columns tell them apart.
    rows = [("stmp", "stmp/x", "tcp", impl, "1", 2, ["FAILED", "PASSED"]) for impl in ("c", "b", "a")]
    frame = spark.createDataFrame(
        rows, "protocol string, case string, transport string, implementation string, "
        "implementationVersion string, runs int, grades array<string>"
    ).coalesce(1)
    monkeypatch.setattr(pipeline, "FINDINGS_SHOWN", 2)
    finding = pipeline._finding("flaky", frame, columns)
    assert [r["implementation"] for r in finding.first] == ["a", "b"]
    assert finding.page.total == 3


def _report_bytes(spark, fixture_root: Path, out: Path) -> dict[str, bytes]:
    run_report(
        spark,
        ReportOptions(
            inputs=[str(fixture_root / "runs")],
            out=out,
            baseline="a1",
            requirements_dir=fixture_root / "requirements",
            profiles_dir=fixture_root / "docs" / "profiles",
        ),
    )
    return {str(p.relative_to(out)).rsplit("/part-", 1)[0]: p.read_bytes()
            for p in sorted(out.rglob("*")) if p.suffix in (".json", ".html")}


def test_same_inputs_give_byte_identical_json_and_html(
    spark, fixture_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    out = tmp_path / "out"
    before = spark.conf.get("spark.sql.shuffle.partitions")
    try:
        spark.conf.set("spark.sql.shuffle.partitions", "1")
        first = _report_bytes(spark, fixture_root, out)
        # Other partitioning, so rows reach the writers in another order.
        spark.conf.set("spark.sql.shuffle.partitions", "7")
        second = _report_bytes(spark, fixture_root, out)
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", before)
    assert "json/matrix" in first and "matrix.html" in first and "summary.json" in first
    assert first == second
    # The date shown is the newest record's (g1's last case, report_fixtures.py), not the clock's.
    assert b'"generated": "2026-01-04T08:00:03+00:00"' in first["summary.json"]


# F: empty tables


def test_an_empty_table_reads_back_with_its_schema(spark, tmp_path: Path) -> None:
    run = write_run(tmp_path / "runs", "e1", [record("e1", "2026-02-01T00:00:00Z", "eps", "1", OK, "PASSED")])
    run_report(spark, ReportOptions([str(run)], tmp_path / "out", requirements_dir=None, profiles_dir=None))
    flaky = spark.read.parquet(str(tmp_path / "out" / "parquet" / "flaky"))
    assert flaky.count() == 0
    assert {"protocol", "case", "transport", "implementation", "grades"} <= set(flaky.columns)


def test_rows_from_the_driver_make_the_frame_create_dataframe_makes(spark) -> None:
    from reports.outputs import driver_rows

    ddl = "name string, n int, share double, items array<string>, note string"
    rows = [
        {"name": 'quote " and \\ and \u00e9', "n": 3, "share": 0.1 + 0.2, "items": ["a", "b"], "note": None},
        {"name": "b", "n": None, "share": 1.0, "items": [], "note": "x", "ignored": object()},
    ]
    made = driver_rows(spark, rows, ddl)
    # Spark's own conversion of the same Python rows is the reference.
    reference = spark.createDataFrame([{k: v for k, v in r.items() if k != "ignored"} for r in rows], ddl)
    assert made.schema == reference.schema
    assert made.collect() == reference.collect()
    empty = driver_rows(spark, [], ddl)
    assert empty.schema == reference.schema and empty.count() == 0


# G: exit codes


def test_usage_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (
        ["--input", str(tmp_path), "--out", str(tmp_path / "o"), "--conf", "no-equals-sign"],
        ["--input", str(tmp_path), "--out", str(tmp_path / "o"), "--fail-on-regressions"],
    ):
        with pytest.raises(SystemExit) as exited:
            main(argv)
        assert exited.value.code == EXIT_USAGE
    assert "--fail-on-regressions needs --baseline" in capsys.readouterr().err


def test_exit_codes_are_distinct() -> None:
    assert len({0, EXIT_REGRESSIONS, EXIT_USAGE, EXIT_BAD_INPUT, EXIT_SPARK_FAILED}) == 5


def test_spark_that_cannot_start_exits_4(fixture_root: Path, tmp_path: Path) -> None:
    argv = ["--input", str(fixture_root / "runs" / "a1"), "--out", str(tmp_path / "out"),
            "--conf", "spark.driver.memory=not-a-size"]
    code = f"import sys; from reports.cli import main; sys.exit(main({argv!r}))"
    run = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert run.returncode == 4, (run.returncode, run.stderr[-2000:])
    assert "Spark did not start" in run.stderr
