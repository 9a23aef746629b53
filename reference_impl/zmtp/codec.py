"""ZMTP 3.x frames (RFC 23 "Framing").

A frame is a flags octet (MORE 1, LONG 2, COMMAND 4; bits 7-3 reserved and
MUST be zero; MORE SHALL be zero on commands), a size (one octet, or eight
octets big-endian when LONG is set) and that many octets of body.

The encoder picks the short form for bodies of 0-255 octets.  The decoder
also takes the long form for a short body: the grammar allows it
(``long-size`` is "0 to 2^63-1 octets"), the SHOULD about short sizes binds
the sender only, and libzmq reads it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from reference_impl.common.errors import CodecError, IncompleteFrame

MORE = 0x01
LONG = 0x02
COMMAND = 0x04
_RESERVED = 0xF8

DEFAULT_MAX_FRAME = 64 * 1024 * 1024
_MAX_SIZE = 2**63 - 1


@dataclass(frozen=True)
class Frame:
    body: bytes
    more: bool = False
    command: bool = False


def encode_frame(frame: Frame, *, long: bool | None = None) -> bytes:
    """Frame bytes; ``long`` forces a size form (None: short when the body fits)."""
    if frame.command and frame.more:
        raise CodecError("bad-flags", "MORE is not allowed on a command frame")
    size = len(frame.body)
    if long is None:
        long = size > 255
    elif not long and size > 255:
        raise CodecError("bad-size", f"a short frame holds at most 255 octets, not {size}")
    flags = (MORE if frame.more else 0) | (COMMAND if frame.command else 0)
    if long:
        return bytes([flags | LONG]) + size.to_bytes(8, "big") + frame.body
    return bytes([flags, size]) + frame.body


def frame_header(data: bytes | bytearray | memoryview, max_frame: int) -> tuple[int, int, int]:
    """(flags, header length, body size) of the frame starting ``data``; checks the size before any body arrives."""
    if not data:
        raise IncompleteFrame()
    flags = data[0]
    if flags & _RESERVED:
        raise CodecError("bad-flags", f"reserved flag bits set in {flags:#04x}")
    if flags & COMMAND and flags & MORE:
        raise CodecError("bad-flags", f"MORE set on a command frame ({flags:#04x})")
    header = 9 if flags & LONG else 2
    if len(data) < header:
        raise IncompleteFrame()
    size = int.from_bytes(data[1:header], "big")
    if size > _MAX_SIZE:
        raise CodecError("bad-size", f"long size {size} exceeds 2^63-1")
    if size > max_frame:
        raise CodecError("too-large", f"frame of {size} octets exceeds the limit of {max_frame}")
    return flags, header, size


def decode_frame(data: bytes, max_frame: int = DEFAULT_MAX_FRAME) -> tuple[Frame, int]:
    """Decode the frame at the start of ``data``; return it and the octets it took."""
    flags, header, size = frame_header(data, max_frame)
    end = header + size
    if len(data) < end:
        raise IncompleteFrame()
    return Frame(bytes(data[header:end]), more=bool(flags & MORE), command=bool(flags & COMMAND)), end


def decode_message(wire: bytes, max_frame: int = DEFAULT_MAX_FRAME) -> list[bytes]:
    """The frame bodies of exactly one ZMTP message in ``wire`` (vectors, fuzzing: a whole message
    at hand).  CodecError ``truncated``, ``not-a-message`` (a command frame) or ``trailing-bytes``
    when the octets are not exactly one message."""
    parts: list[bytes] = []
    at = 0
    while True:
        try:
            frame, used = decode_frame(wire[at:], max_frame)
        except IncompleteFrame:
            raise CodecError("truncated", "the wire ends inside a ZMTP frame or before the last frame") from None
        if frame.command:
            raise CodecError("not-a-message", "a ZMTP command frame")
        parts.append(frame.body)
        at += used
        if not frame.more:
            break
    if at != len(wire):
        raise CodecError("trailing-bytes", f"{len(wire) - at} octets after the message")
    return parts


def encode_message(parts: list[bytes], *, long: bool | None = None) -> bytes:
    """One ZMTP message: MORE on every frame but the last (``long``: as encode_frame)."""
    last = len(parts) - 1
    return b"".join(encode_frame(Frame(p, more=i < last), long=long) for i, p in enumerate(parts))


class StreamDecoder:
    """Frames from a byte stream fed in arbitrary chunks.

    Only received octets are buffered: a size field is checked against
    ``max_frame`` as soon as it is complete, never used to allocate.
    """

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        self.max_frame = max_frame
        self._buffer = bytearray()
        self._needed = 1  # octets the buffer must hold before parsing is worth trying

    def feed(self, data: bytes) -> list[Frame]:
        """Every frame ``data`` completes; on invalid octets, raises (frames before them are lost)."""
        return list(self.frames(data))

    def frames(self, data: bytes) -> Iterator[Frame]:
        """Like :meth:`feed`, one frame at a time: a valid frame and then garbage
        in one read still hands the frame over before the error is raised, so a
        connection acts on what the peer said before it broke the stream."""
        self._buffer += data
        start = 0
        try:
            while len(self._buffer) - start >= self._needed:
                with memoryview(self._buffer) as whole, whole[start:] as view:
                    try:
                        flags, header, size = frame_header(view, self.max_frame)
                    except IncompleteFrame:
                        self._needed = 9 if view[0] & LONG else 2
                        break
                    if len(view) < header + size:
                        self._needed = header + size
                        break
                    frame = Frame(bytes(view[header:header + size]), bool(flags & MORE), bool(flags & COMMAND))
                start += header + size
                self._needed = 1
                yield frame
        finally:
            del self._buffer[:start]

    @property
    def buffered(self) -> int:
        """Octets received but not yet part of a complete frame."""
        return len(self._buffer)
