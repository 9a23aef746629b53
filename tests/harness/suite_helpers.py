"""Run single scenario cases against a URL through the harness API."""

from __future__ import annotations

import asyncio

from conformance.grading import Grade
from conformance.paths import scenarios_dir
from conformance.protocols import adapter_for
from conformance.scenario.loader import Case, load_file
from conformance.scenario.runner import CaseResult, CaseRunner


def all_cases(protocol: str) -> dict[str, Case]:
    adapter = adapter_for(protocol)
    cases = {}
    for path in sorted((scenarios_dir() / protocol).glob("*.yaml")):
        for case in load_file(path, adapter.frame_check).cases:
            assert isinstance(case, Case), case
            cases[case.id] = case
    return cases


async def run_case(case: Case, url: str, transport: str = "tcp", params: dict | None = None,
                   time_scale: float = 1.0) -> CaseResult:
    adapter = adapter_for(case.protocol)
    merged = {**adapter.params, **adapter.ref_params, **(params or {})}
    return await CaseRunner(case, adapter, transport, merged, time_scale).against_server(url)


__all__ = ["Grade", "all_cases", "run_case", "asyncio"]
