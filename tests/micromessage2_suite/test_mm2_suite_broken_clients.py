"""Every Micromessage2 client-role case fails a reference client with one bug, and passes the
bug-free one and a correct client that acks differently."""

from __future__ import annotations

import pytest

from reference_impl.micromessage2 import client as mm2_client

from tests.harness.suite_helpers import Grade, all_cases, run_client_case
from conformance.selftest.buggy_mm2_client import BUGS, ack_every_third_client, buggy_client
from conformance.selftest.micromessage2_bugs import CLIENT_BUG_TO_CASE

CAUGHT_BY = CLIENT_BUG_TO_CASE  # the catalogue `conformance selftest` reads: one table
BATCH_ACK = "micromessage2/ack-wrap/client-acks-messages"


def _case(case_id: str):
    return all_cases("micromessage2")[case_id]


def test_every_bug_has_its_case_and_every_client_case_a_bug() -> None:
    assert set(CAUGHT_BY) == set(BUGS)
    client_cases = {c.id for c in all_cases("micromessage2").values() if c.role == "client"}
    assert set(CAUGHT_BY.values()) == client_cases


@pytest.mark.parametrize("bug", sorted(BUGS))
def test_the_bug_is_failed(bug: str) -> None:
    result = run_client_case(_case(CAUGHT_BY[bug]), buggy_client(bug))
    assert result.grade is Grade.FAILED, result.message


@pytest.mark.parametrize("case_id", sorted(set(CAUGHT_BY.values())))
def test_the_bug_free_client_passes(case_id: str) -> None:
    result = run_client_case(_case(case_id), buggy_client(None))
    assert result.grade is Grade.PASSED, result.message


def test_a_client_that_acks_every_third_message_passes_batch_ack() -> None:
    result = run_client_case(_case(BATCH_ACK), ack_every_third_client)
    assert result.grade is Grade.PASSED, result.message
    assert result.client_exit == 0


def test_a_client_speaking_1_1_keeps_its_own_lower_minor_and_passes() -> None:
    async def launch(testcase: str, url: str) -> int:
        client = await mm2_client.connect(url, optional=["json"], version=(1, 1))
        await client.close()
        return 0

    result = run_client_case(_case("micromessage2/handshake/client-server-higher-minor"), launch)
    assert result.grade is Grade.PASSED, result.message


def test_a_client_that_answers_the_error_with_its_own_before_closing_passes() -> None:
    result = run_client_case(_case("micromessage2/handshake/client-required-missing-refused"),
                             buggy_client("answers-error-with-error"))
    assert result.grade is Grade.PASSED, result.message
