"""The report's tables, each computed in Spark from the valid records.

``valid`` below is the frame from load_records.read_records restricted to
rows whose ``error`` is NULL.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from reports.grades import COUNT_COLUMN, JUDGED_REQUIREMENTS, level, severity

CELL_KEY = ["implementation", "protocol", "case"]

MATRIX_COLUMNS = [
    "protocol",
    "family",
    "case",
    "requirement",
    "implementation",
    "implementationVersion",
    "run",
    "time",
    "grade",
    "exchangeGrade",
    "closeGrade",
    "message",
    "spec",
    "specRef",
    "durationMs",
    "transport",
    "target",
    "wirelog",
    "runDir",
    "sourceFile",
    "line",
]


def _worst_per(frame: DataFrame, key: list[str]) -> DataFrame:
    """The worst-graded record per key (latest first among equals)."""
    order = Window.partitionBy(*key).orderBy(
        severity(F.col("grade")).desc(), F.col("ts").desc(), F.col("sourceFile"), F.col("line")
    )
    return frame.withColumn("_rank", F.row_number().over(order)).where("_rank = 1").drop("_rank")


def latest_cells(records: DataFrame) -> DataFrame:
    """Per implementation x case: its latest run's record (the worst, if that run graded it twice)."""
    cell = Window.partitionBy(*CELL_KEY)
    latest_run = F.max_by("run", F.struct("ts", "run")).over(cell)
    in_latest = records.withColumn("_latestRun", latest_run).where(F.col("run") == F.col("_latestRun"))
    return _worst_per(in_latest, CELL_KEY).select(*MATRIX_COLUMNS)


def matrix(valid: DataFrame, allure: DataFrame | None) -> DataFrame:
    cells = latest_cells(valid)
    if allure is None:
        return cells.select(
            "*",
            F.lit(None).cast("string").alias("allureUuid"),
            F.lit(None).cast("string").alias("allureFile"),
            F.lit(0).alias("attachments"),
        )
    linked = cells.join(allure, ["runDir", "case"], "left")
    return linked.select(
        *MATRIX_COLUMNS, "allureUuid", "allureFile", F.coalesce("attachments", F.lit(0)).alias("attachments")
    )


def _grade_counts(frame: DataFrame, key: list[str], extra: list) -> DataFrame:
    judged = F.col("requirement").isin(*JUDGED_REQUIREMENTS)
    counts = [F.count(F.when(F.col("grade") == g, 1)).alias(name) for g, name in COUNT_COLUMN.items()]
    judged_bad = F.count(F.when(judged & F.col("grade").isin("FAILED", "ERROR"), 1))
    judged_non_strict = F.count(F.when(judged & (F.col("grade") == "NON-STRICT"), 1))
    return (
        frame.groupBy(*key)
        .agg(
            F.count(F.lit(1)).alias("cases"),
            *counts,
            judged_bad.alias("judgedFailedOrError"),
            judged_non_strict.alias("judgedNonStrict"),
            *extra,
        )
        .withColumn("level", level(F.col("judgedFailedOrError"), F.col("judgedNonStrict")))
    )


def compliance(matrix_cells: DataFrame) -> DataFrame:
    """Per implementation and protocol: grade counts over its matrix row and its level."""
    version = F.max_by("implementationVersion", F.try_to_timestamp("time")).alias("implementationVersion")
    return _grade_counts(matrix_cells, ["implementation", "protocol"], [version])


def runs(valid: DataFrame) -> DataFrame:
    return valid.groupBy("protocol", "run", "implementation", "implementationVersion").agg(
        F.min("ts").alias("started"),
        F.max("ts").alias("lastCase"),
        F.count(F.lit(1)).alias("records"),
        F.min("runDir").alias("runDir"),
    )


def _cells_against_baseline(matrix_cells: DataFrame, baseline_records: DataFrame) -> DataFrame:
    baseline = latest_cells(baseline_records).select(
        *CELL_KEY, F.col("run").alias("baselineRun"), F.col("grade").alias("baselineGrade")
    )
    return matrix_cells.join(baseline, CELL_KEY).select(
        "protocol",
        "family",
        "case",
        "requirement",
        "implementation",
        "implementationVersion",
        "baselineRun",
        "baselineGrade",
        "run",
        "grade",
        "message",
    )


def regressions(matrix_cells: DataFrame, baseline_records: DataFrame) -> DataFrame:
    """PASSED in the baseline, FAILED or ERROR in the latest run."""
    compared = _cells_against_baseline(matrix_cells, baseline_records)
    return compared.where((F.col("baselineGrade") == "PASSED") & F.col("grade").isin("FAILED", "ERROR"))


def new_passes(matrix_cells: DataFrame, baseline_records: DataFrame) -> DataFrame:
    """Graded but not PASSED in the baseline, PASSED in the latest run."""
    compared = _cells_against_baseline(matrix_cells, baseline_records)
    return compared.where((F.col("baselineGrade") != "PASSED") & (F.col("grade") == "PASSED"))


def flaky(valid: DataFrame) -> DataFrame:
    """Cases whose grade differed between runs of one implementation version."""
    version_key = ["implementation", "implementationVersion", "protocol", "case"]
    per_run = valid.groupBy(*version_key, "run").agg(
        F.max_by("grade", severity(F.col("grade"))).alias("grade"), F.min("family").alias("family")
    )
    return (
        per_run.groupBy(*version_key)
        .agg(
            F.min("family").alias("family"),
            F.count(F.lit(1)).alias("runs"),
            F.array_sort(F.collect_set("grade")).alias("grades"),
        )
        .where(F.size("grades") > 1)
    )


def durations(valid: DataFrame) -> DataFrame:
    """Per case and implementation; percentiles are exact, interpolated between ranks."""
    quantiles = F.percentile("durationMs", F.array(F.lit(0.5), F.lit(0.95)))
    return (
        valid.groupBy("protocol", "family", "case", "implementation")
        .agg(F.count(F.lit(1)).alias("samples"), quantiles.alias("_q"), F.max("durationMs").alias("maxMs"))
        .select(
            "protocol",
            "family",
            "case",
            "implementation",
            "samples",
            F.col("_q")[0].alias("medianMs"),
            F.col("_q")[1].alias("p95Ms"),
            "maxMs",
        )
    )
