"""What `conformance interop` needs of a protocol (conformance/images/interop.py PROTOCOLS)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Awaitable, Callable


@dataclass(frozen=True)
class InteropProtocol:
    """What the runner needs of a protocol: its client-role cases, the in-process reference server
    and client, and a wire monitor (feed(side, bytes), .violations with .side and str())."""
    cases: tuple[str, ...]
    start_reference_server: Callable[[], Awaitable[Any]]  # an object with .url and async .close()
    run_reference_client: Callable[[str, str, Callable[[str], None]], Awaitable[int]]
    monitor: Callable[[], Any]
    side_of: Callable[[str], Any]  # "client" / "server" -> the monitor's side
    # after a case, straight to the server: None when it kept what the client sent, else what is wrong
    server_check: Callable[[str, str], Awaitable[str | None]]
