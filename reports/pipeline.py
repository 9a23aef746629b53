"""The report job: records and Allure results in, tables, summary.json and matrix.html out.

All per-record work happens in Spark. The driver collects only small
aggregates, each marked "Collected:" below: the matrix cells, from which it
judges levels and MUST coverage (reports.compliance, reports.coverage) and
builds the HTML page, and counts for summary.json.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from conformance.paths import docs_dir
from reports import tables
from reports.allure_results import allure_by_case, allure_summary, read_allure_results
from reports.baseline import baseline_records
from reports.catalogue import load_catalogues
from reports.compliance import compliance_rows, implementation_summaries
from reports.coverage import Coverage, coverage
from reports.fs import FileSystems, LocationError, child, display, local_path
from reports.grades import COUNT_COLUMN
from reports.html_matrix import FindingList, ImplementationRow, MatrixPage, render
from reports.inputs import InputSet, discover
from reports.load_records import checkpointed, read_records
from reports.outputs import driver_rows, total_order, write_json, write_table
from reports.page_model import protocol_matrices
from reports.progress import Stages
from reports.record_schema import load_schema

INVALID_IN_SUMMARY = 100
INVALID_SHOWN_STRICT = 20
FINDINGS_SHOWN = 500
MESSAGE_CHARS_SHOWN = 300
BASELINE_COLUMNS = [
    "protocol", "case", "transport", "implementation", "baselineRun", "baselineGrade", "run", "grade", "message"
]
FLAKY_COLUMNS = ["protocol", "case", "transport", "implementation", "implementationVersion", "runs", "grades"]
PAGE_COLUMNS = [
    "protocol",
    "family",
    "case",
    "transport",
    "requirement",
    "implementation",
    "implementationVersion",
    "time",
    "grade",
    "spec",
    "specRef",
    "wirelog",
    "runDir",
    "attachments",
]
_COVERAGE_SCHEMA = (
    "protocol string, implementation string, status string, spec string, mustTotal int, mustCovered int, "
    "mustUntestable int, coverage double, uncovered array<string>, reason string"
)
_COMPLIANCE_SCHEMA = (
    "implementation string, protocol string, implementationVersion string, cells int, "
    + ", ".join(f"{c} int" for c in COUNT_COLUMN.values())
    + ", mustCases int, mustPassed int, mustFailed int, mustNotTested int, mustNotApplicable int, "
    "mustNotTestedCases array<string>, judgedFailedOrError int, judgedNonStrict int, level string"
)


class InputError(ValueError):
    pass


class MalformedInputError(InputError):
    """--strict-inputs and some line is not a valid record."""


def generated_at(newest_record: datetime | None) -> str:
    """The report's date: SOURCE_DATE_EPOCH (reproducible-builds.org) when set, else its newest record's
    time, so the same inputs give byte-identical outputs."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch:
        return datetime.fromtimestamp(int(epoch), UTC).isoformat(timespec="seconds")
    if newest_record is None:
        return "no records"
    return newest_record.astimezone(UTC).isoformat(timespec="seconds")


@dataclass
class ReportOptions:
    inputs: list[str]
    out: Path | str
    baseline: str | None = None
    # Malformed lines stop the job (MalformedInputError) instead of being reported.
    strict_inputs: bool = False
    requirements_dir: Path | None = field(default_factory=lambda: docs_dir() / "requirements")
    # The matrix links each protocol's profile page here; spec links go to the public specs.
    profiles_dir: Path | None = field(default_factory=lambda: docs_dir() / "profiles")


@dataclass
class _Finding:
    """A findings table: written whole, summarised by its count and first rows."""

    page: FindingList
    first: list[dict[str, Any]]

    def summary(self) -> dict[str, Any]:
        return {"count": self.page.total, "first": self.first}


class _Cache:
    """Frames read more than once (written, then summarised) are computed once."""

    def __init__(self) -> None:
        self.frames: list[DataFrame] = []

    def keep(self, frame: DataFrame) -> DataFrame:
        self.frames.append(frame.persist(StorageLevel.MEMORY_AND_DISK))
        return frame

    def checkpoint(self, frame: DataFrame) -> DataFrame:
        """``checkpointed``, released with the rest (persisted on a cluster; unpersisting a local checkpoint does
        nothing)."""
        kept = checkpointed(frame)
        self.frames.append(kept)
        return kept

    def release(self) -> None:
        for frame in self.frames:
            frame.unpersist()


