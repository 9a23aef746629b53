"""The asyncio server and client over TCP on 127.0.0.1 (port 0)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, Awaitable, Callable

import pytest

from reference_impl.micromessage2.client import ConnectionEnded, connect, run_client_testcase
from reference_impl.micromessage2.codec import ErrorFrame, decode_frames
from reference_impl.micromessage2.events import ErrorReceived
from reference_impl.micromessage2.server import start_server
from reference_impl.micromessage2.service import push_payload

ROOT = Path(__file__).resolve().parents[2]


def with_server(test: Callable[[str], Awaitable[None]], timeout: float = 30.0, **options: Any) -> None:
    async def main() -> None:
        server = await start_server("127.0.0.1", 0, **options)
        try:
            await asyncio.wait_for(test(server.url), timeout)
        finally:
            await server.close()

    asyncio.run(main())


async def _raw_exchange(url: str, send: bytes, read_for: float) -> bytes:
    port = int(url.rsplit(":", 1)[1])
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(send)
    received = b""
    try:
        while chunk := await asyncio.wait_for(reader.read(65536), read_for):
            received += chunk
    finally:
        writer.close()
    return received


@pytest.mark.slow
def test_push_70000_with_batch_ack_across_the_wrap() -> None:
    async def run(url: str) -> None:
        client = await connect(url, required=["batch-ack:max-count=100"])
        await client.send("test/push", properties="count:70000;size:3;")
        seqs = []
        for k in range(70000):
            message = await client.receive()
            seqs.append(message.seq)
            if k % 1000 == 0:
                assert message.payload == push_payload(k, 3)
            if k % 50 == 49:
                await client.ack(message.seq)  # cumulative: acks the last 50, across the wrap too
        assert seqs[65533:65537] == [65534, 65535, 1, 2]
        assert seqs[-1] == 70000 - 65535
        assert client.conn.received_unacked == ()
        await client.close()

    with_server(run, timeout=50.0)


@pytest.mark.parametrize(("testcase", "expected"), [
    ("handshake", 0), ("required-missing", 0), ("ack-window", 0), ("no-such-case", 127),
])
def test_client_testcases_against_the_reference_server(testcase: str, expected: int) -> None:
    async def run(url: str) -> None:
        assert await run_client_testcase(url, testcase) == expected

    with_server(run)


def test_required_missing_fails_against_a_server_that_has_it() -> None:
    async def run(url: str) -> None:
        assert await run_client_testcase(url, "required-missing") == 1

    with_server(run, supported={"x-conformance-missing"})


def test_error_reaches_the_peer_before_the_close() -> None:
    hello = bytes([1, 0, 0, 0, 0, 9]) + b"x-missing" + bytes([0, 0])
    # Bytes the server never reads as frames: closing with them unread would send a reset instead.
    unread = bytes(200_000)

    async def run(url: str) -> None:
        received = await _raw_exchange(url, hello + unread, read_for=3.0)
        [frame] = decode_frames(received)  # then EOF: the server half-closed after its ERROR
        assert isinstance(frame, ErrorFrame)
        assert frame.reason.startswith("missing-required-extension")

    with_server(run)


def test_stalled_frame_gets_read_timeout() -> None:
    async def run(url: str) -> None:
        loop = asyncio.get_running_loop()
        start = loop.time()
        # a handshake that stops after its first three bytes
        received = await _raw_exchange(url, bytes([1, 0, 0]), read_for=5.0)
        assert 0.3 <= loop.time() - start < 4.0
        [frame] = decode_frames(received)
        assert isinstance(frame, ErrorFrame) and frame.reason.startswith("read-timeout")

    with_server(run, read_timeout=0.4)


def test_client_sees_server_error() -> None:
    async def run(url: str) -> None:
        client = await connect(url)
        await client.send("test/push", properties="count:x;")
        with pytest.raises(ConnectionEnded) as exc:
            await client.receive()
        assert isinstance(exc.value.event, ErrorReceived)

    with_server(run)


def test_pubsub_fan_out_over_tcp() -> None:
    async def run(url: str) -> None:
        subscribers = [await connect(url, required=["pubsub"]) for _ in range(2)]
        for client in subscribers:
            await client.subscribe("test/topic")
        publisher = await connect(url, required=["pubsub"])
        await publisher.send("test/echo", b"sync")
        assert (await publisher.receive()).payload == b"sync"  # the subscriptions are in by now
        await publisher.send("test/topic", b"news", "k:Tx;")
        for client in subscribers:
            message = await client.receive()
            assert (message.destination, message.properties, message.payload) == ("test/topic", "k:Tx;", b"news")
        for client in (*subscribers, publisher):
            await client.close()

    with_server(run)


def test_large_echo_is_split_and_joined() -> None:
    payload = bytes(range(256)) * 5000  # 1.28 MB: two fragments each way

    async def run(url: str) -> None:
        client = await connect(url)
        await client.send("test/echo", payload)
        message = await client.receive()
        assert message.payload == payload
        await client.close()

    with_server(run)


def test_run_server_prints_its_address_and_stops_on_sigterm() -> None:
    code = "from reference_impl.micromessage2.server import run_server; run_server('127.0.0.1', 0)"
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line.startswith("listening on tcp://127.0.0.1:")
        url = line.removeprefix("listening on ")

        async def handshake() -> int:
            return await run_client_testcase(url, "handshake")

        assert asyncio.run(asyncio.wait_for(handshake(), 10)) == 0
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
        assert proc.stdout.read() == ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
