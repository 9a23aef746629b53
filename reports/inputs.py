"""Find the result-record files and Allure result files behind --input locations.

An input is a run folder (holding records and usually allure-results/), a
folder of run folders (searched recursively), a records file, or an
allure-results folder; each a local path or a URI (``hdfs://``, ``s3a://``,
``file://``), listed through Hadoop's FileSystem. On a cluster every executor
must be able to read them at the same location.

Records come as JSON lines (``.jsonl``, or gzipped ``.jsonl.gz``, which
Hadoop's codecs decompress by extension) or as Parquet (``.parquet``: one
file, or a folder of part files as Spark writes it). In searched folders a
records file is named ``records*.jsonl[.gz]`` or ``records*.parquet``, so the
report's own Parquet tables in an older output folder are never taken for
runs; a file named on the command line is Parquet if its name ends in
``.parquet`` and JSON lines otherwise.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from reports.fs import FileSystems, child

ALLURE_DIR = "allure-results"
ALLURE_SUFFIX = "-result.json"
PARQUET_SUFFIX = ".parquet"
# records.jsonl, records.jsonl.gz, records-2.jsonl, records.parquet (a file, or Spark's folder of parts)
_RECORDS_NAME = re.compile(r"^records([-_.][^/]*)?\.(jsonl|jsonl\.gz|parquet)$")


def is_parquet(uri: str) -> bool:
    return uri.endswith(PARQUET_SUFFIX)


@dataclass
class InputSet:
    """Fully qualified URIs, sorted."""

    records_files: list[str] = field(default_factory=list)
    allure_files: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


def _records_in_folder(folder: str, name: str) -> bool:
    if _RECORDS_NAME.match(name):
        return True
    # a part file of a Parquet "file" written by Spark: records.parquet/part-00000-....parquet
    return name.endswith(PARQUET_SUFFIX) and bool(_RECORDS_NAME.match(folder.rstrip("/").rsplit("/", 1)[-1]))


def discover(fs: FileSystems, locations: list[str]) -> InputSet:
    found = InputSet()
    records, allure = set(), set()
    for raw in locations:
        kind = fs.kind(raw)
        if kind == "file":
            records.add(fs.qualify(raw))
        elif kind == "dir":
            for folder, name in fs.files_under(raw):
                if _records_in_folder(folder, name):
                    records.add(child(folder, name))
                elif name.endswith(ALLURE_SUFFIX):
                    allure.add(child(folder, name))
        else:
            found.missing.append(raw)
    found.records_files, found.allure_files = sorted(records), sorted(allure)
    return found
