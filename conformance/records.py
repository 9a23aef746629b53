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
        if record["grade"] in ("FAILED", "ERROR", "NON-STRICT"):
            self.failures.append(record)
        if self.path is not None:
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(record, sort_keys=True) + "\n")
