"""asyncio STMP servers (TCP and WebSocket) running the conformance test service.

TCP carries the binary form with PS; WebSocket binary frames carry the binary
form without PS and text frames the text form.  Each connection runs a
server-role ``Connection`` and a ``ConformanceService``, ticked at least every
``TICK_INTERVAL``.  A payload over ``max_payload`` is answered 0x26 with the
offending message's ID (0 for a Notify) and the connection closed; on WebSocket
a frame larger than ``max_payload + FRAME_OVERHEAD`` is refused by the
WebSocket layer itself (close code 1009), before STMP sees it.

Options (keyword arguments): heartbeat_interval (5 s), heartbeat_timeout
(15 s), request_timeout (30 s), max_payload (16 MiB), versions ([(0, 1)]).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from websockets.asyncio.server import ServerConnection, serve
from websockets.http11 import Request as HttpRequest
from websockets.http11 import Response as HttpResponse

from reference_impl.common.serving import serve_until_stopped
from reference_impl.stmp.connection import Event
from reference_impl.stmp.service import ConformanceService
from reference_impl.stmp.transport import (
    CLOSE_TIMEOUT,
    FRAME_OVERHEAD,
    Carrier,
    Link,
    Options,
    StreamCarrier,
    WebSocketCarrier,
)


@dataclass
class RunningServer:
    port: int
    url: str
    _close: Callable[[], Awaitable[None]]

    async def close(self) -> None:
        await self._close()


async def _serve_connection(carrier: Carrier, framing: Literal["stream", "message"], options: Options) -> None:
    link = Link(options.connection("server", framing), carrier)
    service = ConformanceService(link.connection)

    def on_events(events: list[Event], now: float) -> None:
        for event in events:
            service.handle(event, now)

    await link.run(on_events, service.tick)


async def start_tcp_server(host: str = "127.0.0.1", port: int = 0, **options: Any) -> RunningServer:
    opts = Options(**options)
    handlers: set[asyncio.Task[None]] = set()

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        handlers.add(task)
        try:
            await _serve_connection(StreamCarrier(reader, writer), "stream", opts)
        except asyncio.CancelledError:
            pass  # close() cancels handlers; Python 3.11's stream callback reports a cancelled one as an error
        finally:
            handlers.discard(task)

    server = await asyncio.start_server(on_connect, host, port)
    bound = server.sockets[0].getsockname()[1]

    async def close() -> None:
        server.close()
        for task in list(handlers):  # Server.close() leaves accepted connections open on 3.11
            task.cancel()
        await asyncio.wait_for(asyncio.gather(*handlers, return_exceptions=True), CLOSE_TIMEOUT)
        await server.wait_closed()

    return RunningServer(bound, f"tcp://{host}:{bound}", close)


async def start_ws_server(host: str = "127.0.0.1", port: int = 0, path: str = "/", **options: Any) -> RunningServer:
    opts = Options(**options)

    def only_our_path(connection: ServerConnection, request: HttpRequest) -> HttpResponse | None:
        if urlsplit(request.path).path != path:
            return connection.respond(404, f"STMP is served at {path}\n")
        return None

    async def on_connect(websocket: ServerConnection) -> None:
        await _serve_connection(WebSocketCarrier(websocket), "message", opts)

    server = await serve(
        on_connect, host, port,
        process_request=only_our_path,
        max_size=opts.max_payload + FRAME_OVERHEAD,
        compression=None,
        ping_interval=None,  # STMP has its own heartbeat
        close_timeout=CLOSE_TIMEOUT,
    )
    bound = next(iter(server.sockets)).getsockname()[1]

    async def close() -> None:
        server.close()
        await asyncio.wait_for(server.wait_closed(), CLOSE_TIMEOUT * 2)

    return RunningServer(bound, f"ws://{host}:{bound}{path}", close)


_STARTERS = {"tcp": start_tcp_server, "ws": start_ws_server}


def run_server(transport: str, host: str, port: int, **options: Any) -> None:
    """Serve until SIGINT/SIGTERM; print one ``listening on URL`` line once accepting."""
    if transport not in _STARTERS:
        raise ValueError(f"unknown transport {transport!r}; use one of {sorted(_STARTERS)}")
    serve_until_stopped(lambda: _STARTERS[transport](host, port, **options))
