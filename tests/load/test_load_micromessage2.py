"""Load: 500 concurrent Micromessage2 clients against the reference server (see load_helpers).

Each client negotiates ``batch-ack:max-count=8``, then in rounds sends
PIPELINE SENDs to ``test/echo`` with payloads unique to it, and checks that
every SEND is acked and every echo arrives exactly once with its payload;
it acks the echoes after each round.  A final echo proves nothing else was
still on its way.  The stalled reader asks ``test/push`` for far more than
it will ever read, without acks (no window), and stops reading.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque

import pytest
from load_helpers import ROUND_TRIP_BOUND, LoadResult, close_writer, raise_nofile, run_load

from reference_impl.micromessage2.connection import Connection, Role
from reference_impl.micromessage2.events import AckReceived, Event, HandshakeComplete, MessageReceived

PIPELINE = 4
WINDOW = 8
ECHO = "test/echo"


class Peer:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, conn: Connection) -> None:
        self.reader = reader
        self.writer = writer
        self.conn = conn
        self.events: deque[Event] = deque()
        self.sent = 0
        self.acked = 0

    @classmethod
    async def open(cls, port: int, optional: list[str]) -> Peer:
        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 10)
        peer = cls(reader, writer, Connection(Role.CLIENT, identity="load", optional=optional))
        peer.flush()  # our hello
        event = await peer.next_event()  # the server's hello; our final message goes out with it
        assert isinstance(event, HandshakeComplete), f"handshake: {event}"
        return peer

    def flush(self) -> None:
        if data := self.conn.data_to_send():
            self.writer.write(data)

    async def next_event(self, timeout: float = ROUND_TRIP_BOUND * 3) -> Event:
        while not self.events:
            data = await asyncio.wait_for(self.reader.read(65536), timeout)
            if not data:
                raise ConnectionError("the server closed the connection")
            self.events.extend(self.conn.receive_data(data, asyncio.get_running_loop().time()))
            self.flush()
        return self.events.popleft()

    async def echo(self, payloads: list[bytes]) -> None:
        """Send them all, then wait for every ack and every echo, exactly once each."""
        expected = set(payloads)
        for payload in payloads:
            self.conn.send_message(ECHO, payload)
            self.sent += 1
        self.flush()
        await self.writer.drain()
        while expected or self.acked < self.sent:
            event = await self.next_event()
            if isinstance(event, AckReceived):
                self.acked += event.acked
                assert self.acked <= self.sent, f"acked {self.acked} of {self.sent} sent"
            elif isinstance(event, MessageReceived):
                assert event.destination == ECHO and event.payload in expected, f"unexpected {event}"
                expected.discard(event.payload)
            else:
                raise AssertionError(f"unexpected {event}")
        self.conn.send_ack()  # every echo received so far
        self.flush()


def _client(port: int):
    async def client(i: int, gate: asyncio.Semaphore, deadline: float, result: LoadResult) -> None:
        async with gate:
            peer = await Peer.open(port, [f"batch-ack:max-count={WINDOW}"])
        try:
            assert peer.conn.negotiated is not None and peer.conn.negotiated.window == WINDOW
            n = 0
            while True:  # at least one round, however late this client connected
                started = time.monotonic()
                await peer.echo([f"{i}:{n + k}".encode() for k in range(PIPELINE)])
                result.add_round_trip(time.monotonic() - started, PIPELINE)
                n += PIPELINE
                if time.monotonic() >= deadline:
                    break
            await peer.echo([b"last"])  # anything left over would arrive first and fail the check
        finally:
            await close_writer(peer.writer)

    return client


async def _stall(port: int) -> asyncio.StreamWriter:
    """No acks, so no window: ask for 400 MB of pushed messages and stop reading."""
    peer = await Peer.open(port, [])
    peer.conn.send_message("test/push", b"", "count:100000;size:4096;")
    peer.flush()
    await peer.writer.drain()
    return peer.writer


@pytest.mark.slow
def test_micromessage2_500_clients_with_a_stalled_reader() -> None:
    raise_nofile()
    print(asyncio.run(asyncio.wait_for(run_load("micromessage2", _client, _stall), 90)))
