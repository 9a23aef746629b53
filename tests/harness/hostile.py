"""Targets that misbehave on purpose: the suite must end every case with a grade."""

from __future__ import annotations

import asyncio

BEHAVIOURS = ("silent", "endless-pings", "endless-garbage", "announce-4gib", "drip", "reset-mid-frame")


class HostileServer:
    def __init__(self, behaviour: str) -> None:
        assert behaviour in BEHAVIOURS
        self.behaviour = behaviour
        self.bytes_sent = 0
        self.url = ""
        self._tasks: set[asyncio.Task] = set()

    async def start(self) -> "HostileServer":
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.url = f"tcp://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"
        return self

    async def close(self) -> None:
        self.server.close()
        for task in list(self._tasks):
            task.cancel()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._tasks.add(asyncio.current_task())
        drain = asyncio.ensure_future(self._swallow(reader))
        try:
            if self.behaviour == "silent":
                await asyncio.sleep(3600)
            elif self.behaviour in ("endless-pings", "endless-garbage"):
                block = (b"\x00" if self.behaviour == "endless-pings" else b"\xff") * 65536
                while True:
                    writer.write(block)
                    self.bytes_sent += len(block)
                    await writer.drain()
            elif self.behaviour == "announce-4gib":
                # a Response, ENCODING raw, ID 0, STATUS 0, PS = 0xFFFFFFFF, then a trickle
                writer.write(bytes.fromhex("e8 0000 00 ffffffff"))
                while True:
                    writer.write(b"\x01" * 1024)
                    self.bytes_sent += 1024
                    await writer.drain()
                    await asyncio.sleep(0.01)
            elif self.behaviour == "drip":
                for byte in bytes.fromhex("e8 0000 00 00000001 01"):
                    writer.write(bytes([byte]))
                    await writer.drain()
                    await asyncio.sleep(1.0)
                await asyncio.sleep(3600)
            elif self.behaviour == "reset-mid-frame":
                writer.write(bytes.fromhex("e8 0000 00 00000010 0102"))
                await writer.drain()
                writer.transport.abort()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            drain.cancel()
            writer.close()

    @staticmethod
    async def _swallow(reader: asyncio.StreamReader) -> None:
        while await reader.read(65536):
            pass
