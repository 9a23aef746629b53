"""docs/profiles: one page per protocol that states every reading a scenario's `profile:` cites.

Users read these pages to learn what the suite grades; a scenario that cites a reading the
page does not state leaves them guessing, and a quoted spec passage that is not the spec's
own words misleads them.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from conformance.paths import docs_dir, scenarios_dir
from spec_quotes import missing_profile_pieces, normalise, spec_text, unquoted_pieces

PROFILES = docs_dir() / "profiles"
PROTOCOLS = sorted(p.name for p in scenarios_dir().iterdir() if p.is_dir() and any(p.glob("*.yaml")))
GRADES = ("FAILED", "NON-STRICT", "INFORMATIONAL", "UNSUPPORTED", "NOT-APPLICABLE", "PASSED", "ERROR")


def scenario_docs(protocol: str) -> list[dict]:
    return [yaml.safe_load(p.read_text(encoding="utf-8")) for p in sorted((scenarios_dir() / protocol).glob("*.yaml"))]


def page(protocol: str) -> str:
    return (PROFILES / f"{protocol}.md").read_text(encoding="utf-8")


def blockquotes(markdown: str) -> list[str]:
    """Each run of consecutive `> ` lines, joined: the page's quotes of its spec."""
    quotes, current = [], []
    for line in markdown.splitlines() + [""]:
        if line.startswith(">"):
            current.append(line[1:].strip())
        elif current:
            quotes.append(" ".join(current))
            current = []
    return quotes


def test_index_links_every_protocol_page_and_defines_every_grade() -> None:
    index = (PROFILES / "README.md").read_text(encoding="utf-8")
    for protocol in PROTOCOLS:
        assert f"({protocol}.md)" in index, f"README.md does not link {protocol}.md"
    for grade in GRADES:
        assert re.search(rf"\*\*{grade}\*\*", index), f"README.md does not define the grade {grade}"


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_every_profile_sentence_of_the_scenarios_is_on_the_page(protocol: str) -> None:
    text = normalise(page(protocol))
    missing = {case["id"]: gaps for doc in scenario_docs(protocol) for case in doc["cases"]
               if case.get("profile") and (gaps := missing_profile_pieces(case["profile"], text))}
    assert not missing, f"docs/profiles/{protocol}.md does not state: {missing}"


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_page_cites_public_sources_only(protocol: str) -> None:
    text = page(protocol)
    assert re.search(r"https://\S+", text), f"{protocol}.md cites no public URL"
    for private in ("../shared", "shared/", "PROFILES.md", "/work/"):
        assert private not in text, f"{protocol}.md refers to {private!r}, which users do not have"


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_page_quotes_its_spec_verbatim(protocol: str) -> None:
    (spec_file,) = {doc["spec_file"] for doc in scenario_docs(protocol)}
    quotes = blockquotes(page(protocol))
    text = spec_text(spec_file)
    wrong = {quote: gaps for quote in quotes if (gaps := unquoted_pieces(quote, text))}
    assert not wrong, f"{protocol}.md quotes text that is not in {spec_file}: {wrong}"


def test_blockquotes_joins_wrapped_lines_and_separates_quotes() -> None:
    markdown = "text\n> first line\n> second line\n\n> another\nmore text\n"
    assert blockquotes(markdown) == ["first line second line", "another"]
