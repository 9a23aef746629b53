"""One RSocket stream's state, sans-IO: its request-n credit each way, whether each side is done,
the fragmented message being joined, and a message cut into fragments for sending.
:class:`~reference_impl.rsocket.connection.Connection` keeps one :class:`Stream` per open id."""

from __future__ import annotations

from dataclasses import dataclass, field

from reference_impl.rsocket.codec import MAX_U31
from reference_impl.rsocket.events import Kind


class Credit:
    """request-n credit: cumulative, saturating at 2^31-1 (never wraps)."""

    def __init__(self, initial: int = 0) -> None:
        self.value = min(initial, MAX_U31)

    def add(self, n: int) -> None:
        self.value = min(self.value + n, MAX_U31)

    def take(self) -> bool:
        if self.value <= 0:
            return False
        self.value -= 1
        return True


@dataclass
class Partial:
    """A fragmented message being joined: the first frame, metadata and data so far."""
    first: object
    metadata: bytearray | None
    data: bytearray = field(default_factory=bytearray)

    @property
    def size(self) -> int:
        return len(self.data) + (len(self.metadata) if self.metadata is not None else 0)


@dataclass
class Stream:
    kind: Kind
    local: bool  # we are the requester
    outbound: Credit = field(default_factory=Credit)  # PAYLOADs we may send
    inbound: Credit = field(default_factory=Credit)  # PAYLOADs the peer may send us
    sent_done: bool = False
    received_done: bool = False
    partial: Partial | None = None


def fragments(metadata: bytes | None, data: bytes, size: int) -> list[tuple[bytes | None, bytes]]:
    """Metadata then data, in pieces of at most ``size`` bytes together."""
    meta = metadata or b""
    if len(meta) + len(data) <= size:
        return [(metadata, data)]
    chunks: list[tuple[bytes | None, bytes]] = []
    mpos = dpos = 0
    while mpos < len(meta) or dpos < len(data):
        m = meta[mpos:mpos + size]
        mpos += len(m)
        d = data[dpos:dpos + size - len(m)]
        dpos += len(d)
        chunks.append((m or None, d))
    if metadata is not None and chunks[0][0] is None:  # empty metadata is still present
        chunks[0] = (b"", chunks[0][1])
    return chunks
