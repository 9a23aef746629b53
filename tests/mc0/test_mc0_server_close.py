"""Mc0Server.close() ends every task at once, the ticker included.

Regression (found by tests/mc0/test_mc0_stalled_connector.py, whose broker took
10 s to close): the ticker waited for its wake-up with ``asyncio.wait_for``,
which on Python 3.11 swallows a cancellation that arrives together with the
wake-up.  A message handled in the same step as close() was enough: close()
then waited its whole ``timeout`` and returned with the ticker still running.
"""

from __future__ import annotations

import asyncio
import time

from reference_impl.mc0.server import start_server


def test_close_ends_the_ticker_even_as_it_is_woken() -> None:
    async def main() -> None:
        server = await start_server(timeout=3.0)
        await asyncio.sleep(0.1)  # the ticker waits for a wake-up
        server._wake.set()  # as each message handled does, in the same step as close() cancels the ticker
        started = time.monotonic()
        await server.close()
        assert time.monotonic() - started < 1.0, "close() waited for a ticker that ignored its cancellation"
        assert not server._tasks, "close() left tasks running"

    asyncio.run(asyncio.wait_for(main(), 30))
