"""Reading the inputs: JSON lines, gzipped JSON lines and Parquet, many files, malformed lines counted (issue 17 item 5).

Every expected file, line number and reason below is worked out by hand from
the lines these tests write.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed: pip install .[report]")

from report_fixtures import build_catalogues, record  # noqa: E402

from reports.fs import FileSystems  # noqa: E402
from reports.inputs import discover  # noqa: E402
from reports.load_records import read_records  # noqa: E402
from reports.pipeline import ReportOptions, run_report  # noqa: E402
from reports.record_schema import load_schema  # noqa: E402
from reports.summary_text import format_summary  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
CASE = "stmp/handshake/version-ok"
# The record fields as Parquet columns, in the schema's order; closeGrade and wirelog are nullable strings.
PARQUET_DDL = (
    "schemaVersion bigint, run string, time string, implementation string, implementationVersion string, "
    "target string, protocol string, family string, `case` string, transport string, requirement string, "
    "grade string, exchangeGrade string, closeGrade string, message string, spec string, specRef string, "
    "durationMs double, wirelog string"
)


def _rec(run: str, second: int, grade: str = "PASSED", **extra) -> dict:
    extra.setdefault("durationMs", 5.0)  # a double, as the Parquet column is
    return record(run, f"2026-02-01T10:00:{second:02d}Z", "alpha", "1.0", CASE, grade, **extra)


def _write_parquet(spark, path: Path, records: list[dict]) -> None:
    """One Parquet file (Spark writes a folder of part files; coalesce(1) makes it one part)."""
    columns = [c.strip().split(" ")[0].strip("`") for c in PARQUET_DDL.split(", ")]
    rows = [tuple(r[c] for c in columns) for r in records]
    spark.createDataFrame(rows, PARQUET_DDL).coalesce(1).write.mode("overwrite").parquet(str(path))


@pytest.fixture(scope="module")
def mixed_runs(spark, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three runs, one per format:
    j1/records.jsonl      line 1 valid, line 2 truncated JSON, line 3 valid
    g1/records.jsonl.gz   line 1 valid, line 2 blank (not a record), line 3 grade "BOGUS", line 4 valid
    p1/records.parquet/   rows 1 and 2 valid, row 3 durationMs -1
    """
    root = tmp_path_factory.mktemp("mixed") / "runs"
    (root / "j1").mkdir(parents=True)
    (root / "j1" / "records.jsonl").write_text(
        "\n".join([json.dumps(_rec("j1", 1)), '{"schemaVersion": 1, "run": ', json.dumps(_rec("j1", 3))]) + "\n",
        encoding="utf-8",
    )
    (root / "g1").mkdir()
    gz_lines = [json.dumps(_rec("g1", 11)), "", json.dumps(_rec("g1", 13, grade="BOGUS", exchangeGrade="PASSED")), json.dumps(_rec("g1", 14))]
    with gzip.open(root / "g1" / "records.jsonl.gz", "wt", encoding="utf-8") as out:
        out.write("\n".join(gz_lines) + "\n")
    _write_parquet(spark, root / "p1" / "records.parquet",
                   [_rec("p1", 21), _rec("p1", 22), _rec("p1", 23, durationMs=-1.0)])
    # Not records: the report's own tables in an old output folder, and Spark's marker files.
    _write_parquet(spark, root / "old-report" / "parquet" / "matrix", [_rec("x", 1)])
    return root


def _part_file(folder: Path) -> Path:
    (part,) = folder.glob("part-*.parquet")
    return part


def test_discovery_finds_jsonl_gzip_and_parquet_but_not_other_parquet(spark, mixed_runs: Path) -> None:
    found = discover(FileSystems(spark), [str(mixed_runs)])
    names = sorted(f.split("/runs/", 1)[1] for f in found.records_files)
    part = _part_file(mixed_runs / "p1" / "records.parquet").name
    assert names == ["g1/records.jsonl.gz", "j1/records.jsonl", f"p1/records.parquet/{part}"]


