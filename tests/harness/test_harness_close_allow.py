"""What may come before a close: ``expect_close``'s ``allow`` list, ``expect_silence``'s ``closed``,
and target timers in '= expr' steps after a ``save``.

The target is a few raw bytes from a socket, so each verdict rests on hand-written STMP bytes:
``c0 12 34 32`` is a Response, ID 0x1234, STATUS 0x32, ENCODING 0 (the authors' own codec test,
text form ``3|0|4660|50``); ``c0 12 34 20`` the same with STATUS 0x20 (BadRequest).
"""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path

from conformance.grading import Grade
from conformance.protocols import adapter_for
from conformance.scenario.loader import Case, load_file
from conformance.scenario.runner import CaseRunner

GATEWAY_TIMEOUT = bytes.fromhex("c0123432")
BAD_REQUEST = bytes.fromhex("c0123420")


def _case(tmp_path: Path, steps: str) -> Case:
    path = tmp_path / "scenarios" / "stmp" / "error-disconnect.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent("""\
        protocol: stmp
        family: error-disconnect
        cases:
          - id: stmp/error-disconnect/x
            title: x
            spec: "x"
            requirement: MUST
            transports: [tcp]
            steps:
        """) + textwrap.indent(textwrap.dedent(steps), " " * 6))
    (case,) = load_file(path, adapter_for("stmp").frame_check).cases
    assert isinstance(case, Case), case
    return case


async def _against(case: Case, sends: bytes, then_close: bool = True, linger: float = 0.0):
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(sends)
        await writer.drain()
        await asyncio.sleep(linger)
        if then_close:
            writer.close()
        else:
            await reader.read()  # until the suite goes away

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    url = f"tcp://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    try:
        adapter = adapter_for("stmp")
        return await CaseRunner(case, adapter, "tcp", {**adapter.params, **adapter.ref_params}).against_server(url)
    finally:
        server.close()


def _run(case: Case, sends: bytes, **options):
    return asyncio.run(_against(case, sends, **options))


def test_an_allowed_frame_before_the_close_passes(tmp_path: Path) -> None:
    case = _case(tmp_path, "- expect_close: {within_ms: 2000, allow: [{kind: response, status: badrequest}]}")
    result = _run(case, BAD_REQUEST)
    assert result.grade is Grade.PASSED and result.close is Grade.PASSED, result.message


def test_a_frame_outside_the_allow_list_fails_the_close(tmp_path: Path) -> None:
    case = _case(tmp_path, "- expect_close: {within_ms: 2000, allow: [{kind: response, status: badrequest}]}")
    result = _run(case, GATEWAY_TIMEOUT)
    assert result.close is Grade.FAILED and "instead of closing" in result.message, result.message


def test_without_an_allow_list_any_frame_fails_the_close(tmp_path: Path) -> None:
    case = _case(tmp_path, "- expect_close: {within_ms: 2000}")
    assert _run(case, BAD_REQUEST).close is Grade.FAILED


def test_silence_may_end_in_a_close_when_the_case_says_so(tmp_path: Path) -> None:
    closing = _case(tmp_path, "- expect_silence: {for_ms: 1000, closed: true}")
    assert _run(closing, b"").grade is Grade.PASSED
    strict = _case(tmp_path, "- expect_silence: {for_ms: 1000}")
    assert _run(strict, b"").grade is Grade.FAILED
    # closed: true still refuses a frame: the target must send nothing
    assert _run(closing, BAD_REQUEST).grade is Grade.FAILED


def test_target_timers_work_in_expressions_after_a_save(tmp_path: Path) -> None:
    # a saved variable and a target parameter in one expression (heartbeat_interval_ms is 1000 with
    # the reference timers, status 0x32): 1100 ms of silence from a target that stays open
    case = _case(tmp_path, """\
        - expect: {kind: response, save: {status: status}}
        - expect_silence: {for_ms: "= heartbeat_interval_ms + status * 2"}
        """)
    result = _run(case, GATEWAY_TIMEOUT, then_close=False)
    assert result.grade is Grade.PASSED and result.duration_ms >= 1100, result.message
