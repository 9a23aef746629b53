"""The suite acting as server, for cases that test a client-role target."""

from __future__ import annotations

import asyncio

from websockets.asyncio.server import serve as ws_serve

from conformance.channels import ChannelError, TcpChannel, WsChannel
from conformance.wirelog import WireLog


class SuiteServer:
    def __init__(self, transport: str, log: WireLog) -> None:
        self.transport = transport
        self.log = log
        self.url = ""
        self._accepted: asyncio.Queue = asyncio.Queue()
        self._done = asyncio.Event()
        self._server = None

    @classmethod
    async def start(cls, transport: str, log: WireLog, ws_max_message: int) -> "SuiteServer":
        self = cls(transport, log)
        if transport == "ws":
            self._server = await ws_serve(self._on_ws, "127.0.0.1", 0, ping_interval=None,
                                          max_size=ws_max_message, compression=None)
            port = next(iter(self._server.sockets)).getsockname()[1]
            self.url = f"ws://127.0.0.1:{port}/"
        else:
            self._server = await asyncio.start_server(self._on_tcp, "127.0.0.1", 0)
            port = self._server.sockets[0].getsockname()[1]
            self.url = f"tcp://127.0.0.1:{port}"
        log.note(f"suite listening on {self.url}")
        return self

    async def _on_tcp(self, reader, writer) -> None:
        await self._accepted.put(TcpChannel.accepted(reader, writer, self.log))

    async def _on_ws(self, ws) -> None:
        await self._accepted.put(WsChannel.accepted(ws, self.log))
        await self._done.wait()  # the connection lives as long as the handler

    async def accept(self, timeout: float):
        try:
            return await asyncio.wait_for(self._accepted.get(), timeout)
        except asyncio.TimeoutError:
            raise ChannelError(f"the client did not connect to {self.url} within {timeout}s") from None

    async def arrived(self, grace: float):
        """A connection that came while the suite was not looking (its loop stalled), or None:
        ``grace`` lets the loop finish taking in what is already there, it is no new wait."""
        try:
            return await asyncio.wait_for(self._accepted.get(), grace)
        except asyncio.TimeoutError:
            return None

    async def close(self) -> None:
        self._done.set()
        self._server.close()
        try:
            await asyncio.wait_for(self._server.wait_closed(), 3)
        except asyncio.TimeoutError:
            pass
