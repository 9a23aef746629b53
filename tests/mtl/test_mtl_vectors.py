"""The MTL vector files: valid against the schemas and the reference codec, covering every command."""

from __future__ import annotations

import json

import pytest

from conformance.paths import vectors_dir
from conformance.vectors import mtl as adapter
from conformance.vectors.check import check_file
from reference_impl.common.errors import CodecError

FILES = sorted((vectors_dir() / "mtl").glob("*.json"))


def _tests():
    for path in FILES:
        doc = json.loads(path.read_text())
        for group in doc["testGroups"]:
            for test in group["tests"]:
                yield path.name, group, test


def test_enough_vectors_and_an_erratum() -> None:
    docs = [json.loads(p.read_text()) for p in FILES]
    assert sum(d["numberOfTests"] for d in docs) >= 100
    flags = {f for _, _, t in _tests() for f in t["flags"]}
    assert {"SPEC_ERRATUM", "PROFILE_READING", "RFC_EXAMPLE"} <= flags
    assert all(t.get("source") for _, _, t in _tests())


def test_every_data_command_has_valid_and_invalid_vectors() -> None:
    valid, invalid = set(), set()
    for _, group, test in _tests():
        if group["context"]["kind"] != "data":
            continue
        wire = bytes.fromhex(test["wire"])
        if test["result"] == "valid":
            valid.add(test["message"]["command"])
        else:
            # the header's first octet follows the first frame's 2-octet ZMTP header
            invalid.add(wire[2] if len(wire) > 2 and wire[1] else None)
    assert valid == {"lease", "response", "summon", "dismiss", "content", "confirm", "reject", "ping", "pong"}
    assert set(range(1, 10)) <= invalid


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_vector_file(path) -> None:
    failures = [o for o in check_file(path) if not o.ok]
    assert not failures, "\n".join(f"{o.name}: {o.detail}" for o in failures)


def test_adapter_reports_codes() -> None:
    with pytest.raises(CodecError) as err:
        adapter.decode({"kind": "data"}, bytes.fromhex("0101"))
    assert err.value.code == "truncated"
    with pytest.raises(CodecError) as err:
        adapter.decode({"kind": "data"}, bytes.fromhex("0001080000"))
    assert err.value.code == "trailing-bytes"
