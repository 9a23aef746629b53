"""Load: 500 concurrent rsio clients against the reference server (see load_helpers).

Each client says hello and, in rounds, subscribes a new stream to
``test/range/ELEMENTS`` with a small initial demand, requests more in steps as
elements arrive, and checks that it gets elements 0..ELEMENTS-1 exactly once,
in order, never beyond its demand (the client connection enforces that), then
onComplete.  The stalled reader subscribes to an endless stream of 64 KiB
elements with unbounded demand and stops reading.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque

import pytest
from load_helpers import ROUND_TRIP_BOUND, LoadResult, close_writer, raise_nofile, run_load

from reference_impl.rsio.codec import LONG_MAX, OnComplete, Request, ServerHello, Subscribe, Subscribed
from reference_impl.rsio.connection import Connection, Element, Event, Role

ELEMENTS = 20
STEP = 5  # initial demand, and each request


class Peer:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.conn = Connection(Role.CLIENT)
        self.events: deque[Event] = deque()
        self.flush()  # clientHello

    @classmethod
    async def open(cls, port: int) -> Peer:
        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 10)
        return cls(reader, writer)

    def flush(self) -> None:
        if data := self.conn.data_to_send():
            self.writer.write(data)

    def send(self, message) -> None:
        self.conn.send(message)
        self.flush()

    async def next_event(self, timeout: float = ROUND_TRIP_BOUND * 3) -> Event:
        while not self.events:
            data = await asyncio.wait_for(self.reader.read(65536), timeout)
            if not data:
                raise ConnectionError("the server closed the connection")
            self.events.extend(self.conn.receive_data(data))
            self.flush()
        return self.events.popleft()

    async def stream(self, sid: int) -> list[float]:
        """One whole test/range stream on subscriber ``sid``; returns the latency of each demand round trip."""
        self.send(Subscribe(f"test/range/{ELEMENTS}", sid, STEP))
        await self.writer.drain()
        asked = time.monotonic()
        latencies: list[float] = []
        received: list[bytes] = []
        demanded = STEP
        while True:
            event = await self.next_event()
            if isinstance(event, Element):
                assert event.subscriber == sid, f"element for {event.subscriber} on {sid}'s round"
                received.append(event.data)
                if len(received) == demanded:  # the last element of what we asked for
                    latencies.append(time.monotonic() - asked)
                    if demanded < ELEMENTS:
                        self.send(Request(sid, STEP))
                        asked = time.monotonic()
                        demanded += STEP
            elif isinstance(event, OnComplete):
                assert event.subscriber == sid
                break
            elif not (isinstance(event, Subscribed) and event.subscriber == sid or isinstance(event, ServerHello)):
                raise AssertionError(f"unexpected {event}")
        assert received == [k.to_bytes(8, "big") for k in range(ELEMENTS)], f"stream {sid}: {received}"
        return latencies


def _client(port: int):
    async def client(i: int, gate: asyncio.Semaphore, deadline: float, result: LoadResult) -> None:
        async with gate:
            peer = await Peer.open(port)
        try:
            sid = 1
            while True:  # at least one stream, however late this client connected
                for latency in await peer.stream(sid):
                    result.add_round_trip(latency, STEP)
                sid += 1
                if time.monotonic() >= deadline:
                    break
            assert peer.conn.peer_hello is not None
        finally:
            await close_writer(peer.writer)

    return client


async def _stall(port: int) -> asyncio.StreamWriter:
    """64 KiB elements (they fill the socket buffers at once, unlike test/range's 8 bytes), unbounded demand."""
    peer = await Peer.open(port)
    peer.send(Subscribe("test/fixed/1000000000000/65536", 1, LONG_MAX))
    await peer.writer.drain()
    return peer.writer


@pytest.mark.slow
def test_rsio_500_clients_with_a_stalled_reader() -> None:
    raise_nofile()
    print(asyncio.run(asyncio.wait_for(run_load("rsio", _client, _stall), 90)))
