"""Every STMP client-role case fails a reference client with one bug, and passes the bug-free one."""

from __future__ import annotations

import asyncio

import pytest

from conformance.protocols import adapter_for
from reference_impl.stmp.client import CASE_REQUEST_TIMEOUT, connect
from conformance.selftest.buggy_stmp_client import BUGS, buggy_client
from tests.harness.suite_helpers import Grade, all_cases, run_client_case
from conformance.selftest.stmp_bugs import CLIENT_BUG_TO_CASE

CAUGHT_BY = CLIENT_BUG_TO_CASE  # the catalogue `conformance selftest` reads: one table


def _case(case_id: str):
    return all_cases("stmp")[case_id]


def test_every_bug_has_its_case_and_every_client_case_a_bug() -> None:
    assert set(CAUGHT_BY) == set(BUGS)
    client_cases = {c.id for c in all_cases("stmp").values() if c.role == "client"}
    assert set(CAUGHT_BY.values()) == client_cases


@pytest.mark.parametrize("bug", sorted(BUGS))
def test_the_bug_is_failed(bug: str) -> None:
    result = run_client_case(_case(CAUGHT_BY[bug]), buggy_client(bug))
    assert result.grade is Grade.FAILED, result.message


@pytest.mark.parametrize("case_id", sorted(set(CAUGHT_BY.values())))
def test_the_bug_free_client_passes(case_id: str) -> None:
    result = run_client_case(_case(case_id), buggy_client(None))
    assert result.grade is Grade.PASSED, result.message


def test_the_suite_times_the_reference_client_by_its_own_request_timeout() -> None:
    assert adapter_for("stmp").ref_params["request_timeout_ms"] == CASE_REQUEST_TIMEOUT * 1000


def test_a_client_that_pings_right_after_negotiating_passes() -> None:
    """Heartbeats may start once negotiated: only what comes before the negotiation is checked."""

    async def launch(testcase: str, url: str) -> int:
        client = await connect(url, timeout=5.0, heartbeat_interval=0.05)
        await asyncio.sleep(0.3)
        await client.close()
        return 0

    result = run_client_case(_case("stmp/handshake/client-sends-negotiation"), launch)
    assert result.grade is Grade.PASSED, result.message
