"""Levels and MUST coverage judged from matrix cells (plain Python, no Spark).

Each expected value is worked out by hand from the rule in the issue: only a
case that ran can show a requirement is met; UNSUPPORTED, NOT-APPLICABLE,
untestable and missing cases are "not tested"; an implementation is fully
compliant only when every MUST case that applies to it ran and passed; and a
transport the target does not offer never hides the grade of one it does.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from reports.catalogue import Catalogue, CatalogueSet, Requirement
from reports.compliance import (
    CASE_FAILED,
    CASE_NOT_APPLICABLE,
    CASE_NOT_TESTED,
    CASE_PASSED,
    case_outcome,
    compliance_rows,
    implementation_summaries,
)
from reports.coverage import coverage
from reports.grades import FULLY_COMPLIANT, NON_COMPLIANT, NON_STRICT_FINDINGS, NOT_FULLY_TESTED, worst_level

A, B, C = "stmp/handshake/a", "stmp/handshake/b", "stmp/ping/c"


def cell(impl: str, case: str, transport: str, grade: str, requirement: str = "MUST", **extra) -> dict:
    return {
        "implementation": impl,
        "implementationVersion": extra.get("version", "1"),
        "protocol": case.split("/")[0],
        "case": case,
        "transport": transport,
        "requirement": requirement,
        "grade": grade,
        "time": extra.get("time", "2026-01-01T00:00:00Z"),
    }


def tcp_only(impl: str, *cases: str) -> list[dict]:
    """A server offering TCP alone: each case PASSED on tcp, NOT-APPLICABLE on ws."""
    return [cell(impl, c, t, g) for c in cases for t, g in (("tcp", "PASSED"), ("ws", "NOT-APPLICABLE"))]


def one_row(cells: list[dict], catalogues: CatalogueSet | None = None, impl: str = "x") -> dict:
    rows = [r for r in compliance_rows(cells, catalogues or CatalogueSet()) if r["implementation"] == impl]
    assert len(rows) == 1
    return rows[0]


@pytest.mark.parametrize(
    ("grades", "outcome"),
    [
        ([], CASE_NOT_TESTED),  # no record at all
        (["PASSED", "NOT-APPLICABLE"], CASE_PASSED),
        (["NOT-APPLICABLE", "NOT-APPLICABLE"], CASE_NOT_APPLICABLE),
        (["UNSUPPORTED"], CASE_NOT_TESTED),
        (["PASSED", "UNSUPPORTED"], CASE_NOT_TESTED),  # ws applies but did not run
        (["UNSUPPORTED", "NOT-APPLICABLE"], CASE_NOT_TESTED),
        (["NOT-APPLICABLE", "ERROR"], CASE_FAILED),
        (["PASSED", "FAILED"], CASE_FAILED),
        (["NON-STRICT", "PASSED"], CASE_PASSED),  # the MUST part held; the SHOULD finding counts in the level
    ],
)
def test_a_must_case_is_judged_over_its_transports(grades: list[str], outcome: str) -> None:
    assert case_outcome(grades) == outcome


def test_a_tcp_only_server_is_fully_compliant_with_honest_counts() -> None:
    row = one_row(tcp_only("x", A, B))
    assert row["level"] == FULLY_COMPLIANT
    assert (row["cells"], row["passed"], row["notApplicable"]) == (4, 2, 2)
    assert (row["mustCases"], row["mustPassed"], row["mustNotTested"], row["mustNotApplicable"]) == (2, 2, 0, 0)


def test_a_failure_on_one_transport_is_not_hidden_by_a_pass_on_the_other() -> None:
    cells = [cell("x", A, "tcp", "PASSED"), cell("x", A, "ws", "FAILED")]
    row = one_row(cells)
    assert (row["level"], row["mustFailed"], row["passed"], row["failed"]) == (NON_COMPLIANT, 1, 1, 1)


def test_an_unsupported_must_case_is_not_tested_and_blocks_full_compliance() -> None:
    cells = [*tcp_only("x", A), cell("x", B, "tcp", "UNSUPPORTED"), cell("x", B, "ws", "NOT-APPLICABLE")]
    row = one_row(cells)
    assert row["level"] == NOT_FULLY_TESTED
    assert (row["mustPassed"], row["mustNotTested"], row["mustNotTestedCases"]) == (1, 1, [B])


def test_a_must_case_another_implementation_ran_is_missing_here() -> None:
    # x ran A only (say, one scenario file); y ran A and B, so B exists.
    cells = [*tcp_only("x", A), *tcp_only("y", A, B)]
    x = one_row(cells, impl="x")
    assert (x["level"], x["mustCases"], x["mustNotTestedCases"]) == (NOT_FULLY_TESTED, 2, [B])
    assert one_row(cells, impl="y")["level"] == FULLY_COMPLIANT


def catalogue(*requirements: Requirement) -> CatalogueSet:
    return CatalogueSet(by_protocol={"stmp": Catalogue("stmp", "stmp.txt", Path("stmp.yaml"), requirements)})


def test_a_catalogued_must_case_nobody_ran_is_missing() -> None:
    listed = catalogue(Requirement("R1", "MUST", (A,), None), Requirement("R2", "MUST", (B,), None))
    row = one_row(tcp_only("x", A), listed)
    assert (row["level"], row["mustNotTestedCases"]) == (NOT_FULLY_TESTED, [B])


def test_must_cases_that_do_not_apply_neither_pass_nor_block() -> None:
    # A server without a client role: the client case is NOT-APPLICABLE everywhere.
    cells = [*tcp_only("x", A), cell("x", B, "tcp", "NOT-APPLICABLE"), cell("x", B, "ws", "NOT-APPLICABLE")]
    row = one_row(cells)
    assert row["level"] == FULLY_COMPLIANT
    assert (row["mustPassed"], row["mustNotTested"], row["mustNotApplicable"], row["mustNotTestedCases"]) == (
        1, 1, 1, [],
    )


def test_nothing_that_ran_is_no_claim_of_compliance() -> None:
    cells = [cell("x", A, t, "NOT-APPLICABLE") for t in ("tcp", "ws")] + [cell("x", C, "tcp", "PASSED", "SHOULD")]
    assert one_row(cells)["level"] == NOT_FULLY_TESTED


def test_non_strict_findings_need_every_must_case_tested_too() -> None:
    should = cell("x", C, "tcp", "NON-STRICT", "SHOULD")
    assert one_row([*tcp_only("x", A), should])["level"] == NON_STRICT_FINDINGS
    unsupported = cell("x", B, "tcp", "UNSUPPORTED")
    assert one_row([*tcp_only("x", A), should, unsupported])["level"] == NOT_FULLY_TESTED


def test_error_and_failed_stay_non_compliant_whatever_was_not_tested() -> None:
    cells = [cell("x", A, "tcp", "UNSUPPORTED"), cell("x", C, "tcp", "ERROR", "SHOULD")]
    assert one_row(cells)["level"] == NON_COMPLIANT


def test_an_implementation_is_as_good_as_its_worst_protocol() -> None:
    cells = [*tcp_only("x", A), cell("x", "micromessage2/handshake/hello", "tcp", "UNSUPPORTED")]
    [summary] = implementation_summaries(compliance_rows(cells, CatalogueSet()))
    assert summary["protocols"] == {"stmp": FULLY_COMPLIANT, "micromessage2": NOT_FULLY_TESTED}
    assert summary["level"] == NOT_FULLY_TESTED
    assert summary["must"] == {
        "mustCases": 2, "mustPassed": 1, "mustFailed": 0, "mustNotTested": 1, "mustNotApplicable": 0,
    }
    assert worst_level([]) == NOT_FULLY_TESTED


def test_the_version_shown_is_that_of_the_latest_cell() -> None:
    cells = [
        cell("x", A, "tcp", "PASSED", version="2.0", time="2026-01-02T00:00:00+01:00"),
        cell("x", B, "tcp", "PASSED", version="1.0", time="2026-01-01T23:30:00Z"),  # later, in UTC
    ]
    assert one_row(cells)["implementationVersion"] == "1.0"


def test_must_coverage_counts_only_sentences_whose_case_ran() -> None:
    listed = catalogue(
        Requirement("R1", "MUST", (A,), None),  # ran on x and y
        Requirement("R2", "MUST", (B,), None),  # ran on y only; UNSUPPORTED on x
        Requirement("R3", "MUST", (C,), None),  # NOT-APPLICABLE everywhere
        Requirement("R4", "MUST", (), "needs a second clock"),
        Requirement("R5", "SHOULD", (A,), None),
    )
    cells = [
        *tcp_only("x", A),
        cell("x", B, "tcp", "UNSUPPORTED"),
        cell("x", C, "tcp", "NOT-APPLICABLE"),
        *tcp_only("y", A),
        cell("y", B, "tcp", "FAILED"),  # a failure is a test that ran
        cell("y", C, "tcp", "NOT-APPLICABLE"),
    ]
    got = {c.implementation: (c.mustTotal, c.mustCovered, c.mustUntestable, c.uncovered) for c in coverage(cells, listed)}
    assert got == {
        None: (4, 2, 1, ["R3", "R4"]),
        "x": (4, 1, 1, ["R2", "R3", "R4"]),
        "y": (4, 2, 1, ["R3", "R4"]),
    }


def test_page_rows_are_per_case_and_transport(tmp_path: Path) -> None:
    from reports.html_matrix import MatrixPage, render
    from reports.page_model import protocol_matrices

    def row(impl: str, transport: str, grade: str) -> SimpleNamespace:
        return SimpleNamespace(
            protocol="stmp", family="handshake", case=A, transport=transport, requirement="MUST",
            implementation=impl, grade=grade, spec="s", specRef="stmp.txt#3", message="", wirelog=None,
            runDir=str(tmp_path), attachments=0,
        )

    [matrix] = protocol_matrices(
        [row("x", "tcp", "PASSED"), row("x", "ws", "NOT-APPLICABLE"), row("y", "tcp", "PASSED")], None, tmp_path
    )
    assert {key: c.grade for key, c in matrix.cells.items()} == {
        ("x", A, "tcp"): "PASSED",
        ("x", A, "ws"): "NOT-APPLICABLE",
        ("y", A, "tcp"): "PASSED",
    }
    assert [(r.case, r.transport) for r in matrix.cases] == [(A, "tcp"), (A, "ws")]
    text = render(MatrixPage("now", 3, 0, 1, [], [], [matrix]))
    assert 'data-impl="y" data-case="stmp/handshake/a" data-transport="ws" data-sort="7">not tested</td>' in text
    assert '>NOT-APPLICABLE</a> <small class="note">not tested</small>' in text
