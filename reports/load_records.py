"""Read records files (JSON lines, gzipped or not, and Parquet) into one DataFrame, numbering lines and validating.

Every non-blank line becomes one row carrying its source file and 1-based
line number, an ``error`` (NULL when the record is valid) and the record's
fields typed per the schema. Invalid rows stay in the frame so they can be
counted and reported; nothing is dropped.

A Parquet row is validated as the JSON object of its columns (a NULL column
is a JSON null) and numbered by its 1-based row index in its file, so both
formats go through the same checks and are reported the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from reports.inputs import is_parquet
from reports.record_schema import fast_columns, fast_number, full_columns, record_error

RAW_CHARS_KEPT = 300
SOURCE_COLUMNS = ["sourceFile", "line", "runDir"]


def local_path(uri: Column) -> Column:
    """Spark's file URI (``file:/a%20b+c``) as a plain path; other schemes stay URIs."""
    # url_decode turns '+' into a space; a '+' in a path URI is literal.
    decoded = F.url_decode(F.replace(uri, F.lit("+"), F.lit("%2B")))
    return F.when(decoded.startswith("file:"), F.regexp_replace(decoded, r"^file:(//)?", "")).otherwise(decoded)


def _numbered_lines(spark: SparkSession, files: list[str]) -> DataFrame:
    """Text lines with (file, line number), computed without a per-file sort.

    Within one scanned chunk of a file, monotonically_increasing_id counts up
    by one per line, so a line's number is the lines in earlier chunks of its
    file plus its offset in its own chunk. Only the per-chunk counts (a few
    rows per file) are shuffled.
    """
    lines = spark.read.text(files).select(
        F.col("_metadata.file_path").alias("uri"),
        F.col("_metadata.file_block_start").alias("blockStart"),
        F.monotonically_increasing_id().alias("rowId"),
        F.col("value"),
    )
    earlier_chunks = Window.partitionBy("uri").orderBy("blockStart").rowsBetween(Window.unboundedPreceding, -1)
    chunks = (
        lines.groupBy("uri", "blockStart")
        .agg(F.count(F.lit(1)).alias("chunkLines"), F.min("rowId").alias("firstRowId"))
        .withColumn("linesBefore", F.coalesce(F.sum("chunkLines").over(earlier_chunks), F.lit(0)))
        .drop("chunkLines")
        # per chunk, not per line: the path's decoding and its folder are the same for all its lines
        .withColumn("sourceFile", local_path(F.col("uri")))
        .withColumn("runDir", run_dir(F.col("sourceFile")))
    )
    return lines.join(F.broadcast(chunks), ["uri", "blockStart"]).select(
        "sourceFile",
        (F.col("linesBefore") + F.col("rowId") - F.col("firstRowId") + 1).alias("line"),
        "runDir",
        F.col("value"),
    )


def _parquet_rows(spark: SparkSession, files: list[str]) -> DataFrame:
    """Parquet rows as JSON objects, numbered by row index: the same (sourceFile, line, value) as text lines."""
    # Files written at different times may differ in columns; a column a file lacks reads as NULL.
    table = spark.read.option("mergeSchema", "true").parquet(*files)
    row = F.struct(*[F.col(f"`{name}`") for name in table.columns])
    return table.select(
        local_path(F.col("_metadata.file_path")).alias("sourceFile"),
        (F.col("_metadata.row_index") + 1).alias("line"),
        F.to_json(row, {"ignoreNullFields": "false"}).alias("value"),
    ).withColumn("runDir", run_dir(F.col("sourceFile")))


def numbered_lines(spark: SparkSession, files: list[str]) -> DataFrame:
    json_files = [f for f in files if not is_parquet(f)]
    parquet_files = [f for f in files if is_parquet(f)]
    parts = ([_numbered_lines(spark, json_files)] if json_files else []) + (
        [_parquet_rows(spark, parquet_files)] if parquet_files else []
    )
    return parts[0] if len(parts) == 1 else parts[0].unionByName(parts[1])


def run_dir(source_file: Column) -> Column:
    """The run folder: the records file's folder (a Parquet part file's records*.parquet folder's folder)."""
    return F.regexp_replace(source_file, r"(/records[^/]*\.parquet)?/[^/]*$", "")


def _spark_type(field_schema: dict[str, Any], root: dict[str, Any]) -> str:
    if "$ref" in field_schema:
        field_schema = root["$defs"][field_schema["$ref"].removeprefix("#/$defs/")]
    if "oneOf" in field_schema:
        options = [_spark_type(o, root) for o in field_schema["oneOf"]]
        return next((o for o in options if o != "void"), "string")
    types = field_schema.get("type", "string")
    types = [t for t in (types if isinstance(types, list) else [types]) if t != "null"] or ["null"]
    return {"integer": "bigint", "number": "double", "string": "string", "null": "void"}.get(types[0], "string")


