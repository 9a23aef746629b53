"""Helpers shared by the fuzz targets: input splitting, records, invariant checks.

A target is a function ``one_input(data: bytes) -> None``.  It returns quietly
when the input is handled (including rejected with an allowed error) and
raises anything else: an unexpected exception in the code under test, or an
:class:`InvariantViolation` when a documented property does not hold (for
example, a streaming decoder giving different messages under another
chunking, or a server writing bytes its own protocol's decoder refuses).
"""

from __future__ import annotations

import random
from collections.abc import Iterator

# Inputs longer than this are cut: the targets are about structure, not bulk.
MAX_INPUT = 1 << 16


class InvariantViolation(AssertionError):
    """A documented property of the code under test does not hold for this input (a crash)."""


def check(condition: bool, what: str) -> None:
    if not condition:
        raise InvariantViolation(what)


def must(what: str, fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` where a CodecError is not allowed (re-encoding what decoded): a crash."""
    from reference_impl.common.errors import CodecError

    try:
        return fn(*args, **kwargs)
    except CodecError as exc:
        raise InvariantViolation(f"{what}: {exc!r}") from None


def split(data: bytes, seed: int) -> list[bytes]:
    """Cut ``data`` into non-empty chunks whose sizes come from ``seed`` (1 byte, a few, many, the rest)."""
    rng = random.Random(seed)
    chunks = []
    pos = 0
    while pos < len(data):
        roll = rng.random()
        if roll < 0.3:
            size = 1
        elif roll < 0.6:
            size = rng.randint(2, 8)
        elif roll < 0.9:
            size = rng.randint(9, 256)
        else:
            size = len(data) - pos
        chunks.append(data[pos:pos + size])
        pos += size
    return chunks


def records(data: bytes) -> Iterator[tuple[bool, bytes]]:
    """Length-prefixed records: a head byte (bit 7 = flag, bits 0-6 = length; 127: a u16 BE length follows)."""
    pos = 0
    while pos < len(data):
        head = data[pos]
        pos += 1
        size = head & 0x7F
        if size == 0x7F:
            size = int.from_bytes(data[pos:pos + 2], "big")
            pos += 2
        yield bool(head & 0x80), data[pos:pos + size]
        pos += size


def record(flag: bool, data: bytes) -> bytes:
    """The inverse of :func:`records` for one record (seeds)."""
    if len(data) < 0x7F:
        return bytes([(0x80 if flag else 0) | len(data)]) + data
    return bytes([(0x80 if flag else 0) | 0x7F]) + len(data).to_bytes(2, "big") + data[:0xFFFF]