def run_report(spark: SparkSession, options: ReportOptions) -> dict[str, Any]:
    fs = FileSystems(spark)
    try:
        found = discover(fs, options.inputs)
        out = fs.mkdirs(str(options.out))
    except LocationError as exc:
        raise InputError(str(exc)) from None
    if found.missing:
        raise InputError("inputs not found: " + ", ".join(found.missing))
    if not found.records_files:
        raise InputError("no records file in the inputs (records*.jsonl, records*.jsonl.gz or records*.parquet)")
    cache = _Cache()
    stages = Stages(5 + bool(options.baseline), "report")
    try:
        return _Report(spark, options, found, fs, out, cache, stages).build()
    finally:
        stages.finish()
        cache.release()


def _cell_text(value: Any) -> str:
    if value is None:
        return ""
    return ", ".join(map(str, value)) if isinstance(value, list) else str(value)


def _finding(title: str, frame: DataFrame, columns: list[str]) -> _Finding:
    # Collected: the count and at most FINDINGS_SHOWN rows of a findings table.
    total = frame.count()
    # Ordered on every column, so which rows make the first N never depends on the run.
    rows = [r.asDict() for r in frame.orderBy(*total_order(frame)).limit(FINDINGS_SHOWN).collect()]
    shown = [[_cell_text(r[c]) for c in columns] for r in rows]
    return _Finding(FindingList(title, columns, shown, total), rows)


