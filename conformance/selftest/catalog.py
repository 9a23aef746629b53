"""What a one-bug target is, and where each protocol's live."""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from conformance.registry import PROTOCOLS

#: protocol -> module with SERVERS and CLIENTS lists of OneBug, from the one registry (conformance/registry.py)
MODULES = {p.name: f"conformance.selftest.{p.selftest}" for p in PROTOCOLS if p.selftest}


@dataclass(frozen=True)
class OneBug:
    """One broken behaviour of one role.

    ``start(bug)`` starts a server (``bug=None``: its correct twin) and returns an object with
    ``url`` and ``async close()``; for a client, ``launcher(bug)`` returns the runner's client
    launcher ``(testcase, url) -> exit code``. ``cases`` are the cases meant to catch it: the
    self-test runs them (or every case of the role, with ``exhaustive``) and says which did."""

    protocol: str
    role: str  # "server" or "client"
    bug: str
    cases: tuple[str, ...]
    start: Callable[[str | None], Awaitable[Any]] | None = None
    launcher: Callable[[str | None], Callable[[str, str], Awaitable[int]]] | None = None
    transport: str = "tcp"
    params: dict[str, int] | None = None


def catalog(protocol: str) -> list[OneBug]:
    module = importlib.import_module(MODULES[protocol])
    return [*module.SERVERS, *getattr(module, "CLIENTS", [])]


def servers(protocol: str, pairs: list[tuple[str, str]], start, transport: str = "tcp") -> list[OneBug]:
    """One OneBug per bug from (bug, case) pairs, its cases in the order given."""
    cases: dict[str, list[str]] = {}
    for bug, case in pairs:
        cases.setdefault(bug, []).append(case)
    return [OneBug(protocol, "server", bug, tuple(ids), start=start, transport=transport) for bug, ids in cases.items()]


def clients(protocol: str, bug_to_case: dict[str, str], launcher, transport: str = "tcp") -> list[OneBug]:
    return [OneBug(protocol, "client", bug, (case,), launcher=launcher, transport=transport)
            for bug, case in bug_to_case.items()]
