"""What `conformance interop` needs of a protocol (conformance/images/interop.py PROTOCOLS), and the
case monitor most protocols use: one wire monitor per connection (:class:`ConnectionMonitors`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Awaitable, Callable


@dataclass(frozen=True)
class InteropProtocol:
    """What the runner needs of a protocol: its client-role cases, the in-process reference server
    and client, and a case's wire monitor (``connection()`` for each connection the proxy accepts,
    a monitor with feed(side, bytes), kept in ``connections``; ``violations`` with .side and str(),
    ``notes``, ``label``, ``frames``, ``messages``)."""
    cases: tuple[str, ...]
    start_reference_server: Callable[[], Awaitable[Any]]  # an object with .url and async .close()
    run_reference_client: Callable[[str, str, Callable[[str], None]], Awaitable[int]]
    monitor: Callable[[], Any]
    side_of: Callable[[str], Any]  # "client" / "server" -> the monitor's side
    # after a case, straight to the server: None when it kept what the client sent, else what is wrong
    server_check: Callable[[str, str], Awaitable[str | None]]


class ConnectionMonitors:
    """The monitors of one case, one per connection, numbered in accept order: a client that opens a
    second connection (a reconnect, a resumption) must not have its two byte streams judged as one.
    With more than one connection, each violation and note names its connection (``label`` N);
    with one, they read as that connection's monitor says them."""

    def __init__(self, factory: Callable[[], Any], label: str = "connection") -> None:
        self.factory, self.label = factory, label
        self.connections: list[Any] = []

    def connection(self) -> Any:
        monitor = self.factory()
        self.connections.append(monitor)
        return monitor

    def _named(self) -> list[tuple[str, Any]]:
        several = len(self.connections) > 1
        return [(f"{self.label} {i}" if several else "", m) for i, m in enumerate(self.connections, 1)]

    @property
    def violations(self) -> list:
        return [dataclasses.replace(v, detail=name + (": " if name and v.detail else "") + v.detail) if name else v
                for name, m in self._named() for v in m.violations]

    @property
    def notes(self) -> list[str]:
        return [f"{name}: {note}" if name else note for name, m in self._named() for note in getattr(m, "notes", ())]

    @property
    def frames(self) -> int:
        return sum(m.frames for m in self.connections)

    @property
    def messages(self) -> int | None:
        """Messages read, for monitors that join frames into messages (ZMTP); None for the others."""
        if not self.connections or not all(hasattr(m, "messages") for m in self.connections):
            return None
        return sum(m.messages for m in self.connections)
