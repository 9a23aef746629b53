"""`conformance interop` with a client that opens more than one connection in a case (a reconnect,
an RSocket RESUME on a new transport, an MTL client with two control connections): every
connection the proxy accepts has a monitor of its own, so two byte streams are never judged as
one, and a violation names its connection.  In-process pairs, no engine."""

from __future__ import annotations

import asyncio
import dataclasses
import re
from pathlib import Path
from urllib.parse import urlsplit

from conformance.images.implementations import Implementation
from conformance.images.interop import PROTOCOLS, REFERENCE, run_pair
from reference_impl.mtl.client import run_client_testcase as mtl_testcase
from reference_impl.rsocket import codec
from reference_impl.rsocket.client import run_client_testcase as rsocket_testcase

SETUP = codec.Setup(1, 0, 20_000, 90_000, "text/plain", "text/plain")
TOKEN = b"interop-conns-token"


def _impl(protocol: str) -> Implementation:
    return Implementation(name=REFERENCE, image="", kind="reference", protocols=(protocol,))


def _run(protocol: str, client, tmp_path: Path, case: str) -> tuple[dict, str]:
    """One case of the reference server with CLIENT (url, log -> exit code) in place of the
    reference client: the case's result and its wire log."""
    proto = dataclasses.replace(PROTOCOLS[protocol](), run_reference_client=lambda _case, url, log: client(url, log))
    pair = asyncio.run(run_pair(_impl(protocol), _impl(protocol), proto, protocol, [case], tmp_path))
    result = pair["cases"][0]
    return result, (tmp_path / result["wire"]).read_text()


def _twice(run_testcase, testcase: str, what: str):
    """A client (url, log -> exit code) that runs the reference client's TESTCASE twice in a row,
    each on connections of its own: the worse exit code."""
    async def client(url: str, log) -> int:
        codes = [await run_testcase(url, testcase) for _ in range(2)]
        log(f"{what}: {codes}")
        return max(codes)
    return client


