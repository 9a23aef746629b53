"""Load: 500 concurrent STMP clients over TCP against the reference server (see load_helpers).

Each client negotiates, then in rounds pipelines PIPELINE echo requests (0x100)
and one notify echo (0x101) with payloads unique to it, and checks that every
response and notify comes back exactly once with its payload.  A final echo
proves nothing else was still on its way.  The stalled reader floods echo
requests with large payloads and never reads: the server's handler for it
blocks on its write, and its reads stop.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque

import pytest
from load_helpers import ROUND_TRIP_BOUND, LoadResult, close_writer, raise_nofile, run_load

from reference_impl.stmp import codec
from reference_impl.stmp.codec import Encoding, Notify, Ping, Request, Response, Status

ECHO, NOTIFY_ECHO = 0x100, 0x101
PIPELINE = 4
HELLO = codec.encode_binary(Request(0, 0, Encoding.RAW, b"\x01"), with_ps=True)


class Peer:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.decoder = codec.StreamDecoder()
        self.inbox: deque[codec.Message] = deque()

    @classmethod
    async def negotiate(cls, port: int) -> Peer:
        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 10)
        peer = cls(reader, writer)
        writer.write(HELLO)
        reply = await peer.next()
        assert reply == Response(0, Status.OK, Encoding.RAW, b"\x01"), f"negotiation: {reply}"
        return peer

    def send(self, message: codec.Message) -> None:
        self.writer.write(codec.encode_binary(message, with_ps=True))

    async def next(self, timeout: float = ROUND_TRIP_BOUND * 3) -> codec.Message:
        """The next message other than a heartbeat Ping."""
        while True:
            while not self.inbox:
                data = await asyncio.wait_for(self.reader.read(65536), timeout)
                if not data:
                    raise ConnectionError("the server closed the connection")
                self.inbox.extend(self.decoder.feed(data))
            message = self.inbox.popleft()
            if not isinstance(message, Ping):
                return message


async def _round(peer: Peer, client: int, seq: int) -> int:
    expected: dict[int, bytes] = {}
    for k in range(PIPELINE):
        request_id = (seq + k) % 0xFFFF + 1
        expected[request_id] = f"{client}:{seq + k}".encode()
        peer.send(Request(request_id, ECHO, Encoding.RAW, expected[request_id]))
    notifies = {f"n{client}:{seq}".encode()}
    peer.send(Notify(NOTIFY_ECHO, Encoding.JSON, next(iter(notifies))))
    await peer.writer.drain()
    while expected or notifies:
        message = await peer.next()
        if isinstance(message, Response):
            payload = expected.pop(message.id, None)
            assert payload is not None, f"response to an unknown or already answered ID: {message}"
            assert message == Response(message.id, Status.OK, Encoding.RAW, payload), f"echo {message}"
        elif isinstance(message, Notify):
            assert message.action == NOTIFY_ECHO and message.payload in notifies, f"unexpected {message}"
            notifies.discard(message.payload)
        else:
            raise AssertionError(f"unexpected {message}")
    return PIPELINE + 1


def _client(port: int):
    async def client(i: int, gate: asyncio.Semaphore, deadline: float, result: LoadResult) -> None:
        async with gate:
            peer = await Peer.negotiate(port)
        try:
            seq = 0
            while True:  # at least one round, however late this client connected
                started = time.monotonic()
                messages = await _round(peer, i, seq)
                result.add_round_trip(time.monotonic() - started, messages)
                seq += PIPELINE
                if time.monotonic() >= deadline:
                    break
            peer.send(Request(0xFFFF, ECHO, Encoding.RAW, b"last"))  # anything left over would arrive first
            await peer.writer.drain()
            last = await peer.next()
            assert last == Response(0xFFFF, Status.OK, Encoding.RAW, b"last"), f"after the rounds: {last}"
        finally:
            await close_writer(peer.writer)

    return client


async def _stall(port: int) -> asyncio.StreamWriter:
    """A client that floods echo requests and never reads, until its own writes block."""
    peer = await Peer.negotiate(port)
    payload = b"x" * 65536
    for n in range(2000):
        peer.send(Request(n % 0xFFFF + 1, ECHO, Encoding.RAW, payload))
        try:
            await asyncio.wait_for(peer.writer.drain(), 0.5)
        except TimeoutError:
            return peer.writer  # the server stopped reading us: its handler waits to write
    raise AssertionError("the server kept reading a client that never reads")


@pytest.mark.slow
def test_stmp_tcp_500_clients_with_a_stalled_reader() -> None:
    raise_nofile()
    print(asyncio.run(asyncio.wait_for(run_load("stmp", _client, _stall), 90)))
