"""A user has only this project (a checkout or the installed package), never our reference shelf
beside it: nothing the project ships, runs or documents may point at it.

Only the quote checks may read the shelf (spec_quotes.specs_dir), and they skip without it.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = [
    "conformance", "reference_impl", "reports", "scenarios", "vectors", "docs", "scripts", "thirdparty",
    "benchmarks", "fuzz", "images", "README.md", "BENCHMARKS.md", "pyproject.toml", "setup.py",
]
# Only the quote-check helper reads the shelf; the other two name it to look for it.
MAY_NAME_THE_SHELF = {
    ROOT / "tests" / "harness" / "spec_quotes.py",
    ROOT / "tests" / "harness" / "test_harness_profile_docs.py",
    Path(__file__).resolve(),
}
SHELF = re.compile(r"\.\./shared|(?<![\w.-])shared/|PROFILES\.md|/work/|\bspecs/[\w.-]+\.txt|\bPROFILES\b")
SKIPPED_PARTS = {"__pycache__", "node_modules", ".venv", "_bundled", ".pytest_cache", ".hypothesis"}


def _files(names: list[str]) -> list[Path]:
    found = []
    for name in names:
        path = ROOT / name
        candidates = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        found += [p for p in candidates if not SKIPPED_PARTS & set(p.relative_to(ROOT).parts)]
    return found


def _mentions(paths: list[Path]) -> list[str]:
    hits = []
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue  # images, wheels: no text a user reads
        for number, line in enumerate(text.splitlines(), 1):
            if match := SHELF.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{number}: {match.group(0)}")
    return hits


def test_nothing_shipped_or_documented_names_the_shelf() -> None:
    files = _files(SHIPPED)
    assert len(files) > 100  # the scan really walked the project
    hits = _mentions(files)
    assert not hits, f"{len(hits)} mentions of our private reference shelf:\n" + "\n".join(hits)


def test_tests_name_the_shelf_only_in_the_quote_checks() -> None:
    files = [p for p in _files(["tests"]) if p.resolve() not in MAY_NAME_THE_SHELF]
    hits = _mentions(files)
    assert not hits, "\n".join(hits)


def test_the_scan_finds_each_form_of_the_shelf() -> None:
    samples = ["see ../shared/x", "shared/PROFILES.md", "PROFILES.md", "../shared/specs/a.txt", "/work/main",
               "shared/the spec", "PROFILES: a rule",
               "specs/stmp.txt#3"]
    for sample in samples:
        assert SHELF.search(sample), sample
    for fine in ["docs/profiles/stmp.md and https://rfc.zeromq.org/spec/11/", "TEST_PROFILES", "pre_shared/key"]:
        assert not SHELF.search(fine), fine
