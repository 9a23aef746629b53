"""Every vector file of micromessage2 passes against the reference codec, and the errata are pinned."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.paths import vectors_dir
from conformance.vectors.check import check_file

FILES = sorted((vectors_dir() / "micromessage2").glob("*.json"))


def test_there_are_enough_vectors() -> None:
    count = sum(json.loads(p.read_text())["numberOfTests"] for p in FILES)
    assert count >= 80


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_vector_file(path: Path) -> None:
    failures = [o for o in check_file(path) if not o.ok]
    assert not failures, "\n".join(f"{o.name}: {o.detail}" for o in failures)


def _tests(flag: str) -> list[dict]:
    found = []
    for path in FILES:
        for group in json.loads(path.read_text())["testGroups"]:
            found += [t for t in group["tests"] if flag in t["flags"]]
    return found


def test_profile_errata_have_vectors() -> None:
    wires = {t["wire"] for t in _tests("SPEC_ERRATUM")}
    assert "0100000468756c6b000b6a736f6e3b646f746e65740000" in wires  # RequiredLen 11
    assert "0203020004" in wires  # the ack frame 02 <id> 02 00 04
    assert any(w.startswith("020232") for w in wires)  # the dotnet frame with its ID byte
    assert any(t["error"] == "bad-property" for t in _tests("SPEC_ERRATUM") if t["result"] == "invalid")


def test_original_code_bug_has_vectors_showing_the_difference() -> None:
    bugs = _tests("ORIGINAL_CODE_BUG")
    assert any(t["wire"].startswith("02012c") and t["result"] == "valid" for t in bugs)  # reads as other frames
    assert any(t["wire"].startswith("042c") and t["result"] == "invalid" for t in bugs)
    assert any(t["wire"].startswith("0c0000012c") and t["result"] == "valid" for t in bugs)  # the right bytes
