"""Run single scenario cases against a URL through the harness API."""

from __future__ import annotations

import asyncio

from conformance.grading import Grade
from conformance.paths import scenarios_dir
from conformance.protocols import adapter_for
from conformance.scenario.loader import Case, load_file
from conformance.scenario.runner import CaseResult, CaseRunner, ClientLauncher


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




def run_client_case(case: Case, launch: ClientLauncher, params: dict | None = None) -> CaseResult:
    """One client-role case with ``launch(testcase, url) -> exit code`` as the client under test."""
    adapter = adapter_for(case.protocol)
    merged = {**adapter.params, **adapter.ref_params, **(params or {})}
    return asyncio.run(CaseRunner(case, adapter, "tcp", merged).against_client(launch))


def reference_client(protocol: str) -> ClientLauncher:
    adapter = adapter_for(protocol)
    return lambda testcase, url: adapter.run_reference_client(url, testcase)


__all__ = ["Grade", "all_cases", "reference_client", "run_case", "run_client_case", "asyncio"]
