"""Runs one-bug targets through the suite and tells which cases catch each bug."""

from __future__ import annotations

from dataclasses import dataclass, field

from conformance.grading import Grade
from conformance.protocols import adapter_for
from conformance.scenario.loader import Case
from conformance.scenario.runner import CaseRunner
from conformance.selftest.catalog import OneBug

#: a bug is caught when a case grades it as a broken MUST or SHOULD
CATCHING = (Grade.FAILED, Grade.NON_STRICT)


@dataclass
class Finding:
    one: OneBug
    caught_by: list[tuple[str, Grade, str]] = field(default_factory=list)  # (case, grade, message)
    twin_problems: list[tuple[str, Grade, str]] = field(default_factory=list)  # the correct twin did not pass
    errors: list[tuple[str, str]] = field(default_factory=list)  # cases that could not run

    @property
    def caught(self) -> bool:
        return bool(self.caught_by)


async def _grade(one: OneBug, bug: str | None, case: Case) -> tuple[Grade, str]:
    adapter = adapter_for(case.protocol)
    params = {**adapter.params, **adapter.ref_params, **(one.params or {})}
    runner = CaseRunner(case, adapter, one.transport, params)
    if one.role == "client":
        assert one.launcher is not None
        result = await runner.against_client(one.launcher(bug))
        return result.grade, result.message
    assert one.start is not None
    server = await one.start(bug)
    try:
        result = await runner.against_server(server.url)
    finally:
        await server.close()
    return result.grade, result.message


async def examine(one: OneBug, cases: dict[str, Case], exhaustive: bool = False) -> Finding:
    """Grades the bug on its cases (or every case of its role); then the twin on the catching ones."""
    finding = Finding(one)
    chosen = [c for c in cases.values() if c.role == one.role] if exhaustive else [cases[i] for i in one.cases]
    for case in chosen:
        if case.transports and one.transport not in case.transports:
            continue
        grade, message = await _grade(one, one.bug, case)
        if grade in CATCHING:
            finding.caught_by.append((case.id, grade, message))
        elif grade is Grade.ERROR:
            finding.errors.append((case.id, message))
    # a case the correct twin fails too does not catch this bug: it fails everything
    for entry in list(finding.caught_by):
        grade, message = await _grade(one, None, cases[entry[0]])
        if grade not in (Grade.PASSED, Grade.INFORMATIONAL):
            finding.caught_by.remove(entry)
            finding.twin_problems.append((entry[0], grade, message))
    return finding
