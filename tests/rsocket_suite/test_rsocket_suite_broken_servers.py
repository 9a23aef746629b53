"""A suite that cannot fail proves nothing: each one-bug RSocket server fails the case named for
it (FAILED for a MUST, NON-STRICT for a SHOULD), and the bug-free twin passes every server-role
case on TCP and WebSocket."""

from __future__ import annotations

import asyncio
from functools import lru_cache

import pytest

from conformance.selftest.buggy_rsocket import BUGS, start_buggy_server
from conformance.selftest.rsocket_bugs import BUG_TO_CASE, SHOULD_BUG_TO_CASE
from reference_impl.rsocket.server import start_server
from suite_helpers import Grade, all_cases, run_case

CASES = all_cases("rsocket")
SERVER_CASES = sorted(cid for cid, c in CASES.items() if c.role == "server")
#: the cases that need a server which resumes (docs/profiles/rsocket.md, "Resumption")
RESUME_CASES = sorted(cid for cid in SERVER_CASES if cid.startswith("rsocket/handshake/resume-")
                      and cid != "rsocket/handshake/resume-without-session")


async def _run(bug: str | None, case_id: str, transport: str = "tcp"):
    server = await start_buggy_server(bug, "websocket" if transport == "ws" else "tcp")
    try:
        return await run_case(CASES[case_id], server.url, transport)
    finally:
        await server.close()


@lru_cache(maxsize=None)
def _grade(bug: str | None, case_id: str, transport: str = "tcp"):
    return asyncio.run(_run(bug, case_id, transport))


def test_every_bug_has_a_case() -> None:
    assert {bug for bug, _ in BUG_TO_CASE + SHOULD_BUG_TO_CASE} == BUGS
    assert len(BUGS) >= 12


@pytest.mark.parametrize("bug,case_id", BUG_TO_CASE, ids=[f"{b}->{c}" for b, c in BUG_TO_CASE])
def test_each_bug_fails_its_case(bug: str, case_id: str) -> None:
    result = _grade(bug, case_id)
    assert result.grade is Grade.FAILED, (result.grade, result.message, result.log.render())


@pytest.mark.parametrize("bug,case_id", SHOULD_BUG_TO_CASE, ids=[f"{b}->{c}" for b, c in SHOULD_BUG_TO_CASE])
def test_each_should_bug_is_non_strict(bug: str, case_id: str) -> None:
    result = _grade(bug, case_id)
    assert result.grade is Grade.NON_STRICT, (result.grade, result.message)


@pytest.mark.parametrize("transport", ["tcp", "ws"])
@pytest.mark.parametrize("case_id", SERVER_CASES)
def test_the_bug_free_twin_passes_every_case(case_id: str, transport: str) -> None:
    case = CASES[case_id]
    if case.transports and transport not in case.transports:
        pytest.skip(f"{case_id} runs on {case.transports} only")
    result = _grade(None, case_id, transport)
    assert result.grade in {Grade.PASSED, Grade.INFORMATIONAL}, (result.grade, result.message)


@pytest.mark.parametrize("case_id", RESUME_CASES)
def test_a_server_without_resumption_is_unsupported_on_the_resume_cases(case_id: str) -> None:
    """It answers a SETUP with R by ERROR[REJECTED_SETUP] (the profile's decision): UNSUPPORTED, never FAILED."""
    async def run():
        server = await start_server(resume=False)
        try:
            return await run_case(CASES[case_id], server.url, "tcp")
        finally:
            await server.close()
    result = asyncio.run(run())
    assert result.grade is Grade.UNSUPPORTED, (result.grade, result.message)
    assert "REJECTED_SETUP" in result.log.render()


async def _refuse_lease(code: int):
    """A server that answers whatever SETUP comes with one ERROR on stream 0 (bytes written by hand:
    length prefix, stream id 0, type ERROR 0x0B << 10, the code, "no lease") and closes."""
    data = b"no lease"
    frame = (0).to_bytes(4, "big") + (0x0B << 10).to_bytes(2, "big") + code.to_bytes(4, "big") + data

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        length = int.from_bytes(await asyncio.wait_for(reader.readexactly(3), 5), "big")
        await asyncio.wait_for(reader.readexactly(length), 5)
        writer.write(len(frame).to_bytes(3, "big") + frame)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        port = server.sockets[0].getsockname()[1]
        return await run_case(CASES["rsocket/handshake/lease-requested"], f"tcp://127.0.0.1:{port}", "tcp")
    finally:
        server.close()
        await server.wait_closed()


@pytest.mark.parametrize("code,grade", [(0x1, Grade.INFORMATIONAL), (0x2, Grade.UNSUPPORTED), (0x3, Grade.UNSUPPORTED),
                                        (0x101, Grade.FAILED)],
                         ids=["INVALID_SETUP", "UNSUPPORTED_SETUP", "REJECTED_SETUP", "CONNECTION_ERROR"])
def test_a_setup_with_lease_refused(code: int, grade: Grade) -> None:
    """The profile ("Connection setup"): the spec lists INVALID_SETUP, UNSUPPORTED_SETUP and
    REJECTED_SETUP as refusals of a SETUP with L; the latter two say "no LEASE here" (UNSUPPORTED),
    INVALID_SETUP does not (INFORMATIONAL); any other answer is no refusal at all (FAILED)."""
    result = asyncio.run(_refuse_lease(code))
    assert result.grade is grade, (result.grade, result.message)