class _Report:
    def __init__(
        self, spark: SparkSession, options: ReportOptions, found: InputSet, fs: FileSystems, out: str, cache: _Cache,
        stages: Stages,
    ) -> None:
        self.spark, self.options, self.found, self.fs, self.out, self.cache = spark, options, found, fs, out, cache
        self.stages = stages
        self.schema = load_schema()
        self.outputs: dict[str, dict[str, str]] = {}

    def _write(self, name: str, frame: DataFrame) -> None:
        self.outputs[name] = {k: display(v) for k, v in write_table(self.fs, frame, self.out, name).items()}

    def build(self) -> dict[str, Any]:
        keep = self.cache.keep
        self.stages.step(f"reading {len(self.found.records_files)} records file(s)")
        records = read_records(self.spark, self.found.records_files, self.schema, keep=self.cache.checkpoint)
        valid = records.where(F.col("error").isNull())
        # kept: listed, then written twice; a few rows, where scanning the records again would read all
        invalid = keep(records.where(F.col("error").isNotNull()).select("sourceFile", "line", "error", "raw"))
        # Collected: one row of counts. This first pass over the records also fills their cache.
        is_valid = F.col("error").isNull()
        counted = records.agg(
            F.count_if(is_valid).alias("valid"),
            F.count_if(~is_valid).alias("invalid"),
            F.max(F.when(is_valid, F.col("ts"))).alias("newest"),
            F.count_distinct(F.when(is_valid, F.col("run"))).alias("runs"),
        ).first()
        # Collected: at most INVALID_IN_SUMMARY rows, only when there are invalid records.
        invalid_rows = (
            invalid.orderBy("sourceFile", "line").limit(INVALID_IN_SUMMARY).collect() if counted.invalid else []
        )
        if self.options.strict_inputs and counted.invalid:
            shown = "\n".join(f"  {r.sourceFile}:{r.line}: {r.error}" for r in invalid_rows[:INVALID_SHOWN_STRICT])
            more = counted.invalid - min(len(invalid_rows), INVALID_SHOWN_STRICT)
            raise MalformedInputError(
                f"{counted.invalid} malformed record(s) and --strict-inputs given, so no report was written:\n{shown}"
                + (f"\n  ... and {more} more" if more else "")
            )
        allure_link, allure_stats = None, allure_summary(None)
        if self.found.allure_files:
            allure = keep(read_allure_results(self.spark, self.found.allure_files))
            allure_link, allure_stats = allure_by_case(allure), allure_summary(allure)

        self.stages.step("matrix, runs, flaky and durations tables")
        matrix = keep(tables.matrix(valid, allure_link))
        runs = keep(tables.runs(valid))
        flaky = keep(tables.flaky(valid))
        for name, frame in [
            ("matrix", matrix),
            ("runs", runs),
            ("flaky", flaky),
            # written twice (Parquet, JSON): kept, so the percentiles are computed once
            ("durations", keep(tables.durations(valid))),
            ("invalid_records", invalid),
        ]:
            self._write(name, frame)
        against_baseline = self._baseline_findings(matrix, valid)
        flaky_finding = _finding("Flaky cases (grade changed between runs of one version)", flaky, FLAKY_COLUMNS)

        # Collected: the matrix itself, one row per implementation x case x
        # transport, which the page shows and the levels and coverage are
        # judged on; every other table stays in Spark.
        self.stages.step("compliance and MUST coverage")
        message = F.substring("message", 1, MESSAGE_CHARS_SHOWN).alias("message")
        cells = matrix.select(*PAGE_COLUMNS, message).orderBy(*PAGE_COLUMNS).collect()
        catalogues = load_catalogues(self.options.requirements_dir)
        compliance = compliance_rows(cells, catalogues)
        must_coverage = coverage(cells, catalogues)
        self._write("compliance", driver_rows(self.spark, compliance, _COMPLIANCE_SCHEMA))
        self._write("coverage", driver_rows(self.spark, [c.as_row() for c in must_coverage], _COVERAGE_SCHEMA))

        self.stages.step("summary")
        implementations = implementation_summaries(compliance)
        summary: dict[str, Any] = {
            "generated": generated_at(counted.newest),
            "inputs": self.options.inputs,
            "records": {
                "valid": counted.valid,
                "invalid": counted.invalid,
                "files": len(self.found.records_files),
            },
            # a run is one invocation (one run id), however many protocols it covered
            "runs": counted.runs,
            "invalidRecords": [{"file": r.sourceFile, "line": r.line, "error": r.error} for r in invalid_rows],
            "allure": allure_stats,
            "implementations": implementations,
            "gradeCounts": {g: sum(i["grades"][g] for i in implementations) for g in COUNT_COLUMN},
            "coverage": [c.as_row() for c in must_coverage],
            "baseline": self.options.baseline,
            "regressions": against_baseline["regressions"].summary() if against_baseline else {"count": 0, "first": []},
            "newPasses": against_baseline["new_passes"].summary() if against_baseline else {"count": 0, "first": []},
            "flaky": flaky_finding.summary(),
            "outputs": {
                "matrixHtml": display(self._at("matrix.html")),
                "summaryJson": display(self._at("summary.json")),
                "parquet": display(self._at("parquet")),
                "json": display(self._at("json")),
                "tables": self.outputs,
            },
        }
        self.stages.step("matrix page")
        findings = [f.page for f in [*against_baseline.values(), flaky_finding]]
        self._write_page(cells, summary, compliance, must_coverage, findings)
        # Last: a report without summary.json is one whose job did not finish.
        write_json(self.fs, self._at("summary.json"), summary)
        return summary

    def _at(self, name: str) -> str:
        return child(self.out, name)

    def _baseline_findings(self, matrix: DataFrame, valid: DataFrame) -> dict[str, _Finding]:
        given = self.options.baseline
        if not given:
            return {}
        self.stages.step("baseline: regressions and new passes")
        base = baseline_records(self.spark, given, valid, self.schema)
        found = {}
        for name, frame, title in [
            ("regressions", tables.regressions(matrix, base), f"Regressions against baseline {given}"),
            ("new_passes", tables.new_passes(matrix, base), f"New passes against baseline {given}"),
        ]:
            frame = self.cache.keep(frame)
            self._write(name, frame)
            found[name] = _finding(title, frame, BASELINE_COLUMNS)
        return found

    def _write_page(
        self,
        cells: list[Any],
        summary: dict[str, Any],
        compliance: list[dict[str, Any]],
        must_coverage: list[Coverage],
        findings: list[FindingList],
    ) -> None:
        # Profile pages are linked relative to the page only when the page is local.
        out_dir = local_path(self.out)
        profiles_dir = self.options.profiles_dir if out_dir is not None else None
        out_dir = out_dir or Path(urlparse(self.out).path)
        notes = {(r["protocol"], r["implementation"]): f"{r['implementationVersion']}, {r['level']}"
                 for r in compliance}
        page = MatrixPage(
            generated=summary["generated"],
            records=summary["records"]["valid"],
            invalid=summary["records"]["invalid"],
            runs=summary["runs"],
            implementations=[
                ImplementationRow(i["implementation"], i["version"], i["level"], i["cells"], i["grades"], i["must"])
                for i in summary["implementations"]
            ],
            coverage=must_coverage,
            matrices=protocol_matrices(cells, profiles_dir, out_dir, notes),
            findings=findings,
        )
        self.fs.write_text(self._at("matrix.html"), render(page))
