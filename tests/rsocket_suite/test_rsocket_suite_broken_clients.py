"""Every RSocket client-role case that grades (MUST) fails a reference client with one bug, and
passes the bug-free one, on TCP and WebSocket."""

from __future__ import annotations

import asyncio

import pytest

from conformance.protocols import adapter_for
from conformance.scenario.runner import CaseRunner
from conformance.selftest.buggy_rsocket_client import BUGS, buggy_client
from conformance.selftest.rsocket_bugs import CLIENT_BUG_TO_CASE
from suite_helpers import Grade, all_cases, run_client_case

CASES = all_cases("rsocket")


def test_every_bug_has_its_case_and_every_graded_client_case_a_bug() -> None:
    assert set(CLIENT_BUG_TO_CASE) == set(BUGS)
    graded = {c.id for c in CASES.values() if c.role == "client" and c.requirement != "INFO"}
    assert set(CLIENT_BUG_TO_CASE.values()) == graded


@pytest.mark.parametrize("bug", sorted(BUGS))
def test_the_bug_is_failed(bug: str) -> None:
    result = run_client_case(CASES[CLIENT_BUG_TO_CASE[bug]], buggy_client(bug))
    assert result.grade is Grade.FAILED, result.message


@pytest.mark.parametrize("transport", ["tcp", "ws"])
@pytest.mark.parametrize("case_id", sorted(set(CLIENT_BUG_TO_CASE.values())))
def test_the_bug_free_client_passes(case_id: str, transport: str) -> None:
    adapter = adapter_for("rsocket")
    params = {**adapter.params, **adapter.ref_params}
    runner = CaseRunner(CASES[case_id], adapter, transport, params)
    result = asyncio.run(runner.against_client(buggy_client(None)))
    assert result.grade is Grade.PASSED, result.message


@pytest.mark.parametrize("transport", ["tcp", "ws"])
def test_a_null_terminated_mime_type_is_failed_as_that(transport: str) -> None:
    # SETUP Frame: "The string MUST NOT be null terminated." The codec reads the MIME type as its
    # length says, so the NUL arrives as part of the string and only the suite's reader can refuse it
    adapter = adapter_for("rsocket")
    params = {**adapter.params, **adapter.ref_params}
    runner = CaseRunner(CASES["rsocket/handshake/client-setup"], adapter, transport, params)
    result = asyncio.run(runner.against_client(buggy_client("mime-null-terminated")))
    assert result.grade is Grade.FAILED and "must not be null terminated" in result.message.lower(), result.message
    assert "\\x00' ends with a NUL" in result.message, result.message  # the MIME type shown as sent
