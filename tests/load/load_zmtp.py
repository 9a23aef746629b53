"""A ZMTP client for the load tests: the sans-IO reference connection on an asyncio stream (not pyzmq)."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque

from load_helpers import ROUND_TRIP_BOUND

from reference_impl.zmtp.connection import Connection, ConnectionClosed, Message, Phase


class ZmtpPeer:
    """One ZMTP connection; ``inbox`` holds the messages received and not yet taken, as frame lists."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, zmtp: Connection) -> None:
        self.reader = reader
        self.writer = writer
        self.zmtp = zmtp
        self.inbox: deque[list[bytes]] = deque()

    @classmethod
    async def open(cls, port: int, zmtp: Connection, gate: asyncio.Semaphore | None = None):
        """Connect and complete the handshake; ``gate`` is held until the server has accepted the connection."""
        async with gate or contextlib.nullcontext():
            reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 10)
            peer = cls(reader, writer, zmtp)
            try:
                writer.write(zmtp.start(asyncio.get_running_loop().time()).data)
                await peer._receive(ROUND_TRIP_BOUND * 3)  # the server's first octets: out of the listen backlog
            except BaseException:
                writer.transport.abort()
                raise
        try:
            while zmtp.phase is not Phase.TRAFFIC:  # greeting, then the mechanism's commands and READY
                await peer._receive(ROUND_TRIP_BOUND * 3)
        except BaseException:
            writer.transport.abort()
            raise
        return peer

    async def _receive(self, timeout: float) -> None:
        data = await asyncio.wait_for(self.reader.read(65536), timeout)
        out = self.zmtp.receive_data(data, asyncio.get_running_loop().time())
        if out.data:
            self.writer.write(out.data)  # PONGs
        for event in out.events:
            if isinstance(event, Message):
                self.inbox.append(event.frames)
            elif isinstance(event, ConnectionClosed):
                raise ConnectionError(f"the server closed the connection: {event.code} {event.detail}")

    async def next_frames(self, timeout: float = ROUND_TRIP_BOUND * 3) -> list[bytes]:
        while not self.inbox:
            await self._receive(timeout)
        return self.inbox.popleft()

    def send_frames(self, frames: list[bytes]) -> None:
        self.writer.write(self.zmtp.send(Message(frames)).data)
