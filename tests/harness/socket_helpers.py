"""Waiting on a server's own end of a connection (tests that a server lets a peer go)."""

from __future__ import annotations

import asyncio
import time


async def closed_within(writer: asyncio.StreamWriter, within: float) -> bool:
    """Whether the socket under ``writer`` (the server's end) is closed within ``within`` seconds."""
    sock = writer.get_extra_info("socket")
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if sock.fileno() < 0:
            return True
        await asyncio.sleep(0.05)
    return False
