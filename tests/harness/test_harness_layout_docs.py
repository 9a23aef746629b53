"""reference_impl/README.md lists every protocol folder's modules as they are on disk."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "reference_impl"


def readme_rows() -> dict[str, set[str]]:
    rows = {}
    for line in (PACKAGE / "README.md").read_text(encoding="utf-8").splitlines():
        match = re.match(r"\| `([a-z0-9_]+)/` \|(.*)\|$", line)
        if match:
            rows[match.group(1)] = set(re.findall(r"`([a-z0-9_]+\.(?:py|json))`", match.group(2)))
    return rows


def test_every_folder_has_a_row_naming_exactly_its_modules() -> None:
    on_disk = {
        folder.name: {p.name for p in folder.iterdir() if p.suffix in (".py", ".json") and p.name != "__init__.py"}
        for folder in PACKAGE.iterdir() if (folder / "__init__.py").is_file()
    }
    assert readme_rows() == on_disk
