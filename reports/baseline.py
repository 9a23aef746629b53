"""Which records make the baseline run given to --baseline."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from reports.fs import FileSystems, LocationError
from reports.inputs import discover
from reports.load_records import read_records


class BaselineError(ValueError):
    pass


def baseline_records(spark: SparkSession, given: str, valid: DataFrame, schema: dict[str, Any]) -> DataFrame:
    """The valid records of a run folder / records file, or of the run with that id among the inputs."""
    fs = FileSystems(spark)
    try:
        kind = fs.kind(given)
    except LocationError:
        kind = None  # not a location Hadoop can read, so a run id
    if kind is not None:
        found = discover(fs, [given])
        if not found.records_files:
            raise BaselineError(f"baseline {given}: no records file in it")
        records = read_records(spark, found.records_files, schema).where(F.col("error").isNull())
    else:
        records = valid.where(F.col("run") == given)
    if not records.limit(1).collect():
        raise BaselineError(f"baseline {given}: no valid records (not a run folder, and no input run has that id)")
    return records