def test_each_line_of_each_format_is_numbered_and_checked(spark, mixed_runs: Path) -> None:
    files = discover(FileSystems(spark), [str(mixed_runs)]).records_files
    rows = read_records(spark, files, load_schema()).select("sourceFile", "line", "runDir", "run", "error").collect()
    got = {(Path(r.sourceFile).relative_to(mixed_runs).as_posix(), r.line): r.error for r in rows}
    part = "p1/records.parquet/" + _part_file(mixed_runs / "p1" / "records.parquet").name
    assert got == {
        ("j1/records.jsonl", 1): None,
        ("j1/records.jsonl", 2): "not valid JSON",
        ("j1/records.jsonl", 3): None,
        ("g1/records.jsonl.gz", 1): None,
        ("g1/records.jsonl.gz", 3): (
            'field \'grade\' "BOGUS": must be one of PASSED, FAILED, NON-STRICT, INFORMATIONAL, UNSUPPORTED, '
            "NOT-APPLICABLE, ERROR"
        ),
        ("g1/records.jsonl.gz", 4): None,
        (part, 1): None,
        (part, 2): None,
        # shown as the JSON value reads back: Spark's VARIANT keeps -1.0 as the decimal -1
        (part, 3): "field 'durationMs' -1: less than 0",
    }
    # A Parquet run's folder is the one holding records.parquet, as for records.jsonl.
    run_dirs = {r.run: Path(r.runDir).relative_to(mixed_runs).as_posix() for r in rows if r.error is None}
    assert run_dirs == {"j1": "j1", "g1": "g1", "p1": "p1"}


def test_the_report_counts_and_lists_malformed_lines_and_still_runs(
    spark, mixed_runs: Path, tmp_path: Path
) -> None:
    build_catalogues(tmp_path)
    options = ReportOptions(inputs=[str(mixed_runs)], out=tmp_path / "out", requirements_dir=tmp_path / "requirements")
    summary = run_report(spark, options)
    assert summary["records"] == {"valid": 6, "invalid": 3, "files": 3}
    part = "p1/records.parquet/" + _part_file(mixed_runs / "p1" / "records.parquet").name
    listed = [(Path(i["file"]).relative_to(mixed_runs).as_posix(), i["line"]) for i in summary["invalidRecords"]]
    # ordered by file, then line
    assert listed == [("g1/records.jsonl.gz", 3), ("j1/records.jsonl", 2), (part, 3)]
    table = [json.loads(line) for f in (tmp_path / "out" / "json" / "invalid_records").glob("part-*.json")
             for line in f.read_text(encoding="utf-8").splitlines()]
    assert sorted((Path(r["sourceFile"]).name, r["line"]) for r in table) == [
        (Path(part).name, 3), ("records.jsonl", 2), ("records.jsonl.gz", 3)
    ]
    text = format_summary(summary)
    assert "6 valid records, 3 invalid" in text
    assert f"invalid record {mixed_runs / 'j1' / 'records.jsonl'}:2: not valid JSON" in text
    # The latest run (p1, 10:00:22) makes alpha's one cell.
    matrix = [json.loads(line) for f in (tmp_path / "out" / "json" / "matrix").glob("part-*.json")
              for line in f.read_text(encoding="utf-8").splitlines()]
    assert [(m["run"], m["time"]) for m in matrix] == [("p1", "2026-02-01T10:00:22Z")]


def _report_cli(*argv: str) -> subprocess.CompletedProcess:
    # Its own interpreter: main() stops its SparkSession, which would end the tests' shared one.
    return subprocess.run([sys.executable, "-m", "reports.cli", *argv, "--shuffle-partitions", "2"], cwd=REPO,
                          capture_output=True, text=True, timeout=600)


def test_strict_inputs_exits_with_the_input_error_code_and_names_each_bad_line(mixed_runs: Path,
                                                                                 tmp_path: Path) -> None:
    run = _report_cli("--input", str(mixed_runs / "j1"), str(mixed_runs / "g1"), "--out", str(tmp_path / "out"),
                      "--strict-inputs")
    assert run.returncode == 3, run.stderr[-3000:]  # docs/reports.md: 3, an input error
    assert "2 malformed record(s) and --strict-inputs given" in run.stderr
    assert f"{mixed_runs / 'g1' / 'records.jsonl.gz'}:3: field 'grade'" in run.stderr
    assert f"{mixed_runs / 'j1' / 'records.jsonl'}:2: not valid JSON" in run.stderr
    assert not (tmp_path / "out" / "summary.json").exists()
