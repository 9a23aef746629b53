"""Find the result-record files and Allure result files behind --input paths.

An input is a run folder (holding records.jsonl and usually allure-results/),
a folder of run folders (searched recursively), a records .jsonl file, or an
allure-results folder. Paths must be visible at the same place to the driver
and, with --master, to every executor (a shared filesystem).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

RECORDS_FILE = "records.jsonl"
ALLURE_DIR = "allure-results"
ALLURE_SUFFIX = "-result.json"


@dataclass
class InputSet:
    records_files: list[Path] = field(default_factory=list)
    allure_files: list[Path] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


def allure_run_dir(results_dir: Path) -> Path:
    """The run folder an allure-results folder belongs to: records link to it by this."""
    return results_dir.parent if results_dir.name == ALLURE_DIR else results_dir


def _walk(root: Path, found: InputSet) -> None:
    for dirpath, dirnames, filenames in os.walk(root):
        # Hidden folders and installed node packages never hold runs.
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "node_modules")
        here = Path(dirpath)
        if RECORDS_FILE in filenames:
            found.records_files.append(here / RECORDS_FILE)
        found.allure_files.extend(here / f for f in sorted(filenames) if f.endswith(ALLURE_SUFFIX))


def discover(paths: list[str]) -> InputSet:
    found = InputSet()
    for raw in paths:
        path = Path(raw).resolve()
        if path.is_file():
            found.records_files.append(path)
        elif path.is_dir():
            _walk(path, found)
        else:
            found.missing.append(raw)
    found.records_files = sorted(set(found.records_files))
    found.allure_files = sorted(set(found.allure_files))
    return found
