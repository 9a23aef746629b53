"""Writing the report's tables: Parquet for machines that query, JSON lines for the rest."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame


def write_table(frame: DataFrame, out: Path, name: str) -> dict[str, str]:
    """Parquet partitioned by protocol (when the table has one) and a single JSON-lines part file."""
    parquet_dir = out / "parquet" / name
    writer = frame.write.mode("overwrite")
    if "protocol" in frame.columns:
        writer = writer.partitionBy("protocol")
    writer.parquet(str(parquet_dir))
    json_dir = out / "json" / name
    # The tables are aggregates; one file per table is easier to consume, and
    # repartition (not coalesce) keeps the work upstream of it parallel.
    frame.repartition(1).write.mode("overwrite").option("ignoreNullFields", "false").json(str(json_dir))
    return {"parquet": str(parquet_dir), "json": str(json_dir)}


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n", encoding="utf-8")
