"""The server lets go of a reader that stopped reading: its socket and unsent output do not outlive it.

Regression (found by tests/load/test_load_mtl.py): the server closed a data
connection with ``StreamWriter.close()``, which keeps the socket and every
unsent octet until the peer has read them, so a reader that never reads again
held a descriptor and its backlog in the server forever, after the heartbeat
timeout had dropped it.  Now a closed peer gets ``CLOSE_TIMEOUT`` to flush, then
is aborted, and one past ``max_buffered`` is aborted at once.  The server's
socket for it must close while the reader still does not read.
"""

from __future__ import annotations

import asyncio
import socket

from reference_impl.mtl import server as mtl_server
from reference_impl.mtl.client import MtlClient
from reference_impl.mtl.codec import Lease, Response, Summon, decode_data, encode_data
from reference_impl.mtl.server import MtlServer, Peer
from reference_impl.mtl.service import Broker, BrokerOptions
from reference_impl.zmtp.connection import Connection, Message, Phase
from reference_impl.zmtp.null import NullConfig
from socket_helpers import closed_within

PAYLOAD = b"x" * 65536


class StalledReader:
    """A DEALER with little receive buffer that summons the resource and never reads again."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.zmtp = Connection("DEALER", NullConfig())

    @classmethod
    async def summon(cls, port: int, lease: str) -> StalledReader:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)  # little room: the backlog builds in the server
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
        peer = cls(*await asyncio.open_connection(sock=sock))
        peer.writer.write(peer.zmtp.start(0.0).data)
        for command in (Lease(1, lease), Summon(2, "resource")):
            while peer.zmtp.phase is not Phase.TRAFFIC:
                await peer._receive()
            peer.writer.write(peer.zmtp.send(Message(encode_data(command))).data)
            assert await peer._receive() == [Response(command.seq, 200)]
        return peer

    async def _receive(self) -> list:
        out = self.zmtp.receive_data(await self.reader.read(65536), 0.0)
        self.writer.write(out.data)
        return [decode_data(event.frames) for event in out.events if isinstance(event, Message)]


async def _stall_a_reader(server: MtlServer) -> tuple[StalledReader, Peer]:
    """A stalled reader summoned on ``test`` (and the server's end of it), 16 MiB of Content written to it."""
    client = await MtlClient.connect(server.url)
    try:
        await client.login("alice", "wonderland")
        await client.select_profile("test")
        port, lease = await client.lease("reader", ["resource"])
        stalled = await StalledReader.summon(port, lease)
        [held] = [key for key, session in server.broker.sessions.items() if session.summoned]
        writer = await client.writer(["resource"])
        for _ in range(256):  # the socket buffers fill, then the server's backlog for the reader
            await writer.send_content(PAYLOAD, resource="resource")
    finally:
        await client.close()
    return stalled, held


def test_a_reader_dropped_by_the_heartbeat_timeout_is_let_go(monkeypatch) -> None:
    monkeypatch.setattr(mtl_server, "CLOSE_TIMEOUT", 0.2)

    async def main() -> None:
        server = await mtl_server.start_server(heartbeat_timeout=2.0)
        try:
            stalled, held = await _stall_a_reader(server)
            # silent since its Summon: dropped after 2 s, then CLOSE_TIMEOUT 0.2 s to flush what it cannot
            assert await closed_within(held.writer, 6.0), "the server still holds the socket of a reader it dropped"
            assert held not in server.broker.sessions and held not in server.peers
            stalled.writer.transport.abort()
        finally:
            await server.close()

    asyncio.run(asyncio.wait_for(main(), 30))


def test_a_reader_past_max_buffered_is_let_go_at_once() -> None:
    async def main() -> None:
        server = await MtlServer(Broker(BrokerOptions()), max_buffered=256 * 1024).listen()
        try:
            stalled, held = await _stall_a_reader(server)
            # the heartbeat timeout (15 s) is far off: only max_buffered can have dropped it
            assert await closed_within(held.writer, 3.0), "the server still holds the socket of a reader past max_buffered"
            assert held not in server.broker.sessions
            stalled.writer.transport.abort()
        finally:
            await server.close()

    asyncio.run(asyncio.wait_for(main(), 30))
