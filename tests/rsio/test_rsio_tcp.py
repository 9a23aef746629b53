"""rsio over TCP on 127.0.0.1: the asyncio server and client, and raw-socket peers."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from reference_impl.rsio.client import TESTCASES, UNSUPPORTED, connect, run_client_testcase
from reference_impl.rsio.codec import (
    LONG_MAX,
    ClientHello,
    Goodbye,
    OnComplete,
    OnNext,
    ServerHello,
    StreamDecoder,
    Subscribe,
    Subscribed,
    encode_message,
)
from reference_impl.rsio.server import start_server
from reference_impl.rsio.service import pattern

ROOT = Path(__file__).resolve().parents[2]
WAIT = 5.0


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 20))


async def read_to_eof(reader: asyncio.StreamReader, timeout: float = WAIT) -> list:
    decoder = StreamDecoder()
    async with asyncio.timeout(timeout):
        while data := await reader.read(65536):
            decoder.feed(data)
    return list(decoder)


async def raw(server, data: bytes) -> list:
    """Send ``data`` from a hand-driven client; return every message until the server closes."""
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(data)
    try:
        return await read_to_eof(reader)
    finally:
        writer.close()


@pytest.mark.parametrize("testcase", sorted(TESTCASES))
def test_client_testcases_against_the_reference_server(testcase: str) -> None:
    async def main() -> int:
        server = await start_server(part_size=4096)
        try:
            return await run_client_testcase(server.url, testcase)
        finally:
            await server.close()
    assert run(main()) == 0


def test_unknown_testcase_is_127() -> None:
    # no server at all: the answer comes before any connection attempt
    assert run(run_client_testcase("tcp://127.0.0.1:9", "no-such-case")) == UNSUPPORTED == 127


def test_server_url_and_port() -> None:
    async def main() -> None:
        server = await start_server()
        try:
            assert server.port > 0 and server.url == f"tcp://127.0.0.1:{server.port}"
        finally:
            await server.close()
    run(main())


@pytest.mark.parametrize("wire,reason", [
    ("00", "unknown-type"),
    ("010100", "unsupported-version"),
    ("020000", "unexpected-hello"),
    ("0301ff", "invalid-utf8"),
    ("0401700100" "00", "unknown-type"),  # a subscribe, then garbage in the same segment
])
def test_server_answers_bad_input_with_goodbye_and_closes(wire: str, reason: str) -> None:
    async def main() -> list:
        server = await start_server()
        try:
            return await raw(server, bytes.fromhex(wire))
        finally:
            await server.close()
    assert run(main()) == [ServerHello(0, ()), Goodbye(reason)]


def test_orderly_close_initiated_by_the_peer() -> None:
    async def main() -> list:
        server = await start_server()
        try:
            hello = encode_message(ClientHello(0, ()))
            return await raw(server, hello + encode_message(Goodbye("bye")))
        finally:
            await server.close()
    assert run(main()) == [ServerHello(0, ()), Goodbye("")]


def test_one_byte_at_a_time() -> None:
    async def main() -> list:
        server = await start_server()
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        try:
            data = encode_message(ClientHello(0, ())) + encode_message(Subscribe("test/range/3", 1, 3))
            for byte in data:
                writer.write(bytes([byte]))
                await writer.drain()
                await asyncio.sleep(0.001)
            decoder = StreamDecoder()
            messages: list = []
            async with asyncio.timeout(WAIT):
                while not any(isinstance(m, OnComplete) for m in messages):
                    decoder.feed(await reader.read(65536))
                    messages += list(decoder)
            return messages
        finally:
            writer.close()
            await server.close()
    assert run(main()) == [ServerHello(0, ()), Subscribed(1, 0)] + [
        OnNext(1, k.to_bytes(8, "big")) for k in range(3)] + [OnComplete(1)]


def test_unbounded_stream_then_cancel_then_goodbye() -> None:
    async def main() -> None:
        server = await start_server()
        client = await connect(server.url)
        try:
            sid = client.subscribe(f"test/range/{LONG_MAX}", initial_demand=LONG_MAX)
            got = await client.elements(sid, 2000)
            assert got[1999] == (1999).to_bytes(8, "big")
            client.cancel(sid)
            assert await client.goodbye("done") is True
        finally:
            await server.close()
    run(main())


def test_client_reports_a_server_that_breaks_the_exchange() -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(encode_message(ServerHello(0, ())))
        await reader.read(65536)  # never answers, returns when the client gives up

    async def main() -> int:
        fake = await asyncio.start_server(silent, "127.0.0.1", 0)
        try:
            port = fake.sockets[0].getsockname()[1]
            return await run_client_testcase(f"tcp://127.0.0.1:{port}", "demand", timeout=0.3)
        finally:
            fake.close()
    assert run(main()) == 1


def test_client_reports_a_server_that_closes_mid_exchange() -> None:
    async def rude(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(encode_message(ServerHello(0, ())) + bytes.fromhex("00"))  # type 0
        await reader.read(65536)

    async def main() -> int:
        fake = await asyncio.start_server(rude, "127.0.0.1", 0)
        try:
            port = fake.sockets[0].getsockname()[1]
            return await run_client_testcase(f"tcp://127.0.0.1:{port}", "demand", timeout=2)
        finally:
            fake.close()
    assert run(main()) == 1


def test_client_publishes_to_a_server_that_subscribes() -> None:
    """Both roles: the peer acting as server subscribes to the client's test service."""
    received: list = []

    async def subscriber(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(encode_message(ServerHello(0, ())) + encode_message(Subscribe("test/fixed/3/2", 4, 3)))
        decoder = StreamDecoder(element_size=lambda sid: 2)
        async with asyncio.timeout(WAIT):
            while not any(isinstance(m, OnComplete) for m in received):
                decoder.feed(await reader.read(65536))
                received.extend(decoder)
        writer.write(encode_message(Goodbye("")))

    async def main() -> None:
        fake = await asyncio.start_server(subscriber, "127.0.0.1", 0)
        port = fake.sockets[0].getsockname()[1]
        client = await connect(f"tcp://127.0.0.1:{port}")
        try:
            await client.next_event(lambda e: isinstance(e, Goodbye))
        finally:
            await client.close()
            fake.close()
    run(main())
    assert received[0] == ClientHello(0, ())
    assert received[1] == Subscribed(4, 2)
    elements = [e for m in received[2:-1] for e in (m.elements if hasattr(m, "elements") else [m.element])]
    assert elements == [pattern(k, 2) for k in range(3)] and received[-1] == OnComplete(4)


def test_idle_connection_is_closed() -> None:
    async def main() -> list:
        server = await start_server(idle_timeout=0.2)
        try:
            return await raw(server, b"")
        finally:
            await server.close()
    assert run(main()) == [ServerHello(0, ())]


def test_close_drops_open_connections() -> None:
    async def main() -> list:
        server = await start_server()
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(encode_message(ClientHello(0, ())) + encode_message(Subscribe("test/never", 1)))
        await asyncio.sleep(0.1)
        await server.close()
        try:
            return await read_to_eof(reader)
        finally:
            writer.close()
    assert run(main()) == [ServerHello(0, ()), Subscribed(1, 0)]


def test_run_server_prints_one_line_and_stops_on_sigterm() -> None:
    code = "from reference_impl.rsio.server import run_server; run_server('127.0.0.1', 0)"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    try:
        line = proc.stdout.readline()
        assert line.startswith("listening on tcp://127.0.0.1:") and line.endswith("\n")
        port = int(line.rsplit(":", 1)[1])

        async def hello() -> list:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(encode_message(ClientHello(0, ())) + encode_message(Goodbye("")))
            try:
                return await read_to_eof(reader)
            finally:
                writer.close()
        assert run(hello()) == [ServerHello(0, ()), Goodbye("")]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=WAIT) == 0
        assert proc.stdout.read() == ""  # exactly one line
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
