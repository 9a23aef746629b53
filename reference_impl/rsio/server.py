"""rsio/0 TCP server running the test service on every connection.

    server = await start_server()            # 127.0.0.1, a free port
    ... server.url ...                       # "tcp://127.0.0.1:PORT"
    await server.close()

``run_server(host, port, **options)`` is the blocking form for a command line:
it prints ``listening on tcp://HOST:PORT`` once accepting and runs until
SIGINT/SIGTERM.  ``options`` are the fields of :class:`SessionOptions`.
"""

from __future__ import annotations

import asyncio
import contextlib

from reference_impl.common.serving import serve_until_stopped
from reference_impl.rsio.connection import Role
from reference_impl.rsio.session import Session, SessionOptions


class RsioServer:
    """A listening server; made by :func:`start_server`."""

    def __init__(self, options: SessionOptions) -> None:
        self._options = options
        self._sessions: set[Session] = set()
        self._server: asyncio.Server | None = None
        self.port = 0
        self.url = ""

    async def _listen(self, host: str, port: int) -> None:
        self._server = await asyncio.start_server(self._handle, host, port)
        host, self.port = self._server.sockets[0].getsockname()[:2]
        self.url = f"tcp://{host}:{self.port}"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        session = Session(Role.SERVER, reader, writer, self._options)
        self._sessions.add(session)
        try:
            await session.run()
        finally:
            self._sessions.discard(session)

    async def close(self) -> None:
        """Stop accepting and drop every connection (no goodbye: bounded and immediate)."""
        self._server.close()
        for session in list(self._sessions):
            await session.abort()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self._options.close_timeout):
                await self._server.wait_closed()


async def start_server(host: str = "127.0.0.1", port: int = 0, **options) -> RsioServer:
    server = RsioServer(SessionOptions(**options))
    await server._listen(host, port)
    return server


def run_server(host: str = "127.0.0.1", port: int = 0, **options) -> None:
    serve_until_stopped(lambda: start_server(host, port, **options))
