"""The fault proxy really delivers bytes one by one, and cuts where asked."""

from __future__ import annotations

import asyncio
import socket
import struct

from conformance.faultproxy import FaultProxy


async def _reads_seen_by_server(options: dict, payload: bytes) -> list[bytes]:
    reads: list[bytes] = []
    done = asyncio.Event()

    async def serve(reader, writer):
        while chunk := await reader.read(65536):
            reads.append(chunk)
        done.set()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    proxy = await FaultProxy.start(f"tcp://127.0.0.1:{port}", options)
    reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
    writer.write(payload)
    await writer.drain()
    writer.write_eof()
    await asyncio.wait_for(done.wait(), 10)
    writer.close()
    await proxy.close()
    server.close()
    return reads


async def _until_closed(proxy: FaultProxy, server: asyncio.base_events.Server, payload: bytes) -> tuple[bytes, float]:
    """Send ``payload`` through the proxy and read until the proxy closes the client's side: (what
    came, seconds it took); then close everything."""
    reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
    writer.write(payload)
    await writer.drain()
    started = asyncio.get_running_loop().time()
    answer = await asyncio.wait_for(reader.read(), 10)
    waited = asyncio.get_running_loop().time() - started
    writer.close()
    await proxy.close()
    server.close()
    return answer, waited


def test_one_byte_at_a_time() -> None:
    reads = asyncio.run(_reads_seen_by_server({"chunk": 1, "delay_ms": 2}, b"0123456789"))
    assert b"".join(reads) == b"0123456789"
    assert all(len(r) == 1 for r in reads)


def test_random_chunks_keep_every_byte_in_order() -> None:
    payload = bytes(range(256)) * 4
    reads = asyncio.run(_reads_seen_by_server({"chunk": "random", "max_chunk": 5, "seed": 1, "delay_ms": 1}, payload))
    assert b"".join(reads) == payload
    assert max(len(r) for r in reads) <= 5 and len(reads) >= len(payload) // 5


def test_cut_mid_stream() -> None:
    reads = asyncio.run(_reads_seen_by_server({"cut_after_bytes": 7}, b"0123456789"))
    assert b"".join(reads) == b"0123456"


def test_tap_sees_what_each_side_sent_before_any_fault_and_each_close() -> None:
    async def main() -> list[tuple[str, bytes]]:
        async def echo(reader, writer):
            while chunk := await reader.read(65536):
                writer.write(chunk.upper())
                await writer.drain()
            writer.close()

        server = await asyncio.start_server(echo, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        proxy = await FaultProxy.start(f"tcp://127.0.0.1:{port}", {"chunk": 1, "direction": "both"})
        seen: list[tuple[str, bytes]] = []
        proxy.tap = lambda direction, data: seen.append((direction, data))
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
        writer.write(b"ping")
        await writer.drain()
        writer.write_eof()
        answer = await asyncio.wait_for(reader.read(), 10)
        writer.close()
        await proxy.close()
        server.close()
        assert answer == b"PING"
        return seen

    seen = asyncio.run(main())
    # the bytes as each side sent them (the fault re-chunks only what it forwards); b"" marks a close
    sent = b"".join(data for direction, data in seen if direction == "to-target")
    received = b"".join(data for direction, data in seen if direction == "from-target")
    assert sent == b"ping" and received == b"PING"
    assert [d for d, data in seen if data == b""] == ["to-target", "from-target"]


def test_a_monitor_that_breaks_closes_both_sides_and_says_why() -> None:
    """A tap that raises on what it is fed must not leave the client waiting for bytes that will
    never be forwarded: both sides are closed at once and the wire log says why."""
    from conformance.wirelog import WireLog

    async def main() -> tuple[bytes, float, str]:
        async def silent(reader, writer):
            await reader.read()  # never answers: the client could only time out
            writer.close()

        server = await asyncio.start_server(silent, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        log = WireLog()
        proxy = await FaultProxy.start(f"tcp://127.0.0.1:{port}", {}, log)

        def broken(direction, data):
            if data:
                raise ValueError("monitor bug")
        proxy.tap = broken
        answer, waited = await _until_closed(proxy, server, b"ping")
        return answer, waited, log.render()

    answer, waited, text = asyncio.run(main())
    assert answer == b"" and waited < 5  # the close came, not the 10 s deadline
    assert "monitor failed" in text and "ValueError: monitor bug" in text


def test_each_connection_gets_its_own_rewrite() -> None:
    """A rewrite that holds back a byte (a frame cut across reads) must give it back on its own
    connection: two connections at once, each through the rewrite made for it."""

    async def main() -> list[bytes]:
        received: list[bytes] = []

        async def collect(reader, writer):
            received.append(await reader.read())
            writer.close()

        def holding():
            held = bytearray()

            async def rewrite(direction: str, data: bytes) -> bytes:
                if direction != "to-target":
                    return data
                if not data:
                    return bytes(held)
                out = bytes(held) + data[:-1]
                held[:] = data[-1:]
                return out
            return rewrite

        server = await asyncio.start_server(collect, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        proxy = await FaultProxy.start(f"tcp://127.0.0.1:{port}", {})
        proxy.rewrite_for_connection = holding
        (_, a), (_, b) = [await asyncio.open_connection("127.0.0.1", proxy.port) for _ in range(2)]
        for writer, data in ((a, b"AAA"), (b, b"BBB"), (a, b"aaa"), (b, b"bbb")):
            writer.write(data)
            await writer.drain()
            await asyncio.sleep(0.05)  # each write its own read at the proxy
        for writer in (a, b):
            writer.write_eof()
        for _ in range(100):
            if len(received) == 2:
                break
            await asyncio.sleep(0.05)
        a.close(), b.close()
        await proxy.close()
        server.close()
        return received

    assert sorted(asyncio.run(main())) == [b"AAAaaa", b"BBBbbb"]


def test_a_target_that_resets_closes_the_clients_side_too() -> None:
    """A target that answers, then closes with bytes unread (a reset), must not leave the suite's
    side of the proxy open: a case expecting the close would wait out its deadline and FAIL a
    correct target."""

    async def main() -> tuple[bytes, float]:
        async def answer_then_reset(reader, writer):
            await reader.readexactly(4)
            writer.write(b"bye")
            await writer.drain()
            await asyncio.sleep(0.05)
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()

        server = await asyncio.start_server(answer_then_reset, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        proxy = await FaultProxy.start(f"tcp://127.0.0.1:{port}", {"chunk": 1, "delay_ms": 1})
        return await _until_closed(proxy, server, b"ping" + b"x" * 400)  # still trickling to the target when it resets

    answer, waited = asyncio.run(main())
    assert waited < 5  # the close came, not the 10 s deadline
    assert answer == b"bye"  # and what the target said before its reset came first
