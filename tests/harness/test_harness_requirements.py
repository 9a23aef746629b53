"""The requirement catalogues name only real cases, and every case is tied to a requirement."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from conformance.paths import docs_dir
from suite_helpers import all_cases

CATALOGUES = sorted((docs_dir() / "requirements").glob("*.yaml"))


@pytest.mark.parametrize("path", CATALOGUES, ids=[p.stem for p in CATALOGUES])
def test_catalogue_is_consistent_with_the_scenarios(path: Path) -> None:
    doc = yaml.safe_load(path.read_text())
    cases = all_cases(doc["protocol"])
    named: set[str] = set()
    ids = [r["id"] for r in doc["requirements"]]
    assert len(ids) == len(set(ids))
    for req in doc["requirements"]:
        assert req["level"] in ("MUST", "SHOULD", "MAY")
        assert req["cases"] or req["untestable"], f"{req['id']} has neither a case nor a reason"
        unknown = set(req["cases"]) - set(cases)
        assert not unknown, f"{req['id']} names unknown cases {unknown}"
        named.update(req["cases"])
    orphans = set(cases) - named
    assert not orphans, f"cases tied to no requirement: {sorted(orphans)}"


SPECS = Path(__file__).resolve().parents[3] / "shared" / "specs"


@pytest.mark.parametrize("path", CATALOGUES, ids=[p.stem for p in CATALOGUES])
def test_every_spec_sentence_is_quoted_from_the_spec(path: Path) -> None:
    doc = yaml.safe_load(path.read_text())
    spec = SPECS / doc["spec"]
    if not spec.exists():
        pytest.skip(f"the shared spec {doc['spec']} is not beside this checkout")
    # the spec text breaks lines inside sentences: compare with all white space removed
    text = "".join(spec.read_text().split()).lower()
    for req in doc["requirements"]:
        for piece in req["text"].split("..."):
            words = "".join(piece.replace("\\", "").split()).lower().strip('":')
            assert words[:40] in text, f"{req['id']}: not found in {doc['spec']}: {words[:40]!r}"
