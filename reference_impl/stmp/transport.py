"""Thin asyncio glue between a sans-IO ``Connection`` and a TCP stream or a WebSocket.

A ``Link`` pumps one connection: every receive waits at most ``TICK_INTERVAL``
so ``tick(now)`` runs at least that often, and every write is bounded by
``WRITE_TIMEOUT``.  Events go to a callback; sends from other coroutines go
through ``Link.flush`` so frames never interleave.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from websockets.asyncio.connection import Connection as WebSocket
from websockets.exceptions import ConnectionClosed

from reference_impl.stmp.codec import DEFAULT_MAX_PAYLOAD
from reference_impl.stmp.connection import Connection, Event

TICK_INTERVAL = 0.05
WRITE_TIMEOUT = 10.0
CLOSE_TIMEOUT = 2.0
READ_CHUNK = 65536
# A WebSocket frame holds the payload plus at most this much header (binary:
# 8 bytes; text: "3|5|65535|255|" in decimal is shorter still).
FRAME_OVERHEAD = 64


@dataclass(frozen=True)
class Options:
    """Connection options shared by the server and the client."""

    heartbeat_interval: float | None = 5.0
    heartbeat_timeout: float | None = 15.0
    request_timeout: float = 30.0
    max_payload: int = DEFAULT_MAX_PAYLOAD
    versions: Sequence[tuple[int, int]] = ((0, 1),)
    text: bool = False  # client on WebSocket: speak the text form

    def connection(self, role: Literal["client", "server"], framing: Literal["stream", "message"]) -> Connection:
        return Connection(
            role,
            framing=framing,
            versions=self.versions,
            heartbeat_interval=self.heartbeat_interval,
            heartbeat_timeout=self.heartbeat_timeout,
            request_timeout=self.request_timeout,
            max_payload=self.max_payload,
            text=self.text and framing == "message",
        )


class Carrier(Protocol):
    async def receive(self, timeout: float) -> bytes | str | None:
        """The next chunk or frame; None once the peer is gone; TimeoutError after ``timeout``."""

    async def send(self, items: list[bytes | str]) -> None:
        """Write everything; ConnectionError if the peer is gone, TimeoutError after ``WRITE_TIMEOUT``."""

    async def close(self) -> None: ...


class StreamCarrier:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer

    async def receive(self, timeout: float) -> bytes | None:
        try:
            async with asyncio.timeout(timeout):  # not wait_for: on 3.11 that is a task per read
                data = await self._reader.read(READ_CHUNK)
        except ConnectionError:
            return None
        return data or None

    async def send(self, items: list[bytes | str]) -> None:
        assert all(isinstance(item, bytes) for item in items), "stream framing writes bytes only"
        self._writer.writelines(items)  # one write (a system call), not one per frame
        if self._writer.transport.get_write_buffer_size():  # the peer is not keeping up: a bounded wait
            async with asyncio.timeout(WRITE_TIMEOUT):
                await self._writer.drain()
        else:  # no timer for a write the socket took at once (a client's 65,537 requests)
            await self._writer.drain()  # returns at once; raises if the connection was lost

    async def close(self) -> None:
        self._writer.close()
        try:
            await asyncio.wait_for(self._writer.wait_closed(), CLOSE_TIMEOUT)
        except TimeoutError:
            # close() waits for unsent bytes to leave; a peer that stopped reading would keep the socket forever
            self._writer.transport.abort()
        except ConnectionError:
            pass  # the peer went first; nothing left to release


class WebSocketCarrier:
    def __init__(self, websocket: WebSocket) -> None:
        self._websocket = websocket

    async def receive(self, timeout: float) -> bytes | str | None:
        try:
            return await asyncio.wait_for(self._websocket.recv(), timeout)  # cancelling recv loses nothing
        except ConnectionClosed:
            return None

    async def send(self, items: list[bytes | str]) -> None:
        try:
            async with asyncio.timeout(WRITE_TIMEOUT):
                for item in items:
                    await self._websocket.send(item)
        except ConnectionClosed as exc:
            raise ConnectionError(str(exc)) from exc

    async def close(self) -> None:
        await self._websocket.close()  # bounded by the connection's close_timeout


class Link:
    def __init__(self, connection: Connection, carrier: Carrier) -> None:
        self.connection = connection
        self._carrier = carrier
        self._send_lock = asyncio.Lock()
        self._clock = asyncio.get_running_loop().time
        self._flush_due: asyncio.Task | None = None

    def now(self) -> float:
        return self._clock()

    async def flush(self) -> None:
        async with self._send_lock:
            items = self.connection.data_to_send()
            if not items:
                return
            try:
                await self._carrier.send(items)  # bounded by the carrier (WRITE_TIMEOUT)
            except (ConnectionError, TimeoutError):
                self.connection.connection_lost()

    def flush_soon(self) -> None:
        """Flush once the tasks ready now have run: the requests a batch of replies wakes leave in
        one write (a window of them in the id-wrap case), not a write and a drain each."""
        if self._flush_due is None:
            self._flush_due = asyncio.get_running_loop().create_task(self._flush_later())

    async def _flush_later(self) -> None:
        # a task's first step runs after the callbacks already queued (the other woken requesters);
        # what is queued once this one has started gets a flush of its own
        self._flush_due = None
        await self.flush()

    async def run(self, on_events: Callable[[list[Event], float], None],
                  on_tick: Callable[[float], None] | None = None) -> None:
        """Pump until the connection closes, then close the carrier."""
        connection = self.connection
        try:
            while not connection.should_close:
                try:
                    item = await self._carrier.receive(TICK_INTERVAL)
                except TimeoutError:
                    pass
                else:
                    if item is None:
                        connection.connection_lost()
                    elif isinstance(item, bytes) and connection.framing == "stream":
                        connection.receive_data(item, self.now())
                    else:
                        connection.receive_message(item, self.now())
                now = self.now()
                connection.tick(now)
                if on_tick is not None:
                    on_tick(now)
                on_events(connection.events(), now)
                await self.flush()
            on_events(connection.events(), self.now())
        finally:
            await self._carrier.close()
