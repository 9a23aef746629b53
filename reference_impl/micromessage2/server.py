"""asyncio Micromessage2 TCP server running the test service (docs/profiles/micromessage2.md "Test service (server role)").

Options (keyword arguments): those of ``Connection`` (identity, required,
optional, supported, version, read_timeout, max_frame, max_message,
fragment_size) plus ``linger`` (0.5 s), ``write_timeout`` (10 s) and
``max_pending`` (1024).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from reference_impl.common.serving import serve_until_stopped
from .connection import Connection, Role, State
from .service import DEFAULT_MAX_PENDING, Broker, TestService
from .transport import LINGER, WRITE_TIMEOUT, Link

DEFAULT_IDENTITY = "mm2-reference-server"


@dataclass
class RunningServer:
    port: int
    url: str
    _close: Callable[[], Awaitable[None]]

    async def close(self) -> None:
        await self._close()


async def _serve_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, broker: Broker, *,
                            linger: float, write_timeout: float, max_pending: int,
                            connection_options: dict[str, Any]) -> None:
    conn = Connection(Role.SERVER, **{"identity": DEFAULT_IDENTITY, **connection_options})
    wake = asyncio.Event()
    service = TestService(conn, broker, wake.set, max_pending=max_pending)
    link = Link(conn, reader, writer, write_timeout=write_timeout, linger=linger)
    try:
        while conn.state in (State.HANDSHAKE, State.OPEN):
            for event in await link.step(wake):
                service.handle(event)
            await link.flush()
            while service.pump():
                await link.flush()
            await link.flush()
    except (ConnectionError, TimeoutError):
        pass  # the peer went away or stopped reading: nothing left to tell it
    finally:
        service.close()
        await link.finish()


async def start_server(host: str = "127.0.0.1", port: int = 0, *, linger: float = LINGER,
                       write_timeout: float = WRITE_TIMEOUT, max_pending: int = DEFAULT_MAX_PENDING,
                       **connection_options: Any) -> RunningServer:
    broker = Broker()
    tasks: set[asyncio.Task] = set()

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        tasks.add(task)
        try:
            await _serve_connection(reader, writer, broker, linger=linger, write_timeout=write_timeout,
                                    max_pending=max_pending, connection_options=connection_options)
        except asyncio.CancelledError:
            pass  # server shutdown; Python 3.11's stream callback reports a cancelled handler as an error
        finally:
            tasks.discard(task)

    server = await asyncio.start_server(on_connect, host, port)
    bound = server.sockets[0].getsockname()[1]

    async def close() -> None:
        server.close()
        for task in list(tasks):
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await server.wait_closed()

    return RunningServer(bound, f"tcp://{host}:{bound}", close)


def run_server(host: str = "127.0.0.1", port: int = 0, **options: Any) -> None:
    """Serve until SIGINT/SIGTERM; prints ``listening on tcp://HOST:PORT`` once accepting."""
    serve_until_stopped(lambda: start_server(host, port, **options))
