"""Read Allure result files (``*-result.json``) to link cases to them.

The suite labels each Allure result with story = case id (docs: GUIDE
"Reports"), and a run folder holds both records.jsonl and allure-results/,
so (run folder, case) joins a record to its Allure result.
"""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from reports.load_records import local_path

CASE_LABEL = "story"
_LABELS = "array<struct<name:string,value:string>>"


def read_allure_results(spark: SparkSession, files: list[Path]) -> DataFrame:
    """One row per result file: runDir, case, uuid, file, start, attachments, readable."""
    raw = spark.read.option("wholetext", True).text([str(f) for f in files])
    parsed = raw.select(
        local_path(F.col("_metadata.file_path")).alias("allureFile"), F.try_parse_json("value").alias("v")
    )
    labels = F.try_variant_get("v", "$.labels", _LABELS)
    story = F.get(F.filter(labels, lambda label: label["name"] == CASE_LABEL), 0)["value"]
    # Attachments sit at the top and inside steps nested to any depth; they are
    # the only Allure objects with a "source" key, and canonical JSON escapes
    # every quote inside strings, so counting the key counts attachments.
    attachments = F.regexp_count(F.to_json("v"), F.lit('"source":'))
    folder = F.regexp_replace("allureFile", r"/[^/]*$", "")
    return parsed.select(
        F.regexp_replace(folder, r"/allure-results$", "").alias("runDir"),
        story.alias("case"),
        F.try_variant_get("v", "$.uuid", "string").alias("allureUuid"),
        "allureFile",
        F.try_variant_get("v", "$.start", "bigint").alias("start"),
        F.coalesce(attachments, F.lit(0)).alias("attachments"),
        F.col("v").isNotNull().alias("readable"),
    )


def allure_by_case(results: DataFrame) -> DataFrame:
    """Per (runDir, case): the latest result's uuid and file, and all attachments."""
    linked = results.where(F.col("readable") & F.col("case").isNotNull())
    # The file breaks ties between results started at the same millisecond, so the pick never varies.
    latest = F.struct(F.coalesce("start", F.lit(0)), F.col("allureFile"))
    return linked.groupBy("runDir", "case").agg(
        F.max_by("allureUuid", latest).alias("allureUuid"),
        F.max_by("allureFile", latest).alias("allureFile"),
        F.count(F.lit(1)).alias("allureResults"),
        F.sum("attachments").cast("int").alias("attachments"),
    )


UNREADABLE_LISTED = 20


def allure_summary(results: DataFrame | None) -> dict:
    """Counts for summary.json: results read, and which files were not JSON."""
    if results is None:
        return {"results": 0, "unreadable": 0, "unreadableFiles": []}
    unreadable = F.when(~F.col("readable"), F.col("allureFile"))
    # Collected: one row of two counts and at most UNREADABLE_LISTED paths.
    row = results.agg(
        F.count(F.lit(1)).alias("results"),
        F.count(unreadable).alias("unreadable"),
        F.slice(F.sort_array(F.collect_list(unreadable)), 1, UNREADABLE_LISTED).alias("files"),
    ).first()
    return {"results": row.results, "unreadable": row.unreadable, "unreadableFiles": list(row.files)}