def _typed(schema: dict[str, Any], number: Callable[[str, str], Column]) -> list[Column]:
    """The record's fields typed per the schema: strings are the ``_s_`` texts, numbers ``number(name, kind)``."""
    kinds = ((n, _spark_type(fs, schema).replace("void", "string")) for n, fs in schema["properties"].items())
    return [(F.col(f"_s_{name}") if kind == "string" else number(name, kind)).alias(name) for name, kind in kinds]


def _checked(
    staged: DataFrame,
    schema: dict[str, Any],
    error: Column | None,
    number: Callable[[str, str], Column],
    *extra: Column,
) -> DataFrame:
    """The record's columns: source, ``error`` (the given one and an impossible date), typed fields, ``ts``,
    ``extra`` and ``raw``."""
    time_text = F.col("_s_time")
    ts = F.try_to_timestamp(time_text)
    # The pattern admits strings such as month 13; format: date-time rejects them.
    bad_time = F.when(
        time_text.isNotNull() & ts.isNull(), F.format_string("field 'time' \"%s\": not a valid date-time", time_text)
    )
    errors = bad_time if error is None else F.nullif(F.concat_ws("; ", error, bad_time), F.lit(""))
    checked = staged.select(
        *SOURCE_COLUMNS, errors.alias("error"), *_typed(schema, number), ts.alias("ts"), *extra, "value"
    )
    # The line itself is kept only where it is reported: the frame is kept, and valid lines are most of it.
    raw = F.when(F.col("error").isNotNull(), F.substring("value", 1, RAW_CHARS_KEPT)).alias("raw")
    return checked.select("*", raw).drop("value")


def _staged(frame: DataFrame, stages: list[list[Column]]) -> DataFrame:
    for columns in stages:
        frame = frame.select("*", *columns)
    return frame


def read_records(
    spark: SparkSession,
    files: list[str],
    schema: dict[str, Any],
    keep: Callable[[DataFrame], DataFrame] | None = None,
) -> DataFrame:
    """The records of ``files``, validated, each of its two parts behind ``keep`` (default
    ``checkpointed``; a caller's may also note what it keeps, to release it).

    Two frames, so that the code run over every line holds only the fast path: the pass over the
    lines checks those written the usual way and keeps the text of the others, and the full
    checks (VARIANT parses, per-field JSON types, trailing garbage) run over those rare lines in
    a frame of their own.
    """
    if not files:
        raise ValueError("no records files to read")
    keep = keep or checkpointed
    lines = numbered_lines(spark, [str(f) for f in files]).where(F.trim("value") != "")
    fast = F.col("_fast")
    # the fast path's number is its text's: the same value the VARIANT holds
    scanned = keep(_checked(
        _staged(lines, fast_columns(schema, "value")), schema, None, fast_number,
        fast, F.when(~fast, F.col("value")).alias("_line"),
    ))
    # one partition: the lines are few, and every later query over the records scans its partitions
    others = scanned.where(~fast).select(*SOURCE_COLUMNS, F.col("_line").alias("value")).coalesce(1)
    slow = keep(_checked(
        _staged(others, full_columns(schema, "_f", "value")), schema, record_error(schema, "_f", "value"),
        lambda name, kind: F.try_variant_get(F.col("_f")[name], "$", kind),
    ))
    return scanned.where(fast).drop("_fast", "_line").unionByName(slow)


def checkpointed(records: DataFrame) -> DataFrame:
    """Records kept (memory, else disk) for the queries built on them.

    Embedded (local master), a lazy local checkpoint: the queries built on it plan against a
    stand-in for its rows instead of the records' own plan, which holds the validation,
    thousands of expressions that every query over the records would analyse, optimise and
    match against the cache again, seconds of driver CPU each (BENCHMARKS.md, issue 17). It is
    filled by the first job that reads it and lives as long as the session (or until Spark drops
    its last use). On a cluster a lost executor would take a local checkpoint's blocks with it
    and fail the job, so there the records are only persisted, and recomputed when lost.
    """
    if records.sparkSession.sparkContext.master.startswith("local"):
        return records.localCheckpoint(eager=False, storageLevel=StorageLevel.MEMORY_AND_DISK)
    return records.persist(StorageLevel.MEMORY_AND_DISK)
