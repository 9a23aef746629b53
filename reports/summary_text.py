"""The text summary printed to stdout at the end of a report."""

from __future__ import annotations

from typing import Any

INVALID_SHOWN = 5


def _counts(grades: dict[str, int]) -> str:
    return ", ".join(f"{g} {n}" for g, n in grades.items() if n) or "no cases"


def _must(must: dict[str, int]) -> str:
    not_applicable = f" ({must['mustNotApplicable']} not applicable)" if must["mustNotApplicable"] else ""
    return (
        f"MUST cases {must['mustCases']}: {must['mustPassed']} passed, {must['mustFailed']} failed or error, "
        f"{must['mustNotTested']} not tested{not_applicable}"
    )


def format_summary(summary: dict[str, Any]) -> str:
    records = summary["records"]
    lines = [
        f"Conformance report: {records['valid']} valid records, {records['invalid']} invalid, {summary['runs']} runs"
    ]
    lines.append("Compliance (latest run of each case; fully compliant: every applicable MUST case ran and passed):")
    for impl in summary["implementations"]:
        lines.append(f"  {impl['implementation']} {impl['version']}: {impl['level']} ({_must(impl['must'])}; "
                     f"cells: {_counts(impl['grades'])})")
    lines.append(f"Grades over the matrix: {_counts(summary['gradeCounts'])}")
    coverage = []
    for c in summary["coverage"]:
        if c["implementation"] is not None:
            continue  # per implementation: in summary.json and on the page
        if c["status"] == "known":
            share = "n/a" if c["coverage"] is None else f"{c['coverage']:.0%}"
            coverage.append(f"{c['protocol']} {c['mustCovered']}/{c['mustTotal']} tested ({share})")
        else:
            coverage.append(f"{c['protocol']} unknown ({c['reason']})")
    shown = "; ".join(coverage) or "no protocols"
    lines.append(f"MUST coverage (sentences a case ran for, any implementation): {shown}")
    baseline = summary["baseline"]
    if baseline:
        lines.append(
            f"Against baseline {baseline}: {summary['regressions']['count']} regressions, "
            f"{summary['newPasses']['count']} new passes"
        )
    else:
        lines.append("No baseline given: regressions not computed")
    lines.append(f"Flaky cases: {summary['flaky']['count']}")
    for bad in summary["invalidRecords"][:INVALID_SHOWN]:
        lines.append(f"  invalid record {bad['file']}:{bad['line']}: {bad['error']}")
    if records["invalid"] > INVALID_SHOWN:
        lines.append(f"  ... {records['invalid'] - INVALID_SHOWN} more invalid records in json/invalid_records")
    outputs = summary["outputs"]
    lines.append(f"Matrix page: {outputs['matrixHtml']}")
    lines.append(f"Summary: {outputs['summaryJson']}")
    lines.append(f"Tables: {outputs['parquet']} (Parquet by protocol), {outputs['json']} (JSON lines)")
    return "\n".join(lines)
