"""The result record's format (docs/records.md): the one contract between the harness, which
writes records (conformance.records), and the report job, which reads them (reports/).

Both sides take the schema from here, and this module imports nothing from either, so the
report job never depends on the harness.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

SCHEMA_PATH = Path(__file__).resolve().parent / "schemas" / "record.schema.json"


@lru_cache(maxsize=1)
def record_schema() -> dict[str, Any]:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


#: What every record carries as schemaVersion: read from the schema, so writer and schema agree.
SCHEMA_VERSION: int = record_schema()["properties"]["schemaVersion"]["const"]
