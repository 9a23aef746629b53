"""Compliance levels, judged on the driver from the collected matrix cells.

A matrix cell is one implementation x case x transport: the grade the
implementation's latest run of the case gave on that transport. Cells are
what the page shows and are collected for it anyway, so the levels are
plain Python over them (any mapping with the matrix columns will do).

A MUST case is judged over its transports: a transport the target does not
offer (NOT-APPLICABLE) neither passes nor fails it, so a TCP-only server is
judged on its TCP cells alone.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from reports.catalogue import CatalogueSet, must_case_rows
from reports.grades import (
    COUNT_COLUMN,
    FULLY_COMPLIANT,
    JUDGED_REQUIREMENTS,
    NON_COMPLIANT,
    NON_STRICT_FINDINGS,
    NOT_FULLY_TESTED,
    RAN,
    worst_level,
)

Cell = Mapping[str, Any]

# What became of one MUST case on one implementation.
CASE_PASSED = "passed"
CASE_FAILED = "failed"  # FAILED or ERROR on some transport
CASE_NOT_TESTED = "not tested"  # no record, or UNSUPPORTED where it applies
CASE_NOT_APPLICABLE = "not applicable"  # NOT-APPLICABLE on every transport it was recorded on


def case_outcome(grades: list[str]) -> str:
    """A MUST case's outcome from its grades, one per transport (none: never recorded)."""
    if any(g in ("FAILED", "ERROR") for g in grades):
        return CASE_FAILED
    applicable = [g for g in grades if g != "NOT-APPLICABLE"]
    if grades and not applicable:
        return CASE_NOT_APPLICABLE
    if applicable and all(g in RAN for g in applicable):
        return CASE_PASSED
    return CASE_NOT_TESTED


def level(judged_failed_or_error: int, judged_non_strict: int, must_passed: int, must_not_tested: int) -> str:
    """must_not_tested counts applicable MUST cases without a verdict (not the not-applicable ones)."""
    if judged_failed_or_error:
        return NON_COMPLIANT
    # Full compliance is claimed only on evidence: every applicable MUST case
    # ran and passed, and at least one did (all not-applicable proves nothing).
    if must_not_tested or not must_passed:
        return NOT_FULLY_TESTED
    if judged_non_strict:
        return NON_STRICT_FINDINGS
    return FULLY_COMPLIANT


def must_cases(cells: Iterable[Cell], catalogues: CatalogueSet) -> dict[str, set[str]]:
    """Per protocol: every case recorded as MUST, and every case a catalogue lists for a
    MUST sentence that no record names, so a case an implementation skipped still counts."""
    requirements: dict[tuple[str, str], set[str]] = defaultdict(set)
    for c in cells:
        requirements[(c["protocol"], c["case"])].add(c["requirement"])
    found: dict[str, set[str]] = defaultdict(set)
    for (protocol, case), levels in requirements.items():
        if "MUST" in levels:
            found[protocol].add(case)
    for protocol, _, case, _ in must_case_rows(catalogues):
        if case is not None and (protocol, case) not in requirements:
            found[protocol].add(case)
    return found


def _time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def compliance_rows(cells: Iterable[Cell], catalogues: CatalogueSet) -> list[dict[str, Any]]:
    """One row per implementation and protocol it was run on: cell counts per grade, MUST case outcomes, level."""
    cells = list(cells)
    must = must_cases(cells, catalogues)
    groups: dict[tuple[str, str], list[Cell]] = defaultdict(list)
    for c in cells:
        groups[(c["implementation"], c["protocol"])].append(c)
    rows = []
    for (implementation, protocol), group in sorted(groups.items()):
        grades_by_case: dict[str, list[str]] = defaultdict(list)
        for c in group:
            grades_by_case[c["case"]].append(c["grade"])
        outcomes = {case: case_outcome(grades_by_case.get(case, [])) for case in must.get(protocol, ())}
        count = {o: sum(1 for v in outcomes.values() if v == o) for o in (CASE_PASSED, CASE_FAILED)}
        not_tested = sorted(case for case, o in outcomes.items() if o == CASE_NOT_TESTED)
        not_applicable = sum(1 for o in outcomes.values() if o == CASE_NOT_APPLICABLE)
        judged = [c["grade"] for c in group if c["requirement"] in JUDGED_REQUIREMENTS]
        judged_bad = sum(1 for g in judged if g in ("FAILED", "ERROR"))
        judged_non_strict = judged.count("NON-STRICT")
        latest = max(group, key=lambda c: _time(c["time"]))
        rows.append(
            {
                "implementation": implementation,
                "protocol": protocol,
                "implementationVersion": latest["implementationVersion"],
                "cells": len(group),
                **{name: sum(1 for c in group if c["grade"] == g) for g, name in COUNT_COLUMN.items()},
                "mustCases": len(outcomes),
                "mustPassed": count[CASE_PASSED],
                "mustFailed": count[CASE_FAILED],
                # "Not tested" as shown: no verdict, whether or not the case applies.
                "mustNotTested": len(not_tested) + not_applicable,
                "mustNotApplicable": not_applicable,
                "mustNotTestedCases": not_tested,
                "judgedFailedOrError": judged_bad,
                "judgedNonStrict": judged_non_strict,
                "level": level(judged_bad, judged_non_strict, count[CASE_PASSED], len(not_tested)),
            }
        )
    return rows


MUST_COUNTS = ("mustCases", "mustPassed", "mustFailed", "mustNotTested", "mustNotApplicable")


def implementation_summaries(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per implementation over its protocols: the worst level, summed cell and MUST case counts."""
    by_impl: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_impl[row["implementation"]].append(row)
    return [
        {
            "implementation": name,
            "version": ", ".join(sorted({r["implementationVersion"] for r in group})),
            "level": worst_level([r["level"] for r in group]),
            "cells": sum(r["cells"] for r in group),
            "grades": {g: sum(r[c] for r in group) for g, c in COUNT_COLUMN.items()},
            "must": {k: sum(r[k] for r in group) for k in MUST_COUNTS},
            "protocols": {r["protocol"]: r["level"] for r in group},
        }
        for name, group in sorted(by_impl.items())
    ]
