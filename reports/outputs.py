"""Writing the report's tables: Parquet for machines that query, JSON lines for the rest."""

from __future__ import annotations

import json
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import MapType, _parse_datatype_string

from reports.fs import FileSystems, child


def driver_rows(spark: SparkSession, rows: list[dict[str, Any]], ddl: str) -> DataFrame:
    """Rows computed on the driver as a frame of the ``ddl`` schema (every column nullable).

    One JSON literal parsed in the JVM: ``createDataFrame`` from Python rows starts Python
    workers to re-pickle them, about a second for a table of ten rows (BENCHMARKS.md, issue 17).
    """
    names = _parse_datatype_string(ddl).fieldNames()
    text = json.dumps([{name: row.get(name) for name in names} for row in rows])
    return spark.range(1).select(F.inline(F.from_json(F.lit(text), f"array<struct<{ddl}>>")))


def total_order(frame: DataFrame) -> list[str]:
    """Every sortable column: rows equal on all of them are identical, so the order is total."""
    return [f.name for f in frame.schema.fields if not isinstance(f.dataType, MapType)]


def write_table(fs: FileSystems, frame: DataFrame, out: str, name: str) -> dict[str, str]:
    """Parquet partitioned by protocol (when the table has one) and a single JSON-lines part file."""
    parquet_dir = child(out, "parquet", name)
    if "protocol" in frame.columns:
        frame.write.mode("overwrite").partitionBy("protocol").parquet(parquet_dir)
        # Empty, the partitioned table is a folder with no data file and no
        # schema, which Spark cannot read back; unpartitioned, it is one empty
        # Parquet file carrying the schema. Checked afterwards, so a table
        # with rows is not computed twice.
        if not any(entry.startswith("protocol=") for entry in fs.names_in(parquet_dir)):
            frame.write.mode("overwrite").parquet(parquet_dir)
    else:
        frame.write.mode("overwrite").parquet(parquet_dir)
    json_dir = child(out, "json", name)
    # The tables are aggregates; one file per table is easier to consume. A
    # cached table is small and already computed, so one task reads it
    # (coalesce: no shuffle, no extra job); otherwise repartition (not
    # coalesce) keeps the work upstream of it parallel. The sort makes the
    # same inputs give the same bytes.
    single = (frame.coalesce(1) if frame.is_cached else frame.repartition(1)).sortWithinPartitions(
        *total_order(frame)
    )
    single.write.mode("overwrite").option("ignoreNullFields", "false").json(json_dir)
    return {"parquet": parquet_dir, "json": json_dir}


def write_json(fs: FileSystems, uri: str, data: Any) -> None:
    fs.write_text(uri, json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")
