"""Shared by the trace tests: run cases against a one-bug target (or its correct twin) with the
suite's capture on, then check the capture, with the key log the capture wrote beside it (mc0's
CURVE session keys) when there is one."""

from __future__ import annotations

import asyncio
from pathlib import Path

from conformance.selftest.catalog import OneBug
from conformance.selftest.command import _cases
from conformance.selftest.engine import _grade
from conformance.trace import capture
from conformance.trace.check import check_file, services_for
from conformance.trace.keylog import beside, read
from conformance.trace.sessions import Sessions
from conformance.protocols import adapter_for


def requirements_of_case(protocol: str, case_id: str) -> set[str]:
    """The requirements docs/requirements/<protocol>.yaml says the case tests (independent of the checker)."""
    import yaml
    from conformance.paths import docs_dir
    data = yaml.safe_load((docs_dir() / "requirements" / f"{protocol}.yaml").read_text())
    return {r["id"] for r in data["requirements"] if case_id in (r.get("cases") or [])}


def capture_cases(one: OneBug, bug: str | None, path: Path):
    cases = _cases(one.protocol)
    recorder = capture.start()
    grades = []
    try:
        for case_id in one.cases:
            grades.append(asyncio.run(_grade(one, bug, cases[case_id])))
    finally:
        capture.stop()
    capture.write(recorder, path)
    return grades


def check(one: OneBug, path: Path):
    """check-trace's checks of a capture capture_cases wrote: the suite's own, so --test-services'
    default (auto) judges it by the test services; the assertion keeps that from going off unseen."""
    assert services_for(path, "auto"), f"{path}: written by the suite, yet auto does not turn the test services on"
    adapter = adapter_for(one.protocol)
    params = {**adapter.params, **adapter.ref_params, **(one.params or {})}
    keys = read([beside(path)]) if beside(path).exists() else None
    result = check_file(path, {}, one.protocol, params, keys)
    sessions = Sessions()  # the checks across the capture's connections, as the CLI runs them
    sessions.add(str(path), result.facts)
    result.findings += [finding for _, finding in sessions.findings()]
    return result
