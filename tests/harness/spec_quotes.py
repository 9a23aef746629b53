"""Checks that a quote is a verbatim passage of its spec text.

The spec texts are not shipped: they sit beside a checkout in ../shared/specs
(specs_dir below; only these checks may read them). Without them a quote check skips, except under
CI=true, where a skip would let an unchecked quote through, so it fails.

What "verbatim" allows, and nothing more:
- White space is ignored entirely, not just collapsed. The texts are scraped web
  pages that put inline code on lines of its own ("负载长度(PS)\\n: Represents"), so a
  quote may carry a space where the text has a line break or nothing at all.
- Typographic quotes and dashes compare equal to their ASCII forms
  (“ ” ‘ ’ as " and ', – — as -): the MTL text uses curly quotes, YAML authors type
  straight ones. Letters, case and every other character must match.
- " ... " (an ellipsis with a space on both sides) elides text: each piece must be
  found, in order, after the previous one. "(...)" with no spaces is literal.

A scenario's `profile:` sentence quotes our own profile docs (docs/profiles), not a
spec, and is looser: any "..." elides (profile sentences shorten parentheses, as in
"server hello (...)"), and the pieces may sit anywhere in the doc, since one
sentence often joins two rules the doc states apart.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest


_TYPOGRAPHIC = str.maketrans({"“": '"', "”": '"', "‘": "'", "’": "'", "–": "-", "—": "-"})
_ELISION = re.compile(r"\s\.\.\.(?:\s|$)|^\.\.\.\s")


def specs_dir() -> Path:
    """Our private spec texts, beside a checkout: never needed by anything the project ships."""
    return Path(__file__).resolve().parents[2].parent / "shared" / "specs"


def normalise(text: str) -> str:
    return "".join(text.split()).translate(_TYPOGRAPHIC)


def spec_text(name: str, specs: Path | None = None) -> str:
    """The normalised text of spec `name`; skips (fails under CI=true) when the shelf is absent."""
    folder = specs or specs_dir()
    if not folder.is_dir():
        reason = f"the spec texts are not beside this checkout ({folder})"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason}; CI=true: quote checks must run", pytrace=False)
        pytest.skip(reason)
    return normalise((folder / name).read_text(encoding="utf-8"))


def unquoted_pieces(quote: str, text: str) -> list[str]:
    """The pieces of `quote` not found (in order) in the normalised `text`; [] when it is verbatim."""
    missing, start = [], 0
    for piece in _ELISION.split(quote):
        wanted = normalise(piece)
        if not wanted:
            continue
        at = text.find(wanted, start)
        if at < 0:
            missing.append(piece.strip())
        else:
            start = at + len(wanted)
    return missing


def missing_profile_pieces(sentence: str, doc: str) -> list[str]:
    """The pieces of a `profile:` sentence absent from the normalised profile `doc`."""
    return [piece.strip() for piece in sentence.split("...") if normalise(piece) and normalise(piece) not in doc]
