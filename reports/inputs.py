"""Find the result-record files and Allure result files behind --input locations.

An input is a run folder (holding records.jsonl and usually allure-results/),
a folder of run folders (searched recursively), a records .jsonl file, or an
allure-results folder; each a local path or a URI (``hdfs://``, ``s3a://``,
``file://``), listed through Hadoop's FileSystem. On a cluster every executor
must be able to read them at the same location.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from reports.fs import FileSystems, child

RECORDS_FILE = "records.jsonl"
ALLURE_DIR = "allure-results"
ALLURE_SUFFIX = "-result.json"


@dataclass
class InputSet:
    """Fully qualified URIs, sorted."""

    records_files: list[str] = field(default_factory=list)
    allure_files: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


def discover(fs: FileSystems, locations: list[str]) -> InputSet:
    found = InputSet()
    records, allure = set(), set()
    for raw in locations:
        kind = fs.kind(raw)
        if kind == "file":
            records.add(fs.qualify(raw))
        elif kind == "dir":
            for folder, name in fs.files_under(raw):
                if name == RECORDS_FILE:
                    records.add(child(folder, name))
                elif name.endswith(ALLURE_SUFFIX):
                    allure.add(child(folder, name))
        else:
            found.missing.append(raw)
    found.records_files, found.allure_files = sorted(records), sorted(allure)
    return found
