"""Run a reference server until SIGINT/SIGTERM (used by `conformance serve`)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from typing import Awaitable, Callable, Protocol


class RunningServer(Protocol):
    url: str

    async def close(self) -> None: ...


def serve_until_stopped(start: Callable[[], Awaitable[RunningServer]]) -> None:
    """Start the server, print one ``listening on URL`` line once it accepts, stop on a signal."""

    async def main() -> None:
        server = await start()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        print(f"listening on {server.url}", flush=True)
        try:
            await stop.wait()
        finally:
            await server.close()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())



