"""An optional `accept` (client role): no connection ends the case with the grade it has; a connection
runs the steps after it. Exercised on rsocket/handshake/client-resume-rejected, whose last steps
accept a further connection only if it opens with SETUP, never RESUME ("On receiving an
ERROR[REJECTED_RESUME] frame, the client MUST NOT attempt resumption again.")."""

from __future__ import annotations

from conformance.grading import Grade
from conformance.selftest.buggy_rsocket_client import buggy_client
from reference_impl.rsocket.client import run_client_testcase
from tests.harness.suite_helpers import all_cases, run_client_case

CASE = "rsocket/handshake/client-resume-rejected"


def _run(launch):
    return run_client_case(all_cases("rsocket")[CASE], launch)


def test_a_client_that_gives_up_after_the_refusal_passes() -> None:
    result = _run(lambda testcase, url: run_client_testcase(url, testcase))
    assert result.grade is Grade.PASSED, result.message


def test_a_client_that_starts_a_new_session_with_setup_passes() -> None:
    async def launch(testcase: str, url: str) -> int:
        assert await run_client_testcase(url, testcase) == 1  # its resume was refused
        return await run_client_testcase(url, "request-response")  # a new session: SETUP, no token

    result = _run(launch)
    assert result.grade is Grade.PASSED, result.message


def test_a_client_that_resumes_again_fails() -> None:
    result = _run(buggy_client("resumes-after-rejection"))
    assert result.grade is Grade.FAILED
    assert "RESUME" in result.message and "SETUP" in result.message, result.message


def test_a_client_that_never_resumes_is_not_failed_here() -> None:
    # no R in its SETUP, no reconnect: the rule is never exercised (client-resume grades that)
    result = _run(lambda testcase, url: run_client_testcase(url, "stream"))
    assert result.grade is Grade.INFORMATIONAL, result.message
