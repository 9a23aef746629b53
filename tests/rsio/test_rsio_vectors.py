"""The rsio vector files: valid against the schemas and the reference codec."""

from __future__ import annotations

import json

import pytest

from conformance.paths import vectors_dir
from conformance.vectors import rsio as adapter
from conformance.vectors.check import check_file
from reference_impl.common.errors import CodecError

FILES = sorted((vectors_dir() / "rsio").glob("*.json"))


def test_enough_vectors() -> None:
    docs = [json.loads(p.read_text()) for p in FILES]
    assert sum(d["numberOfTests"] for d in docs) >= 60
    flags = {f for d in docs for g in d["testGroups"] for t in g["tests"] for f in t["flags"]}
    assert "SPEC_ERRATUM" in flags


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_vector_file(path) -> None:
    failures = [o for o in check_file(path) if not o.ok]
    assert not failures, "\n".join(f"{o.name}: {o.detail}" for o in failures)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_acceptable_vectors_are_refused_by_the_strict_decoder_for_the_named_reason(path) -> None:
    doc = json.loads(path.read_text())
    for group in doc["testGroups"]:
        for test in group["tests"]:
            if test["result"] != "acceptable":
                continue
            with pytest.raises(CodecError) as err:
                adapter.decode(group["context"], bytes.fromhex(test["wire"]))
            assert err.value.code == test["error"], test["tcId"]


def test_every_message_type_has_a_valid_vector() -> None:
    seen = set()
    for path in FILES:
        for group in json.loads(path.read_text())["testGroups"]:
            seen |= {t["message"]["type"] for t in group["tests"] if t["result"] == "valid"}
    assert seen == {"clientHello", "serverHello", "goodbye", "subscribe", "request", "cancel",
                    "subscribed", "onNext", "onComplete", "onError", "onNextPacked", "onNextPart",
                    "onNextLastPart", "extension"}
