"""Every STMP vector file passes the generic checker against the reference codec."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

try:  # the checkout root, when the project is not installed into the venv
    import conformance  # noqa: F401
except ImportError:  # pragma: no cover
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from conformance.paths import vectors_dir
from conformance.vectors.check import check_file, load_vector_file

STMP_DIR = vectors_dir() / "stmp"
FILES = sorted(STMP_DIR.glob("*.json"))


def test_stmp_vector_files_exist() -> None:
    assert FILES, f"no vector files in {STMP_DIR}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_stmp_vector_file_passes(path: Path) -> None:
    failures = [f"{o.name}: {o.detail}" for o in check_file(path) if not o.ok]
    assert not failures, "\n".join(failures)


def test_at_least_60_stmp_vectors() -> None:
    total = sum(load_vector_file(p)["numberOfTests"] for p in FILES)
    assert total >= 60, total


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_tcids_start_at_1_and_every_test_has_a_source(path: Path) -> None:
    doc = json.loads(path.read_text(encoding="utf-8"))
    ids = sorted(t["tcId"] for g in doc["testGroups"] for t in g["tests"])
    assert ids == list(range(1, len(ids) + 1)), f"{path.name}: tcIds {ids[:5]}..."
    for group in doc["testGroups"]:
        for test in group["tests"]:
            assert test.get("source"), f"{path.name}#{test['tcId']}: no source"
            if group["context"]["form"] == "text" and "wireText" in test:
                assert bytes.fromhex(test["wire"]) == test["wireText"].encode("utf-8"), f"{path.name}#{test['tcId']}"
