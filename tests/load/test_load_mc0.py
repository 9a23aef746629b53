"""Load: 500 concurrent mc0 connectors against the reference broker (see load_helpers).

Every connector is a DEALER speaking ZMTP 3.1 with CURVE (the test key pairs),
driven by the sans-IO reference_impl.zmtp connection over a plain asyncio
stream.  Each completes its handshake and says CONNECT (VERSION 0.3, TTL) and
SUB to a topic of its own; once all have (see Start), each PUTs a round of
PIPELINE messages every PACE seconds to that topic, with an ID and a body
unique to it, and checks that every PUT is delivered back exactly once as a
MESSAGE on that topic with that body, before the OK carrying its ID, and that
every OK arrives exactly once.  DISCONNECT, whose OK must be the only thing
left to arrive, ends the session.  The stalled reader subscribes to its own
topic and to every load connector's topic (so each load PUT is also delivered
to it), then floods PUTs of 64 KiB to its own topic and never reads: the
broker's handler for it blocks on its write, and its reads stop, until its
write timeout (10 s).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Sequence

import pytest
from load_helpers import CLIENTS, ROUND_TRIP_BOUND, LoadResult, close_writer, raise_nofile, run_load
from load_zmtp import ZmtpPeer

from reference_impl.mc0 import codec, testkeys
from reference_impl.mc0.codec import (
    CONNECT, DISCONNECT, ID, MESSAGE, NOOP, OK, PUT, SUB, TOPIC, TTL, VERSION, Mc0Message,
)
from reference_impl.zmtp.connection import Connection
from reference_impl.zmtp.curve import CurveClientConfig

#: Each connector PUTs PIPELINE messages every PACE seconds, the rounds of all spread evenly over PACE.  CURVE
#: boxes every frame: a PUT, its MESSAGE, the copy to the stalled reader and the OK cost the broker about 1 ms
#: of CPU, a handshake about 2 ms (measured).  With other jobs on the 2 cores, connectors that PUT as fast as
#: they could (a round trip queues behind a PUT of every other connector) waited up to 1.8 s for a round trip
#: with one PUT in flight each, and up to 7 s with four.
PIPELINE = 1
PACE = 2.0
#: The broker NOOPs a connector quiet for half its TTL and drops the subscriptions of one quiet for all of it:
#: a connector waiting for the others to connect, or for its next round, is quiet for seconds.
TTL_MS = b"60000"


def _topic(client: int) -> bytes:
    return f"load/{client}".encode()


class Peer(ZmtpPeer):
    """One connector: a CURVE DEALER (the test key pairs)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, zmtp: Connection) -> None:
        super().__init__(reader, writer, zmtp)
        self._ids = itertools.count(1)

    @classmethod
    async def connect(cls, port: int, gate: asyncio.Semaphore | None = None) -> Peer:
        return await cls.open(port, Connection("DEALER", CurveClientConfig(testkeys.SERVER.public, testkeys.CLIENT)),
                              gate)

    async def next(self, timeout: float = ROUND_TRIP_BOUND * 3) -> Mc0Message:
        """The next mc0 message other than a NOOP heartbeat."""
        while True:
            msg = codec.decode_message(await self.next_frames(timeout))
            if msg.verb != NOOP:
                return msg

    def send(self, verb: bytes, headers: Sequence[tuple[bytes, bytes]] = (),
             positional: Sequence[bytes] | None = None, *, with_id: bool = True) -> bytes | None:
        """Queue one request; returns the ID it carries."""
        request_id = str(next(self._ids)).encode() if with_id else None
        msg = codec.message(verb, ([(ID, request_id)] if request_id else []) + list(headers), positional)
        self.send_frames(codec.encode_message(msg))
        return request_id

    async def request(self, verb: bytes, headers: Sequence[tuple[bytes, bytes]] = (),
                      positional: Sequence[bytes] | None = None) -> None:
        """One request; nothing but its OK may come back."""
        request_id = self.send(verb, headers, positional)
        await self.writer.drain()
        reply = await self.next()
        assert reply == codec.ok(request_id), f"{verb.decode()}: {reply}"


