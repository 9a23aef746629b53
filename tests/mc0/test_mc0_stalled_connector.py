"""The broker lets go of a connector that stopped reading: its socket and unsent output do not outlive it.

Regression (found by tests/load/test_load_mc0.py): the broker ended such a
connection with ``StreamWriter.close()``, which keeps the socket and every
unsent octet until the peer has read them, so a connector that never reads
again held a descriptor and its backlog in the broker forever.  Both ways the
broker gives up on a connector now abort it: its write timeout (after a
bounded attempt to flush, ``CLOSE_TIMEOUT``) and ``max_backlog`` (at once).
The broker's socket for it must close while the connector still does not read.
"""

from __future__ import annotations

import asyncio
import socket

from reference_impl.mc0 import codec, server as mc0_server, testkeys
from reference_impl.mc0.codec import ID, OK, PUT, SUB, TOPIC
from reference_impl.mc0.server import start_server
from reference_impl.zmtp.connection import Connection, Message, Phase
from reference_impl.zmtp.curve import CurveClientConfig
from socket_helpers import closed_within

TCP_ESTABLISHED = 1
PAYLOAD = b"x" * 65536


class Connector:
    """A CURVE DEALER on a plain stream, read only when asked to."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.zmtp = Connection("DEALER", CurveClientConfig(testkeys.SERVER.public, testkeys.CLIENT))
        self.inbox: list[list[bytes]] = []

    @classmethod
    async def connect(cls, port: int) -> Connector:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)  # little room: the backlog builds in the broker
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
        reader, writer = await asyncio.open_connection(sock=sock)
        peer = cls(reader, writer)
        writer.write(peer.zmtp.start(0.0).data)
        while peer.zmtp.phase is not Phase.TRAFFIC:
            await peer.receive()
        return peer

    async def receive(self) -> None:
        out = self.zmtp.receive_data(await self.reader.read(65536), 0.0)
        self.writer.write(out.data)
        self.inbox += [event.frames for event in out.events if isinstance(event, Message)]

    def send(self, msg: codec.Mc0Message) -> None:
        self.writer.write(self.zmtp.send(Message(codec.encode_message(msg))).data)

    async def subscribe(self, topic: bytes) -> None:
        self.send(codec.message(SUB, [(ID, b"1")], [topic]))
        while not self.inbox:
            await self.receive()
        assert codec.decode_message(self.inbox.pop(0)) == codec.Mc0Message(OK, ((ID, b"1"),))

    def established(self) -> bool:
        """Whether our end still sees the connection up (a reset closes our socket when we were writing)."""
        sock = self.writer.get_extra_info("socket")
        return sock.fileno() >= 0 and sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)[0] == TCP_ESTABLISHED


def test_a_connector_past_the_write_timeout_is_let_go(monkeypatch) -> None:
    monkeypatch.setattr(mc0_server, "CLOSE_TIMEOUT", 0.2)

    async def main() -> None:
        server = await start_server(timeout=0.5)
        try:
            peer = await Connector.connect(server.port)
            await peer.subscribe(b"self")
            [held] = [p.writer for p in server._peers.values()]  # the broker's end
            for _ in range(1000):  # PUTs to itself, never read: the broker's handler blocks on its write
                peer.send(codec.message(PUT, [(TOPIC, b"self")], [PAYLOAD]))
                try:
                    await asyncio.wait_for(peer.writer.drain(), 0.5)
                except TimeoutError:
                    break
                except (ConnectionResetError, BrokenPipeError):
                    break  # under load the broker's write timeout can fire while we still write: it let go
            else:
                raise AssertionError("the broker kept reading a connector that never reads")
            # write timeout 0.5 s, then CLOSE_TIMEOUT 0.2 s to flush what it cannot: then it must let go
            assert await closed_within(held, 5.0), "the broker still holds the socket of a connector it dropped"
            assert not server.broker.peers
            peer.writer.transport.abort()
        finally:
            await server.close()

    asyncio.run(asyncio.wait_for(main(), 30))


def test_a_subscriber_past_max_backlog_is_let_go_at_once() -> None:
    async def main() -> None:
        server = await start_server(max_backlog=256 * 1024)
        try:
            subscriber = await Connector.connect(server.port)
            await subscriber.subscribe(b"t")  # then never reads again
            [held] = [p.writer for p in server._peers.values()]  # the broker's end
            publisher = await Connector.connect(server.port)
            for _ in range(256):  # 16 MiB to the subscriber: the socket buffers fill, then its backlog in the broker
                publisher.send(codec.message(PUT, [(TOPIC, b"t")], [PAYLOAD]))
                await publisher.writer.drain()
            # the write timeout (10 s) is far off: only max_backlog can have dropped it
            assert await closed_within(held, 3.0), "the broker still holds the socket of a subscriber past max_backlog"
            assert set(server.broker.peers) == {2} and not server.broker.subscribers
            assert publisher.established()
            for peer in (subscriber, publisher):
                peer.writer.transport.abort()
        finally:
            await server.close()

    asyncio.run(asyncio.wait_for(main(), 30))
