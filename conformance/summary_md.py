"""The Markdown summary of a run, for a CI job's page or a pull request.

    conformance run stmp --target ... --out out --summary-md out/summary.md [--baseline old/records.jsonl]
    python -m conformance.summary_md out/records.jsonl --out out/summary.md [--baseline FILE]

Counts per grade, every FAILED and ERROR case with its spec sentence and wire log,
and the grades that changed against a baseline records file. With
$GITHUB_STEP_SUMMARY set (GitHub Actions), the summary is appended there too.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any, Iterable

from reports.grades import WORST_FIRST

GRADES_SHOWN = ("PASSED", "FAILED", "ERROR", "NON-STRICT", "INFORMATIONAL", "UNSUPPORTED", "NOT-APPLICABLE")
MESSAGE_CHARS = 300
STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"


def read_records(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():  # a run that stopped before its first case
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def render(records: list[dict[str, Any]], run_dir: Path, baseline: list[dict[str, Any]] | None = None,
           baseline_name: str = "") -> str:
    """RUN_DIR is the folder the records' wire-log paths are relative to, as the reader should see it."""
    lines = [_title(records), ""]
    lines += _counts(records)
    for grade, heading in (("FAILED", "breaks a MUST"), ("ERROR", "the case could not run")):
        found = [r for r in records if r["grade"] == grade]
        if found:
            lines += ["", f"### {grade}: {heading} ({len(found)})", ""]
            lines += [item for record in _sorted(found) for item in _finding(record, run_dir)]
    if baseline is not None:
        lines += ["", f"### Against the baseline {_code(baseline_name)}", ""]
        lines += _diff(baseline, records)
    return "\n".join(lines) + "\n"


def write(records_file: Path, out: Path, baseline_file: Path | None = None) -> str:
    baseline = read_records(baseline_file) if baseline_file is not None else None
    text = render(read_records(records_file), records_file.parent, baseline, str(baseline_file or ""))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    step_summary = os.environ.get(STEP_SUMMARY_ENV)
    if step_summary:
        with open(step_summary, "a", encoding="utf-8") as handle:
            handle.write(text)
    return text


def _title(records: list[dict[str, Any]]) -> str:
    if not records:
        return "## Conformance: no cases ran"
    first = records[0]
    protocols = ", ".join(sorted({r["protocol"] for r in records}))
    version = "" if first["implementationVersion"] == "unknown" else f" {first['implementationVersion']}"
    return (f"## Conformance: {protocols} — {first['implementation']}{version}"
            f" (target {_code(first['target'])}, run {first['run']})")


def _counts(records: list[dict[str, Any]]) -> list[str]:
    by_protocol: dict[str, Counter] = {}
    for record in records:
        by_protocol.setdefault(record["protocol"], Counter())[record["grade"]] += 1
    rows = ["| protocol | " + " | ".join(GRADES_SHOWN) + " | total |",
            "|---|" + "---:|" * (len(GRADES_SHOWN) + 1)]
    for protocol, counts in sorted(by_protocol.items()):
        rows.append(f"| {protocol} | " + " | ".join(str(counts[g]) for g in GRADES_SHOWN)
                    + f" | {sum(counts.values())} |")
    return rows


def _finding(record: dict[str, Any], run_dir: Path) -> list[str]:
    wirelog = _code(str(run_dir / record["wirelog"])) if record.get("wirelog") else "none"
    message = _one_line(record.get("message") or "")[:MESSAGE_CHARS]
    return [
        f"- {_code(record['case'])} [{record['transport']}] {record['requirement']}: {message}",
        f"  - spec ({record['specRef']}): \"{_one_line(record['spec'])}\"",
        f"  - wire log: {wirelog}",
    ]


def _diff(baseline: list[dict[str, Any]], records: list[dict[str, Any]]) -> list[str]:
    before, now = _by_key(baseline), _by_key(records)
    changed = [(key, before.get(key), now.get(key)) for key in sorted(before.keys() | now.keys())
               if before.get(key) != now.get(key)]
    if not changed:
        return ["No grade changed."]
    rows = ["| case | transport | baseline | now |", "|---|---|---|---|"]
    for (case, transport), old, new in changed:
        rows.append(f"| {_code(case)} | {transport} | {old or 'not run'} | {new or 'not run'} |")
    worse = sum(1 for _, old, new in changed if old and new and _rank(new) < _rank(old))
    return [f"{len(changed)} changed, {worse} of them worse.", ""] + rows


def _by_key(records: Iterable[dict[str, Any]]) -> dict[tuple[str, str], str]:
    """(case, transport) -> grade; a case graded twice keeps its worst grade."""
    grades: dict[tuple[str, str], str] = {}
    for record in records:
        key = (record["case"], record["transport"])
        held = grades.get(key)
        grades[key] = record["grade"] if held is None else min(held, record["grade"], key=_rank)
    return grades


def _rank(grade: str) -> int:
    return WORST_FIRST.index(grade) if grade in WORST_FIRST else len(WORST_FIRST)


def _sorted(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(records, key=lambda r: (r["case"], r["transport"]))


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _code(text: str) -> str:
    return f"`{text}`" if text else "``"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.summary_md", description=__doc__.splitlines()[0])
    parser.add_argument("records", type=Path, help="a run's records.jsonl")
    parser.add_argument("--out", type=Path, required=True, help="the Markdown file to write")
    parser.add_argument("--baseline", type=Path, default=None, help="records.jsonl of the run to compare with")
    args = parser.parse_args(argv)
    for path in (args.records, args.baseline):
        if path is not None and not path.is_file():
            print(f"conformance summary: {path} is not a file", file=sys.stderr)
            return 2
    write(args.records, args.out, args.baseline)
    return 0


if __name__ == "__main__":
    sys.exit(main())
