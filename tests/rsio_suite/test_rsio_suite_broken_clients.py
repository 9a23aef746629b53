"""Every rsio client-role case that grades (MUST) fails a reference client with one bug, and
passes the bug-free one."""

from __future__ import annotations

import pytest

from reference_impl.rsio import client as rsio_client
from reference_impl.rsio.session import SessionClosed

from tests.harness.suite_helpers import Grade, all_cases, run_client_case
from conformance.selftest.buggy_rsio_client import BUGS, buggy_client
from conformance.selftest.rsio_bugs import CLIENT_BUG_TO_CASE

CAUGHT_BY = CLIENT_BUG_TO_CASE  # the catalogue `conformance selftest` reads: one table


def _case(case_id: str):
    return all_cases("rsio")[case_id]


def test_every_bug_has_its_case_and_every_graded_client_case_a_bug() -> None:
    assert set(CAUGHT_BY) == set(BUGS)
    graded = {c.id for c in all_cases("rsio").values() if c.role == "client" and c.requirement != "INFO"}
    assert set(CAUGHT_BY.values()) == graded


@pytest.mark.parametrize("bug", sorted(BUGS))
def test_the_bug_is_failed(bug: str) -> None:
    result = run_client_case(_case(CAUGHT_BY[bug]), buggy_client(bug))
    assert result.grade is Grade.FAILED, result.message


@pytest.mark.parametrize("case_id", sorted(set(CAUGHT_BY.values())))
def test_the_bug_free_client_passes(case_id: str) -> None:
    result = run_client_case(_case(case_id), buggy_client(None))
    assert result.grade is Grade.PASSED, result.message


def test_a_client_that_waits_for_the_server_hello_passes_the_wrong_version_case() -> None:
    """Subscribing before the serverHello is allowed, not required."""

    async def launch(testcase: str, url: str) -> int:
        client = await rsio_client.connect(url)
        try:
            await client.hello()
        except SessionClosed:  # version 1: the connection said goodbye and closed
            return 1
        await client.close()
        return 0

    result = run_client_case(_case("rsio/handshake/client-wrong-version"), launch)
    assert result.grade is Grade.PASSED, result.message