async def _puts(peer: Peer, topic: bytes, bodies: list[bytes]) -> None:
    """PUT each body with an ID; each is delivered exactly once, then its ID is confirmed exactly once."""
    sent = {peer.send(PUT, [(TOPIC, topic)], [body]): body for body in bodies}  # ID -> body
    await peer.writer.drain()
    undelivered = set(bodies)
    while undelivered or sent:
        msg = await peer.next()
        if msg.verb == MESSAGE:
            body = msg.positional[0] if msg.positional else None
            assert body in undelivered, f"a delivery not sent, or delivered twice: {msg}"
            assert msg == codec.delivery(topic, [], [body]), f"delivery {msg}"
            undelivered.discard(body)
        elif msg.verb == OK:
            body = sent.pop(msg.id, None)
            assert body is not None, f"an OK for an unknown or already confirmed ID: {msg}"
            assert body not in undelivered, f"OK for PUT {body!r} before its delivery"
        else:
            raise AssertionError(f"unexpected {msg}")


class Start:
    """Rounds begin once every connector is connected and subscribed (or has failed to).

    A CURVE handshake and CONNECT/SUB take five round trips, which queue
    behind the traffic of the connectors already busy: without this, the last
    of 500 connectors was subscribed only after 14 s with other jobs on the 2
    cores (measured), past the broker's write timeout (10 s) that the stalled
    reader must outlast; with it, after 1.5 to 6 s.  Every connector's task
    registers in its first step, which asyncio.gather runs for all of them
    before any network event is handled, so ``clients`` is complete before
    anyone arrives.
    """

    def __init__(self) -> None:
        self.clients = 0
        self.arrived = 0
        self.go = asyncio.Event()

    def arrive(self) -> None:
        self.arrived += 1
        if self.arrived == self.clients:
            self.go.set()


def _client(port: int):
    start = Start()

    async def client(i: int, gate: asyncio.Semaphore, deadline: float, result: LoadResult) -> None:
        start.clients += 1
        try:
            peer = await Peer.connect(port, gate)
        except BaseException:
            start.arrive()
            raise
        try:
            topic = _topic(i)
            try:
                await peer.request(CONNECT, [(VERSION, codec.CURRENT_VERSION), (TTL, TTL_MS)])
                await peer.request(SUB, [], [topic])
            finally:
                start.arrive()
            await asyncio.wait_for(start.go.wait(), 30)
            n = 0
            next_round = time.monotonic() + PACE * (i % 100) / 100  # the connectors' rounds spread over PACE
            while True:  # at least one round, however late this connector connected
                await asyncio.sleep(next_round - time.monotonic())
                started = time.monotonic()
                await _puts(peer, topic, [f"{i}:{n + k}".encode() for k in range(PIPELINE)])
                result.add_round_trip(time.monotonic() - started, PIPELINE)
                n += PIPELINE
                next_round = started + PACE
                if next_round >= deadline:  # no other round would start before the deadline
                    break
            await peer.request(DISCONNECT)  # only its OK may come back: anything left over would arrive first
        finally:
            await close_writer(peer.writer)

    return client


async def _stall(port: int) -> asyncio.StreamWriter:
    """Subscribed to its own topic and every load topic, it floods its own topic and never reads."""
    peer = await Peer.connect(port)
    await peer.request(CONNECT, [(VERSION, codec.CURRENT_VERSION)])
    await peer.request(SUB, [], [b"stall", *(_topic(i) for i in range(CLIENTS))])
    payload = b"x" * 65536
    for _ in range(2000):
        peer.send(PUT, [(TOPIC, b"stall")], [payload], with_id=False)
        try:
            await asyncio.wait_for(peer.writer.drain(), 0.5)
        except TimeoutError:
            return peer.writer  # the broker stopped reading us: its handler waits to write
    raise AssertionError("the broker kept reading a connector that never reads")


@pytest.mark.slow
def test_mc0_500_clients_with_a_stalled_reader() -> None:
    raise_nofile()
    print(asyncio.run(asyncio.wait_for(run_load("mc0", _client, _stall), 90)))
