"""The requirement catalogues name only real cases, and every case is tied to a requirement."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from conformance.paths import docs_dir, scenarios_dir
from spec_quotes import spec_text, unquoted_pieces
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


@pytest.mark.parametrize("path", CATALOGUES, ids=[p.stem for p in CATALOGUES])
def test_every_spec_sentence_is_quoted_from_the_spec(path: Path) -> None:
    doc = yaml.safe_load(path.read_text())
    text = spec_text(doc["spec"])
    wrong = {req["id"]: missing for req in doc["requirements"] if (missing := unquoted_pieces(req["text"], text))}
    assert not wrong, f"not verbatim in {doc['spec']}: {wrong}"


SCENARIO_FILES = sorted(scenarios_dir().glob("*/*.yaml"))


@pytest.mark.parametrize("path", SCENARIO_FILES, ids=[f"{p.parent.name}/{p.stem}" for p in SCENARIO_FILES])
def test_every_scenario_spec_quote_is_verbatim(path: Path) -> None:
    doc = yaml.safe_load(path.read_text())
    text = spec_text(doc["spec_file"])
    wrong = {case["id"]: missing for case in doc["cases"] if (missing := unquoted_pieces(case["spec"], text))}
    assert not wrong, f"not verbatim in {doc['spec_file']}: {wrong}"
