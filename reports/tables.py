"""The report's tables, each computed in Spark from the valid records.

``valid`` below is the frame from load_records.read_records restricted to
rows whose ``error`` is NULL.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from reports.grades import WORST_FIRST
from reports.load_records import checkpointed

CASE_KEY = ["implementation", "protocol", "case"]
#: at most this many case keys with two grades are sent to every task whole (a few MiB)
MIXED_KEYS_BROADCAST = 100_000
# One cell per transport: a transport the target does not offer
# (NOT-APPLICABLE) must not hide the grade of one it does.
CELL_KEY = [*CASE_KEY, "transport"]

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


def severity(grade: Column) -> Column:
    """Higher is worse; unknown grades cannot occur in valid records."""
    result = F.lit(0)
    for rank, name in enumerate(reversed(WORST_FIRST)):
        result = F.when(grade == name, F.lit(rank)).otherwise(result)
    return result


def _worst_per(frame: DataFrame, key: list[str]) -> DataFrame:
    """The worst-graded record per key (latest first among equals)."""
    order = Window.partitionBy(*key).orderBy(
        severity(F.col("grade")).desc(), F.col("ts").desc(), F.col("sourceFile"), F.col("line")
    )
    return frame.withColumn("_rank", F.row_number().over(order)).where("_rank = 1").drop("_rank")


def latest_cells(records: DataFrame) -> DataFrame:
    """Per implementation x case x transport: the record of the latest run that graded the case
    (the worst, if that run graded it twice on one transport)."""
    # An aggregate (one small row per case) joined back by broadcast, not a window over every
    # record: only the latest runs' records, a sliver of the input, reach the shuffle that ranks them.
    latest_run = records.groupBy(*CASE_KEY).agg(F.max_by("run", F.struct("ts", "run")).alias("run"))
    in_latest = records.join(F.broadcast(latest_run), [*CASE_KEY, "run"])
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


def runs(valid: DataFrame) -> DataFrame:
    key = ["protocol", "run", "implementation", "implementationVersion"]
    # The folder is a grouping key first: a string minimum over every record is a sort-based aggregate
    # (every record sorted), a string key a hash one; a run has one folder or a few, so the minimum is
    # then taken over a row per run and folder.
    per_folder = valid.groupBy(*key, "runDir").agg(
        F.min("ts").alias("started"), F.max("ts").alias("lastCase"), F.count(F.lit(1)).alias("records")
    )
    return per_folder.groupBy(*key).agg(
        F.min("started").alias("started"),
        F.max("lastCase").alias("lastCase"),
        F.sum("records").alias("records"),
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
        "transport",
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
    """Cases whose grade on one transport differed between runs of one implementation version."""
    version_key = ["implementation", "implementationVersion", "protocol", "case", "transport"]
    # Runs' worst grades can differ only where the records hold two grades: the aggregate per run (about a row
    # per record) is computed for those keys alone, found by one aggregate with a row per key.
    # On the grades' ranks, not their texts: a string minimum is a sort-based aggregate (every record sorted),
    # an integer one a hash aggregate; valid grades are the seven ranked ones, so "two ranks" is "two grades".
    rank = severity(F.col("grade"))
    mixed = valid.groupBy(*version_key).agg(F.min(rank).alias("_low"), F.max(rank).alias("_high"))
    mixed = checkpointed(mixed.where(F.col("_low") != F.col("_high")).select(*version_key))
    # Counted (a job of its own) so the join can take the keys by broadcast when they are few, as flaky cases
    # are: a join left to adaptive execution shuffles the records by key before it learns how few they are.
    if mixed.count() <= MIXED_KEYS_BROADCAST:
        mixed = F.broadcast(mixed)
    per_run = valid.join(mixed, version_key, "left_semi").groupBy(*version_key, "run").agg(
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
