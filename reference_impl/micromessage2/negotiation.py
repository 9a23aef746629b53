"""The three-message handshake as pure functions over extension lists (docs/profiles/micromessage2.md).

client hello:  the client's required + optional
server hello:  required = what the server requires of the client; optional = the
               client's optional extensions the server supports, in the client's
               order, then the server's own suggestions not already listed
client final:  required = client's required then server's required not already
               listed; optional = the optional extensions activated, client-offered
               order then server-offered order
Extension IDs are 1-based over the final message's required then optional list.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from reference_impl.common.errors import CodecError

from .extensions import Extension, batch_ack_window


@dataclass(frozen=True)
class Negotiated:
    version: tuple[int, int]
    peer_identity: str
    required: tuple[Extension, ...]
    optional: tuple[Extension, ...]
    window: int | None  # messages a sender may have unacked; None when acks are off

    @property
    def extensions(self) -> tuple[Extension, ...]:
        return self.required + self.optional

    def by_id(self, ext_id: int) -> Extension | None:
        return self.extensions[ext_id - 1] if 1 <= ext_id <= len(self.extensions) else None

    def id_of(self, name: str) -> int | None:
        for i, ext in enumerate(self.extensions, start=1):
            if ext.name == name:
                return i
        return None

    def active(self, name: str) -> bool:
        return self.id_of(name) is not None


def common_version(ours: tuple[int, int], theirs: tuple[int, int]) -> tuple[int, int] | None:
    """The lowest of the two versions, or None when the majors differ (never compatible)."""
    return min(ours, theirs) if ours[0] == theirs[0] else None


def ack_window(extensions: Iterable[Extension]) -> int | None:
    """``ack`` = 1, ``batch-ack`` = max-count (default 10), both = 1, neither = None."""
    by_name = {e.name: e for e in extensions}
    window = batch_ack_window(by_name["batch-ack"]) if "batch-ack" in by_name else None
    return 1 if "ack" in by_name else window


def negotiate(version: tuple[int, int], peer_identity: str,
              required: Sequence[Extension], optional: Sequence[Extension]) -> Negotiated:
    """The outcome of a final handshake message."""
    extensions = (*required, *optional)
    names = [e.name for e in extensions]
    for name in names:
        if names.count(name) > 1:
            raise CodecError("duplicate-extension", f"{name!r} is both required and optional")
    return Negotiated(version, peer_identity, tuple(required), tuple(optional), ack_window(extensions))


def missing(required: Iterable[Extension], supported: frozenset[str]) -> list[str]:
    return [e.name for e in required if e.name not in supported]


def server_hello_lists(client_required: Sequence[Extension], client_optional: Sequence[Extension],
                       own_required: Sequence[Extension], own_optional: Sequence[Extension],
                       supported: frozenset[str]) -> tuple[list[Extension], list[Extension]]:
    taken = {e.name for e in (*client_required, *own_required)}
    optional = []
    for ext in (*[e for e in client_optional if e.name in supported], *own_optional):
        if ext.name not in taken:
            optional.append(ext)
            taken.add(ext.name)
    return list(own_required), optional


def client_final_lists(own_required: Sequence[Extension], own_optional: Sequence[Extension],
                       server_required: Sequence[Extension], server_optional: Sequence[Extension],
                       supported: frozenset[str]) -> tuple[list[Extension], list[Extension]]:
    names = {e.name for e in own_required}
    required = [*own_required, *(e for e in server_required if e.name not in names)]
    taken = {e.name for e in required}
    echoed = {e.name for e in server_optional}
    offered = {e.name for e in own_optional}
    # Our own entry for what we offered (our properties), then what the server suggested and we support.
    candidates = [*(e for e in own_optional if e.name in echoed),
                  *(e for e in server_optional if e.name not in offered)]
    optional = []
    for ext in candidates:
        if ext.name not in taken and ext.name in supported:
            optional.append(ext)
            taken.add(ext.name)
    return required, optional
