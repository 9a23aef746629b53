"""asyncio plumbing shared by server.py and client.py: one Connection + TestService
over a StreamReader/StreamWriter pair.

Two tasks per session: a reader (every read bounded by ``idle_timeout``)
feeding the connection, and a pump sending the test service's elements with
``drain()`` in between (bounded by ``write_timeout``), so a slow peer slows
the publisher instead of filling memory.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from dataclasses import dataclass
from typing import Callable

from reference_impl.rsio.codec import DEFAULT_MAX_MESSAGE, Goodbye, Message
from reference_impl.rsio.connection import (
    DEFAULT_MAX_ELEMENT,
    DEFAULT_MAX_PARTIAL_ELEMENTS,
    Connection,
    ConnectionClosed,
    Event,
    Extension,
    Role,
    State,
)
from reference_impl.rsio.service import (
    DEFAULT_MAX_FIXED_SIZE,
    DEFAULT_PACK_BYTES,
    DEFAULT_PART_SIZE,
    TestService,
)

READ_CHUNK = 64 << 10


@dataclass(frozen=True)
class SessionOptions:
    """Everything ``start_server(**options)`` and ``Client.connect(**options)`` accept."""

    extensions: tuple[Extension, ...] = ()
    max_message: int = DEFAULT_MAX_MESSAGE
    max_element: int = DEFAULT_MAX_ELEMENT
    max_partial_elements: int = DEFAULT_MAX_PARTIAL_ELEMENTS
    part_size: int = DEFAULT_PART_SIZE
    pack_bytes: int = DEFAULT_PACK_BYTES
    max_fixed_size: int = DEFAULT_MAX_FIXED_SIZE
    max_large: int = DEFAULT_MAX_ELEMENT
    idle_timeout: float = 300.0  # a read waiting longer ends the connection
    write_timeout: float = 10.0
    close_timeout: float = 2.0
    pump_batch: int = 64  # messages between two drain() calls


class SessionClosed(Exception):
    """The connection ended before the awaited event arrived."""


class Session:
    def __init__(self, role: Role, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 options: SessionOptions, *, keep_events: bool = False) -> None:
        """``keep_events``: queue events for :meth:`wait_for` (clients; a server keeps none)."""
        self.options = options
        self.keep_events = keep_events
        self.conn = Connection(role, extensions=options.extensions, max_message=options.max_message,
                               max_element=options.max_element,
                               max_partial_elements=options.max_partial_elements)
        self.service = TestService(self.conn, part_size=options.part_size,
                                   pack_bytes=options.pack_bytes,
                                   max_fixed_size=options.max_fixed_size,
                                   max_large=options.max_large)
        self._reader = reader
        self._writer = writer
        self._events: deque[Event] = deque()
        self._changed = asyncio.Event()
        self._work = asyncio.Event()
        self.closed: ConnectionClosed | None = None
        self._flush()

    async def run(self) -> None:
        """Serve until the connection ends; re-raise a crash of either task."""
        tasks = [asyncio.create_task(self._read_loop()), asyncio.create_task(self._pump_loop())]
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self._lost()
            await self._close_writer()
        for task in done:
            if not task.cancelled() and task.exception() is not None:
                raise task.exception()

    def send(self, message: Message) -> None:
        self._dispatch(self.conn.send(message))
        self._flush()

    async def wait_for(self, match: Callable[[Event], bool], timeout: float | None) -> Event:
        """Remove and return the first queued event ``match`` accepts (needs keep_events).

        ``timeout`` None only for a caller that bounds the wait itself.
        """
        async with asyncio.timeout(timeout):
            while True:
                for event in self._events:
                    if match(event):
                        self._events.remove(event)
                        return event
                if self.closed is not None:
                    raise SessionClosed(self.closed.reason)
                self._changed.clear()
                await self._changed.wait()

    async def goodbye(self, reason: str = "") -> bool:
        """Orderly close: goodbye, wait (bounded) for the peer's, close.  True if orderly."""
        if self.conn.state is State.OPEN:
            self.send(Goodbye(reason))
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.options.close_timeout):
                while self.closed is None:
                    self._changed.clear()
                    await self._changed.wait()
        self._lost()
        await self._close_writer()
        return self.closed.orderly

    async def abort(self) -> None:
        self._lost()
        await self._close_writer()

    def _dispatch(self, events: list[Event]) -> None:
        for event in events:
            self.service.handle(event)
            if isinstance(event, ConnectionClosed):
                self.closed = event
            if self.keep_events:
                self._events.append(event)
        if events:
            self._changed.set()
            self._work.set()

    def _flush(self) -> None:
        data = self.conn.data_to_send()
        if data and not self._writer.is_closing():
            self._writer.write(data)
        if self.conn.should_close and not self._writer.is_closing():
            self._writer.close()  # the transport writes what is buffered first

    def _lost(self) -> None:
        self._dispatch(self.conn.connection_lost())

    async def _close_writer(self) -> None:
        if not self._writer.is_closing():
            self._writer.close()
        try:
            async with asyncio.timeout(self.options.close_timeout):
                await self._writer.wait_closed()
        except TimeoutError:
            # close() waits for unsent bytes to leave; a peer that stopped reading would keep the socket forever
            self._writer.transport.abort()
        except OSError:
            pass

    async def _read_loop(self) -> None:
        while not self.conn.should_close:
            try:
                async with asyncio.timeout(self.options.idle_timeout):
                    data = await self._reader.read(READ_CHUNK)
            except (OSError, TimeoutError):
                data = b""
            if not data:
                return
            self._dispatch(self.conn.receive_data(data))
            self._flush()

    async def _pump_loop(self) -> None:
        while True:
            await self._work.wait()
            self._work.clear()
            while self.service.has_work and self.conn.state is State.OPEN:
                self.service.pump(self.options.pump_batch)
                self._flush()
                try:
                    async with asyncio.timeout(self.options.write_timeout):
                        await self._writer.drain()
                except (OSError, TimeoutError):
                    return  # run() then treats the connection as lost
                await asyncio.sleep(0)  # drain() does not yield while the socket takes it all
