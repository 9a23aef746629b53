"""Result records (docs/records.md): one JSON line per case."""

from __future__ import annotations

import json
import re
import secrets
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from conformance.record_format import SCHEMA_VERSION


def new_run_id() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def safe_name(case_id: str, transport: str) -> str:
    return re.sub(r"[^a-zA-Z0-9._-]+", "_", f"{case_id}[{transport}]")


class RecordWriter:
    """Appends records as cases finish, so a killed run still leaves its results."""

    def __init__(self, path: Path | None, wirelog_dir: Path | None) -> None:
        self.path = path
        self.wirelog_dir = wirelog_dir
        self.counts: Counter[tuple[str, str]] = Counter()
        self.cases: set[tuple[str, str]] = set()  # (protocol, case id): a case has a result per transport
        self.failures: list[dict[str, Any]] = []
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("")

    def write_wirelog(self, case_id: str, transport: str, text: str) -> str | None:
        if self.wirelog_dir is None:
            return None
        self.wirelog_dir.mkdir(parents=True, exist_ok=True)
        target = self.wirelog_dir / f"{safe_name(case_id, transport)}.log"
        target.write_text(text)
        if self.path is not None:
            try:
                return str(target.relative_to(self.path.parent))
            except ValueError:
                return str(target)
        return str(target)

    def add(self, record: dict[str, Any]) -> None:
        record = {"schemaVersion": SCHEMA_VERSION, **record}
        self.counts[(record["protocol"], record["grade"])] += 1
        self.cases.add((record["protocol"], record["case"]))
        if record["grade"] in ("FAILED", "ERROR", "NON-STRICT"):
            self.failures.append(record)
        if self.path is not None:
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(record, sort_keys=True) + "\n")


def grade_table(counts: Counter[tuple[str, str]], cases: set[tuple[str, str]], grades: list[str]) -> list[str]:
    """Per protocol: how many cases ran, how many results they gave (a case is graded once on each
    transport it runs on, so results outnumber cases) and the results per grade; then the totals.
    Both numbers are named, as "cases" alone was read as either."""
    protocols = sorted({p for p, _ in counts})
    per_case = Counter(p for p, _ in cases)
    lines = [f"{'protocol':<15}{'cases':>7}{'results':>9}" + "".join(f"{g:>15}" for g in grades)]
    for protocol in protocols:
        results = sum(n for (p, _), n in counts.items() if p == protocol)
        lines.append(f"{protocol:<15}{per_case[protocol]:>7}{results:>9}"
                     + "".join(f"{counts.get((protocol, g), 0):>15}" for g in grades))
    if len(protocols) > 1:
        lines.append(f"{'all':<15}{len(cases):>7}{sum(counts.values()):>9}"
                     + "".join(f"{sum(n for (_, g2), n in counts.items() if g2 == g):>15}" for g in grades))
    lines.append("(results: one per case and transport)")
    return lines
