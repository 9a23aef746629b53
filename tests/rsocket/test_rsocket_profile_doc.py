"""docs/profiles/rsocket.md: public citations only, verbatim quotes, real section anchors."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from conformance.paths import docs_dir

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "harness"))
from spec_quotes import spec_text, specs_dir, unquoted_pieces  # noqa: E402

PAGE = docs_dir() / "profiles" / "rsocket.md"
SPEC_URL = "https://github.com/rsocket/rsocket/blob/master/Protocol.md"


def _text() -> str:
    return PAGE.read_text(encoding="utf-8")


def _quotes(markdown: str) -> list[str]:
    quotes, current = [], []
    for line in markdown.splitlines() + [""]:
        if line.startswith(">"):
            current.append(line[1:].strip())
        elif current:
            quotes.append(" ".join(current))
            current = []
    return quotes


def test_page_cites_the_public_spec_only() -> None:
    text = _text()
    assert SPEC_URL in text
    # that it cites nothing private is test_harness_self_contained's job, for every doc


def test_page_quotes_protocol_md_verbatim() -> None:
    quotes = _quotes(_text())
    assert len(quotes) >= 10
    spec = spec_text("rsocket/Protocol.md")
    wrong = {q: gaps for q in quotes if (gaps := unquoted_pieces(q, spec))}
    assert not wrong


def test_section_anchors_exist_in_protocol_md() -> None:
    anchors = set(re.findall(r"Protocol\.md#([a-z0-9-]+)", _text()))
    assert anchors
    spec_text("rsocket/Protocol.md")  # skips (or fails under CI) without the spec shelf
    raw = (specs_dir() / "rsocket" / "Protocol.md").read_text(encoding="utf-8")
    names = set(re.findall(r'<a name="([^"]+)">', raw))
    slugs = {re.sub(r"[^a-z0-9 -]", "", h.strip().lower()).replace(" ", "-")
             for h in re.findall(r"^#+ (.+)$", raw, flags=re.M)}
    assert anchors <= names | slugs, anchors - names - slugs


@pytest.mark.parametrize("reading", [
    "24-bit", "one frame per binary message", "text WebSocket message", "top bit is reserved",
    "ignored on receipt", "ERROR[INVALID_SETUP]", "ERROR[UNSUPPORTED_SETUP]", "greater than 0",
    "never null-terminated", "odd ids", "even ids", "stays at 2^31-1", "INFORMATIONAL",
    "one credit", "F is ignored", "without R", "APPLICATION_ERROR, REJECTED", "UTF-8",
    "extended type that must be greater than 0", "well-known id", "echo:<text>", "range:<n>",
    "last-fnf", "last-metadata-push", "unknown route",
])
def test_page_states_each_pinned_reading(reading: str) -> None:
    assert reading in " ".join(_text().split())
