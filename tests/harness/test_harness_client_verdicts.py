"""Client-role verdicts hold on someone else's client: what the process does counts.

Each client below is a stand-in for a third-party client with one flaw in how it ends
(exit code, timing); the protocol exchange itself is the reference client's or raw bytes.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from conformance.grading import Grade
from conformance.protocols import adapter_for
from conformance.scenario.runner import CaseRunner
from conformance.targets import TargetError, command_client_launcher, parse_target
from tests.harness.suite_helpers import all_cases

NEGOTIATE = "stmp/handshake/client-sends-negotiation"


def _case(case_id: str, **changes):
    case = all_cases(case_id.split("/")[0])[case_id]
    return dataclasses.replace(case, **changes) if changes else case


def _run(case, launch):
    adapter = adapter_for(case.protocol)
    params = {**adapter.params, **adapter.ref_params}
    return asyncio.run(CaseRunner(case, adapter, "tcp", params).against_client(launch))


def _reference(case):
    return lambda testcase, url: adapter_for(case.protocol).run_reference_client(url, testcase)


async def _raw_client(url: str, data: bytes, linger: float) -> None:
    parts = urlsplit(url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    writer.write(data)
    await writer.drain()
    await asyncio.sleep(linger)
    writer.close()


def test_the_case_exists_and_the_reference_client_passes() -> None:
    case = _case(NEGOTIATE)
    assert case.role == "client" and case.client_exit == 0
    assert _run(case, _reference(case)).grade is Grade.PASSED


def test_a_client_that_breaks_the_protocol_then_exits_127_is_failed() -> None:
    case = _case(NEGOTIATE)

    async def launch(testcase: str, url: str) -> int:
        await _raw_client(url, b"\xff" * 32, 0.5)  # not an STMP request at all
        return 127

    result = _run(case, launch)
    assert result.grade is Grade.FAILED, result.message


def test_a_client_that_only_exits_127_is_unsupported() -> None:
    async def launch(testcase: str, url: str) -> int:
        return 127

    assert _run(_case(NEGOTIATE), launch).grade is Grade.UNSUPPORTED


def test_a_client_that_never_exits_fails_a_case_about_its_exit_code() -> None:
    case = _case(NEGOTIATE, timeout_ms=2500)
    reference = _reference(case)
    cancelled = []

    async def launch(testcase: str, url: str) -> int:
        await reference(testcase, url)
        try:
            await asyncio.sleep(3600)  # does its work, then hangs instead of exiting
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return 0

    result = _run(case, launch)
    assert result.grade is Grade.FAILED, result.message
    assert "did not exit" in result.message
    assert cancelled, "the hung client was not stopped"


def test_a_hung_command_client_is_killed_by_its_pid(tmp_path: Path) -> None:
    case = _case(NEGOTIATE, timeout_ms=2000)
    pidfile = tmp_path / "pid"
    script = f"import os, time; open({str(pidfile)!r}, 'w').write(str(os.getpid())); time.sleep(120)"
    launch = command_client_launcher(f"{sys.executable} -c {script!r} {{url}}")
    result = _run(case, launch)
    assert result.grade is not Grade.PASSED
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, 9)
        pytest.fail("the client command outlived its case")


def test_a_client_that_exits_0_before_the_case_is_done_is_failed() -> None:
    case = _case(NEGOTIATE)
    request = _stmp_negotiate_request()

    async def launch(testcase: str, url: str) -> int:
        await _raw_client(url, request, 0)  # asks, then leaves without reading the answer
        return 0

    result = _run(case, launch)
    assert result.grade is Grade.FAILED, result.message
    assert "before" in result.message


def _stmp_negotiate_request() -> bytes:
    adapter = adapter_for("stmp")
    frame = {"kind": "request", "id": 0, "action": 0, "encoding": "raw", "versions": ["0.1"]}
    return b"".join(adapter.encode(frame, "tcp"))


def test_target_client_applies_to_every_server_target() -> None:
    command = f"{sys.executable} -c pass {{url}} {{testcase}}"
    for spec in ("ref", "tcp://127.0.0.1:9"):
        target = parse_target(spec, client_command=command)
        try:
            assert target.client_launcher("stmp") is not target.own_client_launcher("stmp")
            assert target.client_command == command
        finally:
            target.close()


@pytest.mark.parametrize("command, why", [
    ("true", "{url}"),
    ("no-such-program-anywhere {url}", "no such program"),
    ("'unbalanced {url}", "quotation"),
])
def test_a_target_client_that_cannot_work_is_refused(command: str, why: str) -> None:
    with pytest.raises(TargetError, match=why):
        parse_target("ref", client_command=command)


@pytest.mark.parametrize("spec", ["tcp://127.0.0.1:abc", "tcp://127.0.0.1:99999", "tcp://127.0.0.1", "ftp://x"])
def test_a_malformed_target_is_a_target_error(spec: str) -> None:
    with pytest.raises(TargetError):
        parse_target(spec)
