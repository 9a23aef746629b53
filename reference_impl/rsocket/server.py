"""RSocket servers on TCP and WebSocket, running the test service on every connection.

    server = await start_server()              # TCP, 127.0.0.1, a free port
    server = await start_server(transport="websocket")
    ... server.url ...                         # tcp://HOST:PORT or ws://HOST:PORT/
    await server.close()

All connections of one server share one :class:`SharedState` (the kept fnf and
METADATA_PUSH values) and one :class:`SessionStore` (resumable sessions by token;
``resume=False``: resumption refused).  The connection's lifetime check runs every
``tick_interval`` seconds.  A RESUME hands its transport to the stored session (its
connection and its service); the transport that served it before lets go (``epoch``).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed as WsClosed

from reference_impl.common.serving import serve_until_stopped
from reference_impl.rsocket.codec import MAX_FRAME
from reference_impl.rsocket.connection import Connection, Event, Resumed, Role, Transport
from reference_impl.rsocket.resume import SessionStore
from reference_impl.rsocket.service import SharedState, TestService

READ_SIZE = 64 << 10


class RSocketServer:
    def __init__(self, transport: Transport, tick_interval: float, options: dict[str, Any],
                 sessions: SessionStore | None = None) -> None:
        self.transport = transport
        self.tick_interval = tick_interval
        self.options = options
        self.shared = SharedState()
        self.sessions = sessions
        self.url = ""
        self._tasks: set[asyncio.Task] = set()
        self._close_listener = None

    def _connection(self) -> Connection:
        conn = Connection(Role.SERVER, self.transport, now=time.monotonic(), sessions=self.sessions,
                          **self.options)
        conn.app = TestService(conn, self.shared)
        return conn

    @staticmethod
    def _handle(conn: Connection, events: list[Event]) -> Connection:
        """Run the events on the connection's service; after a RESUME, the resumed session
        (fed what this transport had buffered beyond the RESUME) serves from now on."""
        for event in events:
            if isinstance(event, Resumed):
                session = event.session
                leftover = conn.take_buffered()
                session.app.handle(session.receive_data(leftover, time.monotonic()) if leftover else [])
                return session
        conn.app.handle(events)
        return conn

    async def _tcp(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = self._connection()
        epoch = conn.epoch
        self._tasks.add(asyncio.current_task())
        try:
            while not conn.should_close and conn.epoch == epoch:
                try:
                    data = await asyncio.wait_for(reader.read(READ_SIZE), self.tick_interval)
                except TimeoutError:
                    if conn.epoch != epoch:
                        break
                    conn.app.handle(conn.tick(time.monotonic()))
                else:
                    if conn.epoch != epoch:  # a RESUME on another transport took the session
                        break
                    if not data:
                        conn.app.handle(conn.connection_lost())
                        break
                    conn = self._handle(conn, conn.receive_data(data, time.monotonic()))
                    epoch = conn.epoch
                writer.write(conn.data_to_send())
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self._tasks.discard(asyncio.current_task())
            writer.close()
            # close() may cancel this task while it waits here: the connection is ending either way
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await writer.wait_closed()

    async def _ws(self, websocket: ServerConnection) -> None:
        conn = self._connection()
        epoch = conn.epoch
        try:
            while not conn.should_close and conn.epoch == epoch:
                try:
                    message = await asyncio.wait_for(websocket.recv(), self.tick_interval)
                except TimeoutError:
                    if conn.epoch != epoch:
                        break
                    conn.app.handle(conn.tick(time.monotonic()))
                else:
                    if conn.epoch != epoch:  # a RESUME on another transport took the session
                        break
                    conn = self._handle(conn, conn.receive_message(message, time.monotonic()))
                    epoch = conn.epoch
                for frame in conn.messages_to_send():
                    await websocket.send(frame)
        except WsClosed:
            if conn.epoch == epoch:
                conn.app.handle(conn.connection_lost())
        finally:
            await websocket.close()

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await self._close_listener()


async def start_server(host: str = "127.0.0.1", port: int = 0, *, transport: str = "tcp",
                       tick_interval: float = 0.1, resume: bool = True, resume_keep_ms: int = 60_000,
                       **options: Any) -> RSocketServer:
    """``options`` are Connection keywords (fragment_size, max_frame, max_reassembly, resume_bytes)."""
    sessions = SessionStore(keep_ms=resume_keep_ms) if resume else None
    server = RSocketServer(Transport(transport), tick_interval, options, sessions)
    if server.transport is Transport.TCP:
        listener = await asyncio.start_server(server._tcp, host, port)
        bound_host, bound_port = listener.sockets[0].getsockname()[:2]
        server.url = f"tcp://{bound_host}:{bound_port}"

        async def close_tcp() -> None:
            listener.close()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(2):
                    await listener.wait_closed()
        server._close_listener = close_tcp
    else:
        listener = await serve(server._ws, host, port, max_size=MAX_FRAME)
        bound_host, bound_port = next(iter(listener.sockets)).getsockname()[:2]
        server.url = f"ws://{bound_host}:{bound_port}/"

        async def close_ws() -> None:
            listener.close()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(2):
                    await listener.wait_closed()
        server._close_listener = close_ws
    return server


def run_server(host: str = "127.0.0.1", port: int = 0, **options: Any) -> None:
    serve_until_stopped(lambda: start_server(host, port, **options))
