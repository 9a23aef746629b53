"""A scenario file too broken to load still gives a valid record, under its protocol and family."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema

ROOT = Path(__file__).resolve().parents[2]
RECORD_SCHEMA = json.loads((ROOT / "conformance" / "schemas" / "record.schema.json").read_text(encoding="utf-8"))


def test_unreadable_scenario_file_is_recorded_under_its_protocol_and_family(tmp_path: Path) -> None:
    broken = tmp_path / "scenarios" / "stmp" / "handshake.yaml"
    broken.parent.mkdir(parents=True)
    broken.write_text("protocol: stmp\nfamily: handshake\ncases: [\n", encoding="utf-8")  # unclosed flow sequence
    out = tmp_path / "records.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", str(broken), "-q", "-p", "no:cacheprovider", "--records", str(out)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    [record] = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    # The report keeps only schema-valid records: an empty family dropped this one from the matrix.
    jsonschema.validate(record, RECORD_SCHEMA)
    assert (record["protocol"], record["family"], record["grade"]) == ("stmp", "handshake", "ERROR")
    # Not the absolute path: the same broken file is one matrix row on every machine.
    assert record["case"] == "stmp/handshake/<file>"
    assert str(broken) in record["message"]
