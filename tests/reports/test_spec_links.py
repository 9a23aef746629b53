"""The matrix page's spec links open for a user who has only this project: public spec pages
or our docs/profiles pages, never our private spec texts."""

from __future__ import annotations

import os
import re
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import unquote, urlsplit

import pytest

from conformance.paths import docs_dir, scenarios_dir
from conformance.scenario.loader import Case, load_file
from conformance.registry import NAMES
from conformance.spec_links import public_spec_url
from reports.coverage import Coverage
from reports.html_matrix import MatrixPage, render
from reports.page_model import protocol_matrices

PROTOCOLS = list(NAMES)
assert {"stmp", "micromessage2", "rsio", "mc0", "mtl", "rsocket"} <= set(PROTOCOLS)
# Headings of the public NETWORK_PROTOCOL.md (reactive-streams-io), as GitHub anchors them.
RSIO_PUBLIC_ANCHORS = {
    "transport-assumptions", "message-framing", "protocol-negotiation", "the-protocol-version",
    "protocol-extensions", "the-reactive-streams-core-protocol", "packed-messaging", "split-messaging",
    "closing-the-connection",
}


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[tuple[str, str]] = []  # (class of the <a> or its cell, href)
        self._cell_class = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "td":
            self._cell_class = a.get("class") or ""
        if tag == "a" and a.get("href"):
            self.hrefs.append((a.get("class") or self._cell_class, a["href"] or ""))


def _profile_urls(protocol: str) -> list[str]:
    """The URLs our profile page names before its first section: the public homes of the spec."""
    text = (docs_dir() / "profiles" / f"{protocol}.md").read_text(encoding="utf-8")
    return re.findall(r"https?://[^\s)`,]+", text.split("\n## ")[0])


def _rows(protocol: str, run_dir: Path) -> list[SimpleNamespace]:
    rows = []
    for path in sorted((scenarios_dir() / protocol).glob("*.yaml")):
        for case in load_file(path).cases:
            if isinstance(case, Case):
                rows.append(SimpleNamespace(
                    protocol=protocol, family=case.family, case=case.id, transport="tcp",
                    requirement=case.requirement, implementation="impl", grade="FAILED", spec=case.spec,
                    specRef=case.spec_ref, message="", wirelog=None, runDir=str(run_dir), attachments=0,
                ))
    return rows


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_matrix_spec_links_are_public_urls_or_profile_pages(protocol: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    rows = _rows(protocol, tmp_path)
    assert rows
    [matrix] = protocol_matrices(rows, docs_dir() / "profiles", out)
    parser = _Links()
    coverage = Coverage(protocol, None, "known", rows[0].specRef.partition("#")[0], 1, 1, 0, 1.0, [], None)
    parser.feed(render(MatrixPage("now", len(rows), 0, 1, [], [coverage], [matrix])))
    public = _profile_urls(protocol)
    assert public, f"docs/profiles/{protocol}.md names no public URL"
    cell_links = [h for cls, h in parser.hrefs if cls.startswith("cell")]
    assert len(cell_links) == len(rows)
    bad = []
    for cls, link in parser.hrefs:
        parts = urlsplit(link)
        if parts.scheme in ("http", "https"):
            if not any(link.startswith(u) for u in public):
                bad.append(link)
        elif not (
            unquote(parts.path).replace(os.sep, "/").endswith(f"docs/profiles/{protocol}.md")
            and (out / unquote(parts.path)).resolve().is_file()
        ):
            bad.append(link)
    assert bad == []
    # The spec line over the matrix and the coverage table's spec column.
    assert [h for cls, h in parser.hrefs if cls == "spec"] == [public_spec_url(protocol)] * 2
    assert ("profile", os.path.relpath(docs_dir() / "profiles" / f"{protocol}.md", out)) in parser.hrefs
    if protocol == "rsio":
        assert {urlsplit(link).fragment for link in cell_links} <= RSIO_PUBLIC_ANCHORS