async def _raw_rsocket(url: str, frames: list, answers: int = 0) -> list:
    """Sends FRAMES on a connection of its own, reads ANSWERS frames back (1 s each), closes."""
    parts = urlsplit(url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    got = []
    try:
        writer.write(b"".join(codec.encode_tcp(frame) for frame in frames))
        await writer.drain()
        for _ in range(answers):
            size = int.from_bytes(await asyncio.wait_for(reader.readexactly(3), 1.0), "big")
            got.append(codec.decode_frame(await asyncio.wait_for(reader.readexactly(size), 1.0)))
    finally:
        writer.close()
        await writer.wait_closed()
    return got


def test_two_rsocket_connections_each_correct_give_no_violation(tmp_path: Path) -> None:
    # each connection opens stream 1 after its SETUP: fed to one monitor, the second request
    # looked like stream-id-not-increasing
    twice = _twice(rsocket_testcase, "request-response", "two connections")
    result, wire = _run("rsocket", twice, tmp_path, "request-response")
    assert result["verdict"] == "passed" and result["violations"] == [], result
    assert "connection 2 opened" in wire and "the client closed its end of connection 2" in wire


def test_a_rule_the_second_connection_breaks_names_connection_2(tmp_path: Path) -> None:
    # "The first frame sent by the Client MUST be SETUP or RESUME" (Protocol.md, Connection
    # Establishment): the second connection starts with REQUEST_FNF.  One monitor for both missed it.
    async def second_without_setup(url: str, log) -> int:
        answer = await _raw_rsocket(url, [SETUP, codec.RequestResponse(1, None, b"echo:a")], answers=1)
        log(f"connection 1 answered {answer}")
        await _raw_rsocket(url, [codec.RequestFnf(3, None, b"fnf:x")])
        return 0

    result, wire = _run("rsocket", second_without_setup, tmp_path, "request-response")  # no read-back
    assert result["verdict"] == "client-broke-spec", result
    assert len(result["violations"]) == 1
    violation = result["violations"][0]
    assert violation.startswith("client broke first-frame-not-setup (frame 0)") and "connection 2" in violation
    assert "VIOLATION connection 2: client broke first-frame-not-setup" in wire


def test_a_resume_that_opens_the_second_connection_is_no_protocol_error(tmp_path: Path) -> None:
    # "The first frame sent by the Client MUST be SETUP or RESUME": a RESUME continues the session
    # of the first connection (SETUP with R), and is its own connection's first frame.  It says it
    # received none of the server's bytes (position 0), so the server may send the answer on stream 1
    # again ("Resuming Operation"): a stream the new connection's monitor never saw open, not judged
    seen = []

    async def resume_on_a_new_transport(url: str, log) -> int:
        setup = dataclasses.replace(SETUP, resume_token=TOKEN)
        seen.append(await _raw_rsocket(url, [setup, codec.RequestResponse(1, None, b"echo:a")], answers=1))
        seen.append(await _raw_rsocket(url, [codec.Resume(1, 0, TOKEN, 0, 0)], answers=1))
        return 0

    result, wire = _run("rsocket", resume_on_a_new_transport, tmp_path, "request-response")
    assert isinstance(seen[0][0], codec.Payload) and seen[0][0].data == b"a"
    assert isinstance(seen[1][0], (codec.ResumeOk, codec.Error)), seen  # the server answered the RESUME
    assert result["verdict"] == "passed" and result["violations"] == [], result
    assert "connection 2 opened" in wire


def test_one_connection_keeps_the_log_as_it_was(tmp_path: Path) -> None:
    result, wire = _run("rsocket", lambda url, log: rsocket_testcase(url, "request-response"), tmp_path,
                        "request-response")
    assert result["verdict"] == "passed", result
    assert "connection 2" not in wire and "connection 1" not in wire
    assert "the client closed its end of the connection" in wire


def test_an_mtl_client_with_two_control_connections(tmp_path: Path) -> None:
    # two test-profile runs: two control connections (two greetings, two handshakes; one monitor for
    # both read the second greeting as frames), each with a writer and a reader data connection
    twice = _twice(mtl_testcase, "test-profile", "two control connections")
    result, wire = _run("mtl", twice, tmp_path, "test-profile")
    assert result["verdict"] == "passed" and result["violations"] == [], result
    assert "monitor: 4 data connections" in wire
    # the data connections are numbered across the case, in the order they were accepted: 1 and 2
    # lead from control connection 1, 3 and 4 from control connection 2
    second = wire.index("control connection 2 opened")
    numbers = [(int(m.group(1)), m.start() > second) for m in re.finditer(r"data connection (\d+), client", wire)]
    assert sorted(set(numbers)) == [(1, False), (2, False), (3, True), (4, True)], numbers
    assert "control connection 1:" not in wire[:second]  # the log reads as before until the second opens


def test_on_a_resumed_connection_new_streams_are_still_judged(tmp_path: Path) -> None:
    # "Value MUST be > 0" (Protocol.md, REQUEST_STREAM Initial Request N): stream 3 is new to the session
    async def resume_then_request_n_zero(url: str, log) -> int:
        setup = dataclasses.replace(SETUP, resume_token=TOKEN)
        await _raw_rsocket(url, [setup, codec.RequestResponse(1, None, b"echo:a")], answers=1)
        await _raw_rsocket(url, [codec.Resume(1, 0, TOKEN, 0, 0), codec.RequestStream(3, 0, None, b"range:1")])
        return 0

    result, _ = _run("rsocket", resume_then_request_n_zero, tmp_path, "request-response")
    assert [v for v in result["violations"] if v.startswith("client")] == [
        "client broke request-n-zero (frame 1): connection 2: stream 3"], result


def test_connection_monitors_name_the_connection_only_when_there_are_several() -> None:
    from conformance.images.interop_protocol import ConnectionMonitors
    from reference_impl.common.wire_monitor import Side, Violation

    class Fake:
        def __init__(self) -> None:
            self.violations = [Violation(Side.SERVER, "some-rule", 3, "stream 5")]
            self.notes = ["could not check x"]
            self.frames = 4

    monitors = ConnectionMonitors(Fake, "control connection")
    monitors.connection()
    assert [str(v) for v in monitors.violations] == ["server broke some-rule (frame 3): stream 5"]
    assert monitors.notes == ["could not check x"] and monitors.messages is None
    monitors.connection()
    assert [str(v) for v in monitors.violations] == [
        "server broke some-rule (frame 3): control connection 1: stream 5",
        "server broke some-rule (frame 3): control connection 2: stream 5"]
    assert monitors.notes == ["control connection 1: could not check x", "control connection 2: could not check x"]
    assert monitors.frames == 8 and all(v.side is Side.SERVER for v in monitors.violations)
