"""Thin asyncio glue between a sans-IO ``Connection`` and a TCP stream.

``Link.step`` waits at most ``TICK_INTERVAL`` for bytes (or a wake-up), so
``tick(now)`` runs at least that often and every read is bounded.  Writes are
bounded by ``write_timeout``.  ``finish`` closes the way docs/profiles/micromessage2.md asks:
after we sent ERROR, half-close and drain the input for ``linger`` seconds so
the peer reads the ERROR instead of a reset.
"""

from __future__ import annotations

import asyncio
import contextlib

from .connection import Connection, State
from .events import Event

TICK_INTERVAL = 0.1
WRITE_TIMEOUT = 10.0
LINGER = 0.5
READ_CHUNK = 65536


class Link:
    def __init__(self, conn: Connection, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *,
                 write_timeout: float = WRITE_TIMEOUT, linger: float = LINGER) -> None:
        self.conn = conn
        self._reader = reader
        self._writer = writer
        self._write_timeout = write_timeout
        self._linger = linger
        self._read: asyncio.Future[bytes] | None = None

    async def flush(self) -> None:
        data = self.conn.data_to_send()
        if data and not self._writer.is_closing():
            self._writer.write(data)
            await asyncio.wait_for(self._writer.drain(), self._write_timeout)

    def _pending_read(self) -> asyncio.Future[bytes]:
        if self._read is None:
            self._read = asyncio.ensure_future(self._reader.read(READ_CHUNK))
        return self._read

    def _take_read(self) -> bytes:
        assert self._read is not None
        try:
            data = self._read.result()
        except ConnectionError:
            data = b""
        self._read = None
        return data

    async def step(self, wake: asyncio.Event | None = None) -> list[Event]:
        """Wait for bytes, a wake-up or ``TICK_INTERVAL``; feed the connection; return its events."""
        read = self._pending_read()
        waiters: set[asyncio.Future] = {read}
        if wake is not None:
            waiters.add(asyncio.ensure_future(wake.wait()))
        try:
            await asyncio.wait(waiters, timeout=TICK_INTERVAL, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters - {read}:
                waiter.cancel()
        if wake is not None:
            wake.clear()
        now = asyncio.get_running_loop().time()
        events = self.conn.receive_data(self._take_read(), now) if read.done() else []
        return events + self.conn.tick(now)

    async def finish(self) -> None:
        with contextlib.suppress(ConnectionError, TimeoutError):
            await self.flush()
            if self.conn.state is State.CLOSING and self._writer.can_write_eof():
                self._writer.write_eof()
                await self._drain_input()
        if self._read is not None:
            self._read.cancel()
            self._read = None
        self._writer.close()
        try:
            await asyncio.wait_for(self._writer.wait_closed(), self._linger)
        except TimeoutError:
            # close() waits for unsent bytes to leave; a peer that stopped reading would keep the socket forever
            self._writer.transport.abort()
        except ConnectionError:
            pass

    async def _drain_input(self) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._linger
        while (remaining := deadline - loop.time()) > 0:
            read = self._pending_read()
            await asyncio.wait({read}, timeout=remaining)
            if not read.done() or not self._take_read():
                return
