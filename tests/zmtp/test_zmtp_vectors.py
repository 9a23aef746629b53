"""vectors/zmtp/*.json: schema-valid, contexts documented, and every vector passes against the reference codec."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from conformance.vectors.check import check_file

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted((ROOT / "vectors" / "zmtp").glob("*.json"))
MESSAGE_SCHEMA = json.loads((ROOT / "vectors" / "schema" / "zmtp-message.schema.json").read_text())


def test_the_five_files_exist() -> None:
    assert [f.name for f in FILES] == ["commands.json", "curve.json", "frames.json", "greeting.json", "plain.json"]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_vector_passes(path: Path) -> None:
    outcomes = check_file(path)
    assert outcomes and all(o.tc_id is not None for o in outcomes)
    failures = [f"{o.name}: {o.detail}" for o in outcomes if not o.ok]
    assert not failures


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_contexts_match_the_documented_shapes(path: Path) -> None:
    context_schema = {"$defs": MESSAGE_SCHEMA["$defs"], "$ref": "#/$defs/context"}
    validator = jsonschema.Draft202012Validator(context_schema)
    for group in json.loads(path.read_text())["testGroups"]:
        validator.validate(group["context"])


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_tc_ids_start_at_one_and_every_vector_has_a_source(path: Path) -> None:
    tests = [t for g in json.loads(path.read_text())["testGroups"] for t in g["tests"]]
    assert sorted(t["tcId"] for t in tests) == list(range(1, len(tests) + 1))
    assert all(t.get("source") for t in tests)


def test_a_wrong_expectation_is_caught(tmp_path: Path) -> None:
    """The checker really compares: one flipped octet in a valid vector makes it fail."""
    doc = json.loads((ROOT / "vectors" / "zmtp" / "commands.json").read_text())
    test = doc["testGroups"][0]["tests"][0]
    test["wire"] = test["wire"][:-2] + "01"
    broken = tmp_path / "commands.json"
    broken.write_text(json.dumps(doc))
    assert not next(o for o in check_file(broken) if o.tc_id == test["tcId"]).ok
