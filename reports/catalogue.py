"""Requirement catalogues: docs/requirements/<protocol>.yaml.

Each lists a spec's normative sentences and the cases that test them:
``{protocol, spec, requirements: [{id, level, text, cases, untestable}]}``.
They are small hand-written files, so they are read on the driver.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

LEVELS = ("MUST", "SHOULD", "MAY")


@dataclass(frozen=True)
class Requirement:
    id: str
    level: str
    cases: tuple[str, ...]
    untestable: str | None


@dataclass(frozen=True)
class Catalogue:
    protocol: str
    spec: str
    path: Path
    requirements: tuple[Requirement, ...]

    def must(self) -> list[Requirement]:
        return [r for r in self.requirements if r.level == "MUST"]


@dataclass
class CatalogueSet:
    by_protocol: dict[str, Catalogue] = field(default_factory=dict)
    problems: dict[str, str] = field(default_factory=dict)  # protocol -> why its catalogue is unusable


def _requirement(raw: Any, where: str) -> Requirement:
    if not isinstance(raw, dict) or not isinstance(raw.get("id"), str):
        raise ValueError(f"{where}: each requirement needs a string id")
    level = raw.get("level")
    if level not in LEVELS:
        raise ValueError(f"{where}: requirement {raw['id']}: level must be one of {', '.join(LEVELS)}")
    cases = raw.get("cases") or []
    if not isinstance(cases, list) or not all(isinstance(c, str) for c in cases):
        raise ValueError(f"{where}: requirement {raw['id']}: cases must be a list of case ids")
    untestable = raw.get("untestable")
    return Requirement(raw["id"], level, tuple(cases), None if untestable is None else str(untestable))


def load_catalogue(path: Path) -> Catalogue:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not isinstance(data.get("requirements"), list):
        raise ValueError(f"{path}: expected a mapping with a 'requirements' list")
    requirements = tuple(_requirement(r, str(path)) for r in data["requirements"])
    return Catalogue(str(data.get("protocol") or path.stem), str(data.get("spec") or ""), path, requirements)


def load_catalogues(directory: Path | None) -> CatalogueSet:
    found = CatalogueSet()
    if directory is None or not directory.is_dir():
        return found
    for path in sorted(directory.glob("*.y*ml")):
        try:
            catalogue = load_catalogue(path)
        except (ValueError, yaml.YAMLError) as exc:
            found.problems[path.stem] = str(exc)
            continue
        found.by_protocol[catalogue.protocol] = catalogue
    return found


def must_case_rows(catalogues: CatalogueSet) -> list[tuple[str, str, str | None, bool]]:
    """(protocol, requirement id, case or None, untestable) for every MUST sentence."""
    rows: list[tuple[str, str, str | None, bool]] = []
    for catalogue in catalogues.by_protocol.values():
        for req in catalogue.must():
            for case in req.cases or (None,):
                rows.append((catalogue.protocol, req.id, case, req.untestable is not None))
    return rows
