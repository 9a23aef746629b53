"""matrix.html as written: cells, links, tooltips, legend and escaping."""

from __future__ import annotations

import os
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed: pip install .[report]")

from report_fixtures import EXPECTED_MATRIX  # noqa: E402

from reports.html_matrix import GRADE_STYLE, href  # noqa: E402


class MatrixCells(HTMLParser):
    """Collects matrix cells (td with data-impl) with their links, and table column headings."""

    def __init__(self) -> None:
        super().__init__()
        self.cells: dict[tuple[str, str], dict] = {}
        self.headings: dict[str, list[str]] = {}
        self._cell: dict | None = None
        self._table: str | None = None
        self._in_th = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table":
            self._table = a.get("id")
            self.headings[self._table or ""] = []
        elif tag == "th":
            self._in_th = True
            self.headings[self._table or ""].append("")
        elif tag == "td" and "data-impl" in a:
            self._cell = {**a, "links": [], "text": ""}
            self.cells[(a["data-impl"], a["data-case"], a["data-transport"])] = self._cell
        elif tag == "a" and self._cell is not None:
            self._cell["links"].append(a.get("href"))

    def handle_endtag(self, tag: str) -> None:
        if tag == "td":
            self._cell = None
        elif tag == "th":
            self._in_th = False

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell["text"] += data
        if self._in_th and self._table is not None:
            self.headings[self._table][-1] += data


@pytest.fixture(scope="module")
def page(report) -> tuple[str, MatrixCells, Path]:
    _, out = report
    text = (out / "matrix.html").read_text(encoding="utf-8")
    parser = MatrixCells()
    parser.feed(text)
    return text, parser, out


def test_each_cell_shows_its_grade_in_its_colour(page) -> None:
    _, parsed, _ = page
    graded = {key for key, cell in parsed.cells.items() if "data-grade" in cell}
    assert graded == set(EXPECTED_MATRIX)
    # beta ran interval over WebSocket, alpha did not: a row of its own, and alpha's cell says so.
    [missing] = set(parsed.cells) - graded
    assert missing == ("alpha", "stmp/ping/interval", "ws")
    assert parsed.cells[missing]["text"] == "not tested"
    for key, (grade, _) in EXPECTED_MATRIX.items():
        cell = parsed.cells[key]
        assert cell["data-grade"] == grade, key
        assert f"g-{grade}" in cell["class"].split(), key
        assert cell["text"].split()[0] == grade, key


def test_one_table_per_protocol_with_its_implementations(page) -> None:
    _, parsed, _ = page
    assert parsed.headings["matrix-stmp"] == [
        "Family",
        "Case",
        "Transport",
        "Requirement",
        "alpha1.1, non-compliant",
        "beta2.0, not fully tested",
    ]
    assert parsed.headings["matrix-micromessage2"] == [
        "Family", "Case", "Transport", "Requirement", "gamma0.9, fully compliant",
    ]


def test_cells_link_the_spec_section_and_the_wire_log(page, fixture_root: Path) -> None:
    _, parsed, out = page
    cell = parsed.cells[("alpha", "stmp/handshake/version-unsupported", "tcp")]
    spec_link, log_link = cell["links"][:2]
    # The STMP article (named at the top of docs/profiles/stmp.md) has no heading anchors.
    assert spec_link.startswith("https://topic.alibabacloud.com/a/a-super-thin-long-connection-message-protocol")
    assert "#" not in spec_link
    assert (
        Path(os.path.normpath(out / unquote(log_link)))
        == fixture_root / "runs" / "a2" / "wirelogs" / "version-unsupported.log"
    )
    assert cell["title"].startswith("3.6\nThe sentence tested by stmp/handshake/version-unsupported.")
    assert cell["title"].endswith("FAILED: server accepted version 9.9")
    assert "2\xa0att" in cell["text"]
    # PASSED cells have no wire log.
    assert len(parsed.cells[("beta", "stmp/handshake/version-ok", "tcp")]["links"]) == 1


def test_each_matrix_links_its_profile_page(page, fixture_root: Path) -> None:
    text, _, out = page
    [link] = re.findall(r'<a class="profile" href="([^"]+)"', text.split('id="matrix-stmp"')[0].split("Matrix: stmp")[1])
    assert Path(os.path.normpath(out / unquote(link))) == fixture_root / "docs" / "profiles" / "stmp.md"


def test_legend_has_one_distinct_colour_per_grade(page) -> None:
    text, _, _ = page
    legend = re.search(r'<p class="legend">(.*?)</p>', text, flags=re.S).group(1)
    assert re.findall(r'class="legend-item g-([A-Z-]+)"', legend) == [
        "FAILED",
        "ERROR",
        "NON-STRICT",
        "UNSUPPORTED",
        "NOT-APPLICABLE",
        "INFORMATIONAL",
        "PASSED",
    ]
    backgrounds = [bg for _, bg in GRADE_STYLE.values()]
    assert len(set(backgrounds)) == 7
    for grade, (_, bg) in GRADE_STYLE.items():
        assert f".g-{grade}{{color:" in text and bg in text


def test_strings_from_records_are_escaped(page) -> None:
    text, parsed, _ = page
    assert "<img src=x" not in text
    assert "escape me: &lt;img src=x onerror=&quot;alert(1)&quot;&gt; &amp; done" in text
    assert parsed.cells[("beta", "stmp/handshake/version-unsupported", "tcp")]["title"].endswith(
        'escape me: <img src=x onerror="alert(1)"> & done'
    )


def test_findings_sections_list_regressions_and_flaky_cases(page) -> None:
    text, parsed, _ = page
    assert "Regressions against baseline" in text and "Flaky cases" in text
    regressions = next(t for t, h in parsed.headings.items() if t.startswith("finding-") and "baselineGrade" in h)
    assert regressions == "finding-0"
    assert text.count("<td>stmp/handshake/version-unsupported</td>") == 3  # matrix, regression, flaky
    assert "<td>FAILED, PASSED</td>" in text  # the flaky case's grades


def test_links_can_only_be_relative_or_web() -> None:
    assert href("javascript:alert(1)") == "#"
    assert href("data:text/html,x") == "#"
    assert href("../runs/a b/x.log#s 1") == "../runs/a%20b/x.log#s%201"
    assert href('x"><script>.log') == "x%22%3E%3Cscript%3E.log"
    assert href("https://example.org/spec#3") == "https://example.org/spec#3"
