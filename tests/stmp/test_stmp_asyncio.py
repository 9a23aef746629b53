"""asyncio STMP servers and client over 127.0.0.1, port 0.

Raw-socket checks use hand-computed bytes (see test_stmp_connection.py); the
text-frame checks use hand-written text of the docs/profiles/stmp.md text form.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import InvalidStatus

from reference_impl.stmp import client as client_module
from reference_impl.stmp.client import StmpClosed, connect, run_client_testcase
from reference_impl.stmp.codec import Notify, Response
from reference_impl.stmp.server import start_tcp_server, start_ws_server

REPO = Path(__file__).resolve().parents[2]
NEGOTIATE = bytes.fromhex("68 0000 00000000 00000001 01")
NEGOTIATED = bytes.fromhex("e8 0000 00 00000001 01")
IO_TIMEOUT = 3.0


def run(coro: Awaitable[object], timeout: float = 30.0) -> object:
    return asyncio.run(asyncio.wait_for(coro, timeout))


async def read(reader: asyncio.StreamReader, n: int) -> bytes:
    return await asyncio.wait_for(reader.readexactly(n), IO_TIMEOUT)


async def read_to_eof(reader: asyncio.StreamReader) -> bytes:
    return await asyncio.wait_for(reader.read(), IO_TIMEOUT)


@pytest.mark.parametrize(("start", "text"), [
    (start_tcp_server, False), (start_ws_server, False), (start_ws_server, True),  # text: WebSocket only
])
def test_client_and_server_exercise_the_test_service(start, text: bool) -> None:
    async def scenario() -> None:
        server = await start()
        try:
            client = await connect(server.url, timeout=IO_TIMEOUT, text=text)
            assert client.version == (0, 1)
            echo = await client.request(0x100, 5, b"a|b\xff")
            assert (echo.status, echo.encoding, echo.payload) == (0, 5, b"a|b\xff")
            json = await client.request(0x100, 2, b'{"k":"v"}')
            assert (json.status, json.encoding, json.payload) == (0, 2, b'{"k":"v"}')
            started = time.monotonic()
            delayed = await client.request(0x102, 5, (150).to_bytes(4, "big"))
            assert delayed.status == 0 and time.monotonic() - started >= 0.14
            assert (await client.request(0x4242, 0, b"")).status == 0x24
            assert (await client.request(0x00FF, 0, b"")).status == 0x31
            assert (await client.request(0x102, 5, b"\x01")).status == 0x20
            await client.notify(0x101, 5, b"\x00\x01")
            back = await asyncio.wait_for(client.notifications.get(), IO_TIMEOUT)
            assert back == Notify(0x101, 5, b"\x00\x01")
            await client.close()
        finally:
            await server.close()

    run(scenario())


def test_client_request_times_out_locally() -> None:
    async def scenario() -> None:
        server = await start_tcp_server()
        try:
            client = await connect(server.url, timeout=IO_TIMEOUT, request_timeout=0.3)
            started = time.monotonic()
            response = await client.request(0x102, 5, (5000).to_bytes(4, "big"))
            assert response == Response(response.id, 0x25, 0, b"")
            assert 0.25 <= time.monotonic() - started < 2.0
            await client.close()
        finally:
            await server.close()

    run(scenario())


@pytest.mark.parametrize("start", [start_tcp_server, start_ws_server])
def test_version_mismatch_fails_connect(start) -> None:
    async def scenario() -> None:
        server = await start()
        try:
            with pytest.raises(StmpClosed) as info:
                await connect(server.url, timeout=IO_TIMEOUT, versions=[(0, 2)])
            assert info.value.reason == "version-not-supported"
        finally:
            await server.close()

    run(scenario())


@pytest.mark.parametrize(("after_negotiation", "wire", "reply"), [
    (False, "01", "c0 0000 20"),
    (False, "40 0007 00000100", "c0 0007 20"),
    (False, "68 0000 00000000 00000001 f0", "c0 0000 35"),
    (True, "68 0009 00000100 00000011", "c0 0009 26"),  # PS 17 > max_payload 16
    (True, "68 0009 00000100 00000000", "c0 0000 20"),  # empty payload with ENCODING 5
])
def test_raw_tcp_refusals_then_close(after_negotiation: bool, wire: str, reply: str) -> None:
    async def scenario() -> None:
        server = await start_tcp_server(max_payload=16)
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            if after_negotiation:
                writer.write(NEGOTIATE)
                assert await read(reader, len(NEGOTIATED)) == NEGOTIATED
            writer.write(bytes.fromhex(wire))
            assert await read_to_eof(reader) == bytes.fromhex(reply)
            writer.close()
        finally:
            await server.close()

    run(scenario())


def test_raw_tcp_one_byte_at_a_time() -> None:
    async def scenario() -> None:
        server = await start_tcp_server()
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            for byte in NEGOTIATE + bytes.fromhex("68 0001 00000100 00000002 6869"):
                writer.write(bytes([byte]))
                await writer.drain()
                await asyncio.sleep(0.001)
            expected = NEGOTIATED + bytes.fromhex("e8 0001 00 00000002 6869")
            assert await read(reader, len(expected)) == expected
            writer.close()
        finally:
            await server.close()

    run(scenario())


def test_server_heartbeat_pings_then_drops_a_silent_peer() -> None:
    async def scenario() -> None:
        server = await start_tcp_server(heartbeat_interval=0.1, heartbeat_timeout=0.5)
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(NEGOTIATE)
            assert await read(reader, len(NEGOTIATED)) == NEGOTIATED
            started = time.monotonic()
            rest = await read_to_eof(reader)
            elapsed = time.monotonic() - started
            assert set(rest) == {0} and len(rest) >= 3  # pings only
            assert 0.45 <= elapsed < 2.0
            writer.close()
        finally:
            await server.close()

    run(scenario())


def test_raw_websocket_text_and_binary_frames() -> None:
    async def scenario() -> None:
        server = await start_ws_server(path="/stmp")
        try:
            async with ws_connect(server.url, open_timeout=IO_TIMEOUT) as ws:
                async def exchange(*frames: bytes | str) -> bytes | str:
                    for frame in frames:
                        await ws.send(frame)
                    return await asyncio.wait_for(ws.recv(), IO_TIMEOUT)

                assert await exchange("1|5|0|0|01") == "3|5|0|0|01"
                assert await exchange("1|5|1|256|hello") == "3|5|1|0|hello"
                assert await exchange("1|5|2|256", b"\xff") == "3|5|2|0"
                assert await asyncio.wait_for(ws.recv(), IO_TIMEOUT) == b"\xff"
                assert await exchange("1|0|3|512") == "3|0|3|36"
                binary = await exchange(bytes.fromhex("68 0004 00000100 6869"))
                assert binary == bytes.fromhex("e8 0004 00 6869")
        finally:
            await server.close()

    run(scenario())


def test_websocket_wrong_path_is_refused() -> None:
    async def scenario() -> None:
        server = await start_ws_server(path="/stmp")
        try:
            with pytest.raises(InvalidStatus):
                await ws_connect(f"ws://127.0.0.1:{server.port}/other", open_timeout=IO_TIMEOUT)
        finally:
            await server.close()

    run(scenario())


@pytest.mark.parametrize(("transport", "scheme"), [("tcp", "tcp"), ("ws", "ws")])
def test_run_server_prints_its_url_and_stops_on_sigterm(transport: str, scheme: str) -> None:
    async def scenario() -> None:
        code = ("from reference_impl.stmp.server import run_server; "
                f"run_server({transport!r}, '127.0.0.1', 0)")
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", code, cwd=REPO, stdout=asyncio.subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        try:
            line = (await asyncio.wait_for(proc.stdout.readline(), 15)).decode()
            assert line.startswith(f"listening on {scheme}://127.0.0.1:") and line.endswith("\n")
            url = line.split()[-1]
            assert url.endswith("/") == (scheme == "ws")
            client = await connect(url, timeout=IO_TIMEOUT)
            assert (await client.request(0x100, 5, b"x")).payload == b"x"
            await client.close()
            proc.send_signal(signal.SIGTERM)
            assert await asyncio.wait_for(proc.wait(), 10) == 0
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()

    run(scenario(), timeout=40)


@pytest.mark.parametrize("start", [start_tcp_server, start_ws_server])
@pytest.mark.parametrize("testcase", ["negotiate", "echo"])
def test_client_testcases_pass_against_the_reference_server(start, testcase: str) -> None:
    async def scenario() -> int:
        server = await start()
        try:
            return await run_client_testcase(server.url, testcase)
        finally:
            await server.close()

    assert run(scenario()) == 0


def test_unknown_testcase_is_127_and_unreachable_is_1() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free_port = probe.getsockname()[1]
    assert run(run_client_testcase(f"tcp://127.0.0.1:{free_port}", "no-such-case")) == 127
    assert run(run_client_testcase(f"tcp://127.0.0.1:{free_port}", "echo")) == 1


async def _with_fake_server(behaviour: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]],
                            testcase: str) -> int:
    """A minimal hand-written STMP server: checks the client's negotiation bytes, then ``behaviour``."""
    seen: list[bytes] = []

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(await read(reader, len(NEGOTIATE)))
        writer.write(NEGOTIATED)
        await behaviour(reader, writer)
        writer.close()

    server = await asyncio.start_server(on_connect, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        result = await run_client_testcase(f"tcp://127.0.0.1:{port}", testcase)
    finally:
        server.close()
    assert seen == [NEGOTIATE]
    return result


def test_request_timeout_testcase_against_a_silent_server() -> None:
    received: list[bytes] = []

    async def swallow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        received.append(await read_to_eof(reader))

    assert run(_with_fake_server(swallow, "request-timeout")) == 0
    payload = b"no answer expected"
    assert received[0].startswith(bytes.fromhex("68 0001 00000100 00000012") + payload)


def test_heartbeat_testcase_sends_pings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client_module, "HEARTBEAT_IDLE", 1.0)
    monkeypatch.setattr(client_module, "HEARTBEAT_INTERVAL", 0.2)
    received: list[bytes] = []

    async def count_pings(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        received.append(await read_to_eof(reader))

    assert run(_with_fake_server(count_pings, "heartbeat")) == 0
    assert set(received[0]) == {0} and 3 <= len(received[0]) <= 6  # every 0.2 s for 1 s


@pytest.mark.slow
def test_id_wrap_testcase_over_tcp() -> None:
    async def scenario() -> int:
        server = await start_tcp_server()
        try:
            return await run_client_testcase(server.url, "id-wrap")
        finally:
            await server.close()

    assert run(scenario(), timeout=60) == 0
