"""docs/findings/rsocket.md: every finding row cites Protocol.md by a real anchor and quotes it verbatim."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from conformance.paths import docs_dir

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "harness"))
from spec_quotes import spec_text, specs_dir, unquoted_pieces  # noqa: E402

PAGE = docs_dir() / "findings" / "rsocket.md"


def _finding_rows() -> dict[str, list[str]]:
    """finding id -> the row's cells (| id | role | finding | spec | grade |)."""
    rows = {}
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        # a table cell ends at a "|" that is not escaped ("\\|" is a pipe inside a cell, GFM)
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        if cells and re.fullmatch(r"F-[A-Z0-9]+-\d+", cells[0]):
            rows[cells[0]] = cells
    return rows


def test_every_finding_has_wire_bytes_a_spec_link_and_a_grade() -> None:
    rows = _finding_rows()
    assert {"F-PY-1", "F-JS0-1", "F-JS0-2", "F-JS1-1"} <= set(rows)
    for finding, cells in rows.items():
        assert re.search(r"`0000000[0-9a-f] [0-9a-f]{4}", cells[2]), finding  # a frame, as hex
        assert "Protocol.md#" in cells[3], finding
        assert cells[-1], finding


def test_spec_column_quotes_protocol_md_verbatim() -> None:
    spec = spec_text("rsocket/Protocol.md").replace("__", "")  # markdown emphasis is not text
    # a pipe inside a table cell is written "\\|" (GFM); the spec has it bare
    quotes = [q.replace("\\|", "|") for cells in _finding_rows().values()
              for q in re.findall(r'"([^"]+)"', cells[3])]
    assert len(quotes) >= 5
    assert not {q: gaps for q in quotes if (gaps := unquoted_pieces(q, spec))}


def test_anchors_exist_in_protocol_md() -> None:
    anchors = set(re.findall(r"Protocol\.md#([a-z0-9-]+)", PAGE.read_text(encoding="utf-8")))
    spec_text("rsocket/Protocol.md")  # skips (or fails under CI) without the spec shelf
    raw = (specs_dir() / "rsocket" / "Protocol.md").read_text(encoding="utf-8")
    names = set(re.findall(r'<a name="([^"]+)">', raw))
    slugs = {re.sub(r"[^a-z0-9 -]", "", h.strip().lower()).replace(" ", "-")
             for h in re.findall(r"^#+ (.+)$", raw, flags=re.M)}
    assert anchors and anchors <= names | slugs, anchors - names - slugs
