"""`run --pcap`: a channel's close drains what the peer still sends into the capture, in the order
it happened, bounded in time and bytes, and changes nothing a case can read.

The peers here are small asyncio servers whose behaviour each test spells out, so the events the
capture must hold follow from what the peer does, not from the suite's output."""

from __future__ import annotations

import asyncio
import time

import pytest
from websockets.asyncio.server import serve as ws_serve

from conformance.channels import READ_CHUNK, TcpChannel, WsChannel
from conformance.trace import capture
from conformance.wirelog import WireLog


@pytest.fixture
def recorder():
    rec = capture.start()
    yield rec
    capture.stop()


def _events(rec: capture.Recorder) -> list[tuple[str, bytes | str]]:
    [conn] = rec.conns
    return [(side, data) for _, side, data in conn.events]


async def _serve(handler):
    server = await asyncio.start_server(handler, "127.0.0.1", 0)
    return server, f"tcp://127.0.0.1:{server.sockets[0].getsockname()[1]}"


async def _answer_then_close(reader, writer):
    """Answers the first bytes and closes at once: its answer and FIN precede the suite's close."""
    await reader.read(100)
    writer.write(b"answer")
    writer.close()


async def _answer_on_eof(reader, writer):
    """Reads until the suite's FIN, then says goodbye and closes: seen only if the suite half-closes."""
    while await reader.read(100):
        pass
    writer.write(b"goodbye")
    writer.close()


async def _silent(reader, writer):
    await asyncio.sleep(5)  # neither answers nor ends
    writer.close()


async def _flood(reader, writer):
    try:
        while True:
            writer.write(b"x" * 65536)
            await writer.drain()
    except OSError:
        pass


async def _exchange(handler, wait_for_peer: float = 0.2):
    """Opens a channel to a peer, sends b"hi", gives the peer time, closes; then reads on."""
    server, url = await _serve(handler)
    try:
        channel = await TcpChannel.open(url, WireLog(), 2)
        await channel.send(b"hi")
        await asyncio.sleep(wait_for_peer)
        started = time.monotonic()
        await channel.close()
        took = time.monotonic() - started
        after = [await channel.recv(1), await channel.recv(1)]
        return took, after
    finally:
        server.close()


def test_what_arrived_before_the_close_comes_before_the_suites_fin(recorder):
    _, after = asyncio.run(_exchange(_answer_then_close))
    assert _events(recorder) == [("client", b"hi"), ("server", b"answer"), ("server", "FIN"), ("client", "FIN")]
    assert after == [b"answer", None]  # a read after the close gets what a run without --pcap gets


def test_a_peer_that_answers_the_suites_fin_is_captured_after_it(recorder):
    asyncio.run(_exchange(_answer_on_eof))
    assert _events(recorder) == [("client", b"hi"), ("client", "FIN"), ("server", b"goodbye"), ("server", "FIN")]


def test_the_drain_reads_for_the_capture_only():
    # without a recorder the close neither half-closes nor waits: the goodbye is never read
    _, after = asyncio.run(_exchange(_answer_on_eof))
    assert after == [None, None]


def test_a_silent_peer_costs_the_deadline_at_most(recorder):
    took, after = asyncio.run(_exchange(_silent, wait_for_peer=0))
    assert capture.DRAIN_S - 0.05 <= took < capture.DRAIN_S + 1
    assert _events(recorder) == [("client", b"hi"), ("client", "FIN")]  # no FIN the peer never sent
    assert after == [None, None]


def test_a_flooding_peer_is_cut_by_the_byte_cap(recorder):
    took, _ = asyncio.run(_exchange(_flood, wait_for_peer=0))
    assert took < capture.DRAIN_S + 1
    events = _events(recorder)
    assert sum(len(d) for s, d in events if s == "server") <= capture.DRAIN_BYTES + READ_CHUNK
    assert ("client", "FIN") in events and ("server", "FIN") not in events


def test_without_a_recorder_a_channel_has_no_tap():
    async def run():
        server, url = await _serve(_silent)
        try:
            channel = await TcpChannel.open(url, WireLog(), 2)
            assert channel._tap is None
            await channel.close()
        finally:
            server.close()
    asyncio.run(run())


def test_a_websocket_close_captures_messages_not_yet_read(recorder):
    async def handler(ws):
        await ws.recv()
        await ws.send("answer")
        await ws.wait_closed()

    async def run():
        async with ws_serve(handler, "127.0.0.1", 0) as server:
            port = next(iter(server.sockets)).getsockname()[1]
            channel = await WsChannel.open(f"ws://127.0.0.1:{port}/", WireLog(), 2, 1 << 20)
            await channel.send("hi")
            await asyncio.sleep(0.2)
            await channel.close()
            return [await channel.recv(1), await channel.recv(1)]

    after = asyncio.run(run())
    [conn] = recorder.conns
    events = [(side, data) for _, side, data in conn.events[2:]]  # after the upgrade's request and response
    assert [e[0] for e in events] == ["client", "server", "client", "server"]
    assert events[1][1].endswith(b"answer") and events[2:] == [("client", "FIN"), ("server", "FIN")]
    assert after == ["answer", None]
