"""Unsigned LEB128 varints, strict by default.

Seven payload bits per byte, least significant group first; the high bit of
a byte says another byte follows.  Encoders emit the minimal form.

Decoding errors (``CodecError.code``):

* ``varint-too-long``  -- the ``max_bytes``-th byte still has its continuation
  bit set, so the varint is longer than allowed (found without reading on).
* ``varint-too-large`` -- the value exceeds ``max_value`` (found as soon as the
  bits read so far exceed it, so a huge varint is refused early).
* ``varint-overlong``  -- a non-minimal encoding (a last byte of 0x00 after at
  least one other byte), only when ``strict``.  A lenient caller
  (``strict=False``) can still see one by comparing the bytes consumed with
  :func:`uvarint_size` of the value.

Encoding errors: ``varint-negative``, ``varint-too-large``.
"""

from __future__ import annotations

from reference_impl.common.errors import CodecError, IncompleteFrame

MAX_UVARINT_BYTES = 10
MAX_UVARINT_VALUE = 2**63 - 1


def uvarint_size(n: int) -> int:
    """Bytes in the minimal encoding of ``n``."""
    return max(1, (n.bit_length() + 6) // 7)


def encode_uvarint(n: int, *, max_value: int = MAX_UVARINT_VALUE) -> bytes:
    if n < 0:
        raise CodecError("varint-negative", str(n))
    if n > max_value:
        raise CodecError("varint-too-large", f"{n} > {max_value}")
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def decode_uvarint(
    buf: bytes | bytearray | memoryview,
    offset: int = 0,
    *,
    max_bytes: int = MAX_UVARINT_BYTES,
    max_value: int = MAX_UVARINT_VALUE,
    strict: bool = True,
) -> tuple[int, int]:
    """Return ``(value, offset just past the varint)``.

    Raises :class:`IncompleteFrame` when ``buf`` ends inside a varint that
    could still turn out valid.
    """
    value = 0
    shift = 0
    pos = offset
    for count in range(1, max_bytes + 1):
        if pos >= len(buf):
            raise IncompleteFrame()
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if value > max_value:
            raise CodecError("varint-too-large", f"more than {max_value}")
        if not byte & 0x80:
            if strict and byte == 0 and count > 1:
                raise CodecError("varint-overlong", f"{count} bytes for {value}")
            return value, pos
    raise CodecError("varint-too-long", f"more than {max_bytes} bytes")
