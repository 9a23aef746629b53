"""Micromessage2 wire codec: handshake messages and frames (docs/profiles/micromessage2.md).

Handshake (no frame-flags byte): major u8, minor u8, flags u8, identity-len u8,
identity (ASCII), required-len u16 BE, required (ASCII), optional-len u16 BE,
optional (ASCII).  The extension-list grammar inside the two lists lives in
``extensions.py``; this module only frames the strings.

Frame: a flags byte, then by kind
  MESSAGE/SEND (none of 1/2/4): seq u16 BE, dest-len u8, destination (UTF-8),
      props-len u16 BE, properties (ASCII), length, payload
  COMMAND (1):   length, payload
  EXTENSION (2): ID u8, length, payload
  ERROR (4):     length, payload (a UTF-8 reason)
where length is 1 byte, or 4 bytes BE when LARGE_PAYLOAD (8) is set.  The
encoder sets LARGE_PAYLOAD exactly when the payload exceeds 255 bytes; the
decoder accepts it on short payloads too.  CONTINUED (16) marks every fragment
but the last of a split payload (``split``/``join``).

Stable CodecError codes:
  truncated         input ends inside a frame or handshake (whole-input decoders)
  trailing-bytes    bytes after the one frame or handshake a whole-input decoder expects
  too-large         a length field exceeds ``max_frame`` (raised from the length
                    field alone, before the bytes it announces arrive)
  reserved-flags    frame flag bit 32, 64 or 128 set
  conflicting-kind  more than one of COMMAND, EXTENSION, ERROR set
  zero-sequence     MESSAGE/SEND sequence number 0 (sequences run 1..65535)
  zero-extension-id EXTENSION frame ID 0 (IDs are 1-based)
  non-ascii         identity, extension list or properties not 7-bit ASCII
  bad-utf8          destination not UTF-8
  field-too-long    (encode) a field longer than its length prefix allows
  field-range       (encode) version, sequence or extension ID out of range
  fragment-mismatch (join) fragments of different kinds, or differing seq,
                    destination, properties or extension ID
  fragment-order    (join) CONTINUED missing on a non-final fragment or set on the last
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import IntFlag
from typing import Sequence

from reference_impl.common.errors import CodecError

VERSION = (1, 0)
MAX_FRAGMENT = 1024 * 1024
DEFAULT_MAX_FRAME = 4 * MAX_FRAGMENT
MAX_SEQUENCE = 65535


class Flags(IntFlag):
    COMMAND = 1
    EXTENSION = 2
    ERROR = 4
    LARGE_PAYLOAD = 8
    CONTINUED = 16


_KIND_BITS = Flags.COMMAND | Flags.EXTENSION | Flags.ERROR
_RESERVED_BITS = 0xE0
# First bytes of an ERROR frame.  A peer that rejects a handshake answers with
# ERROR where a handshake is expected; a handshake with major 4, 12, 20 or 28
# would be incompatible anyway, so reading these bytes as ERROR loses nothing.
ERROR_FIRST_BYTES = frozenset({4, 12, 20, 28})


@dataclass(frozen=True, slots=True)
class Handshake:
    major: int = VERSION[0]
    minor: int = VERSION[1]
    identity: str = ""
    required: str = ""
    optional: str = ""
    flags: int = 0


@dataclass(frozen=True, slots=True)
class MessageFrame:
    """MESSAGE (server to client) or SEND (client to server): the same layout."""

    seq: int
    destination: str
    properties: str
    payload: bytes
    continued: bool = False


@dataclass(frozen=True, slots=True)
class CommandFrame:
    payload: bytes
    continued: bool = False


@dataclass(frozen=True, slots=True)
class ExtensionFrame:
    ext_id: int
    payload: bytes
    continued: bool = False


@dataclass(frozen=True, slots=True)
class ErrorFrame:
    payload: bytes
    continued: bool = False

    @property
    def reason(self) -> str:
        # A peer's broken reason text must not stop us from reading that it gave up.
        return self.payload.decode("utf-8", errors="replace")


Frame = MessageFrame | CommandFrame | ExtensionFrame | ErrorFrame


def error_frame(reason: str) -> ErrorFrame:
    return ErrorFrame(reason.encode("utf-8"))


# --- encoding -------------------------------------------------------------------


def _ascii(text: str, what: str) -> bytes:
    if not text.isascii():
        raise CodecError("non-ascii", f"{what} must be 7-bit ASCII")
    return text.encode("ascii")


def _check_len(data: bytes, limit: int, what: str) -> bytes:
    if len(data) > limit:
        raise CodecError("field-too-long", f"{what} is {len(data)} bytes, at most {limit} fit")
    return data


def _check_range(value: int, low: int, high: int, what: str) -> None:
    if not low <= value <= high:
        raise CodecError("field-range", f"{what} {value} outside {low}..{high}")


def encode_handshake(hs: Handshake) -> bytes:
    for value, what in ((hs.major, "major"), (hs.minor, "minor"), (hs.flags, "handshake flags")):
        _check_range(value, 0, 255, what)
    identity = _check_len(_ascii(hs.identity, "identity"), 255, "identity")
    required = _check_len(_ascii(hs.required, "required extensions"), 0xFFFF, "required extensions")
    optional = _check_len(_ascii(hs.optional, "optional extensions"), 0xFFFF, "optional extensions")
    return b"".join((
        bytes((hs.major, hs.minor, hs.flags, len(identity))), identity,
        len(required).to_bytes(2, "big"), required,
        len(optional).to_bytes(2, "big"), optional,
    ))


def encode_frame(frame: Frame, *, force_large: bool = False) -> bytes:
    """Encode one frame; ``force_large`` sets LARGE_PAYLOAD on a short payload (a valid, non-canonical form)."""
    payload = _check_len(frame.payload, 0xFFFFFFFF, "payload")
    large = force_large or len(payload) > 255
    flags = (Flags.LARGE_PAYLOAD if large else 0) | (Flags.CONTINUED if frame.continued else 0)
    if isinstance(frame, MessageFrame):
        _check_range(frame.seq, 1, MAX_SEQUENCE, "sequence number")
        destination = _check_len(frame.destination.encode("utf-8"), 255, "destination")
        properties = _check_len(_ascii(frame.properties, "properties"), 0xFFFF, "properties")
        head = b"".join((
            bytes((flags,)), frame.seq.to_bytes(2, "big"), bytes((len(destination),)), destination,
            len(properties).to_bytes(2, "big"), properties,
        ))
    elif isinstance(frame, ExtensionFrame):
        _check_range(frame.ext_id, 1, 255, "extension ID")
        head = bytes((flags | Flags.EXTENSION, frame.ext_id))
    elif isinstance(frame, CommandFrame):
        head = bytes((flags | Flags.COMMAND,))
    else:
        head = bytes((flags | Flags.ERROR,))
    length = len(payload).to_bytes(4, "big") if large else bytes((len(payload),))
    return head + length + payload


# --- decoding -------------------------------------------------------------------


def _limit(length: int, max_frame: int, what: str) -> int:
    if length > max_frame:
        raise CodecError("too-large", f"{what} length {length} exceeds the limit {max_frame}")
    return length


def _frame_kind(flags: int) -> int:
    if flags & _RESERVED_BITS:
        raise CodecError("reserved-flags", f"flags {flags:#04x} set a reserved bit (32, 64 or 128)")
    kind = flags & _KIND_BITS
    if kind & (kind - 1):
        raise CodecError("conflicting-kind", f"flags {flags:#04x} set more than one of COMMAND, EXTENSION, ERROR")
    return kind


def _parse_frame(buf: bytes | bytearray, pos: int, max_frame: int) -> tuple[Frame, int] | None:
    """Parse one frame at ``pos``; None when more bytes are needed.  Checks run as soon as their bytes arrive."""
    end = len(buf)
    if pos >= end:
        return None
    flags = buf[pos]
    kind = _frame_kind(flags)
    p = pos + 1
    if kind == 0:
        if p + 3 > end:
            return None
        seq = buf[p] << 8 | buf[p + 1]
        if seq == 0:
            raise CodecError("zero-sequence", "sequence numbers run 1..65535")
        dest_len = _limit(buf[p + 2], max_frame, "destination")
        p += 3
        if p + dest_len + 2 > end:
            return None
        dest_raw = bytes(buf[p:p + dest_len])
        p += dest_len
        props_len = _limit(buf[p] << 8 | buf[p + 1], max_frame, "properties")
        p += 2
        if p + props_len > end:
            return None
        props_raw = bytes(buf[p:p + props_len])
        p += props_len
    elif kind == Flags.EXTENSION:
        if p >= end:
            return None
        ext_id = buf[p]
        if ext_id == 0:
            raise CodecError("zero-extension-id", "extension IDs are 1-based")
        p += 1
    if flags & Flags.LARGE_PAYLOAD:
        if p + 4 > end:
            return None
        length = int.from_bytes(buf[p:p + 4], "big")
        p += 4
    else:
        if p >= end:
            return None
        length = buf[p]
        p += 1
    _limit(length, max_frame, "payload")
    if p + length > end:
        return None
    payload = bytes(buf[p:p + length])
    p += length
    continued = bool(flags & Flags.CONTINUED)
    if kind == 0:
        try:
            destination = dest_raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CodecError("bad-utf8", f"destination: {exc}") from None
        if not props_raw.isascii():
            raise CodecError("non-ascii", "properties must be 7-bit ASCII")
        return MessageFrame(seq, destination, props_raw.decode("ascii"), payload, continued), p
    if kind == Flags.EXTENSION:
        return ExtensionFrame(ext_id, payload, continued), p
    if kind == Flags.COMMAND:
        return CommandFrame(payload, continued), p
    return ErrorFrame(payload, continued), p


def _ascii_field(raw: bytes | bytearray, what: str) -> str:
    if not raw.isascii():
        raise CodecError("non-ascii", f"{what} must be 7-bit ASCII")
    return raw.decode("ascii")


def _parse_handshake(buf: bytes | bytearray, pos: int, max_frame: int) -> tuple[Handshake, int] | None:
    end = len(buf)
    if pos + 4 > end:
        return None
    major, minor, flags, id_len = buf[pos:pos + 4]
    p = pos + 4
    if p + id_len > end:
        return None
    identity = _ascii_field(buf[p:p + id_len], "identity")
    p += id_len
    lists = []
    for what in ("required extensions", "optional extensions"):
        if p + 2 > end:
            return None
        length = _limit(buf[p] << 8 | buf[p + 1], max_frame, what)
        p += 2
        if p + length > end:
            return None
        lists.append(_ascii_field(buf[p:p + length], what))
        p += length
    return Handshake(major, minor, identity, lists[0], lists[1], flags), p


def _whole(parsed: tuple[Handshake | Frame, int] | None, data: bytes, what: str) -> Handshake | Frame:
    if parsed is None:
        raise CodecError("truncated", f"{len(data)} bytes end inside the {what}")
    item, end = parsed
    if end != len(data):
        raise CodecError("trailing-bytes", f"{len(data) - end} bytes after the {what}")
    return item


def decode_handshake(data: bytes, max_frame: int = DEFAULT_MAX_FRAME) -> Handshake:
    """Decode exactly one handshake message."""
    return _whole(_parse_handshake(data, 0, max_frame), data, "handshake")  # type: ignore[return-value]


def decode_frame(data: bytes, max_frame: int = DEFAULT_MAX_FRAME) -> Frame:
    """Decode exactly one frame."""
    return _whole(_parse_frame(data, 0, max_frame), data, "frame")  # type: ignore[return-value]


class StreamDecoder:
    """Frames (or handshakes) out of a byte stream fed in arbitrary chunks.

    The caller picks the mode per item: ``next_handshake`` where the protocol
    expects a handshake, ``next_frame`` after it.  Lengths are checked against
    ``max_frame`` as soon as a length field is complete; nothing is sized from a
    length field, so a partial frame holds only the bytes that arrived.
    """

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        self._buf = bytearray()
        self._pos = 0
        self._max_frame = max_frame

    @property
    def buffered(self) -> int:
        """Bytes received but not yet part of a returned item."""
        return len(self._buf) - self._pos

    def feed(self, data: bytes) -> None:
        if self._pos and self._pos >= len(self._buf) // 2:
            del self._buf[:self._pos]
            self._pos = 0
        self._buf += data

    def peek(self) -> int | None:
        """The first byte of the next item, once it has arrived."""
        return self._buf[self._pos] if self.buffered else None

    def next_frame(self) -> Frame | None:
        parsed = _parse_frame(self._buf, self._pos, self._max_frame)
        if parsed is None:
            return None
        frame, self._pos = parsed
        return frame

    def next_handshake(self) -> Handshake | ErrorFrame | None:
        """The next handshake, or the ERROR frame a peer sends instead of one."""
        first = self.peek()
        if first is not None and first in ERROR_FIRST_BYTES:
            return self.next_frame()  # type: ignore[return-value]
        parsed = _parse_handshake(self._buf, self._pos, self._max_frame)
        if parsed is None:
            return None
        handshake, self._pos = parsed
        return handshake


def decode_frames(data: bytes, max_frame: int = DEFAULT_MAX_FRAME) -> list[Frame]:
    """Decode a run of complete frames."""
    decoder = StreamDecoder(max_frame)
    decoder.feed(data)
    frames = []
    while (frame := decoder.next_frame()) is not None:
        frames.append(frame)
    if decoder.buffered:
        raise CodecError("truncated", f"{decoder.buffered} bytes at the end do not complete a frame")
    return frames


# --- split and join ---------------------------------------------------------------


def split(frame: Frame, fragment_size: int = MAX_FRAGMENT) -> list[Frame]:
    """Split a payload over ``fragment_size`` into fragments; all but the last carry CONTINUED.

    Every fragment repeats the frame's header fields (seq, destination and
    properties of a MESSAGE, the ID of an EXTENSION frame).
    """
    payload = frame.payload
    if len(payload) <= fragment_size:
        return [frame]
    pieces = range(0, len(payload), fragment_size)
    return [
        dataclasses.replace(frame, payload=payload[i:i + fragment_size], continued=i + fragment_size < len(payload))
        for i in pieces
    ]


def same_header(a: Frame, b: Frame) -> bool:
    """Whether ``b`` may continue a payload that ``a`` started."""
    if type(a) is not type(b):
        return False
    if isinstance(a, MessageFrame):
        return (a.seq, a.destination, a.properties) == (b.seq, b.destination, b.properties)  # type: ignore[union-attr]
    if isinstance(a, ExtensionFrame):
        return a.ext_id == b.ext_id  # type: ignore[union-attr]
    return True


def join(fragments: Sequence[Frame]) -> Frame:
    """Join the fragments of one payload, checking headers and CONTINUED flags."""
    if not fragments:
        raise CodecError("fragment-order", "no fragments")
    first = fragments[0]
    for i, fragment in enumerate(fragments):
        if not same_header(first, fragment):
            raise CodecError("fragment-mismatch", f"fragment {i} does not repeat the first fragment's header")
        if fragment.continued != (i < len(fragments) - 1):
            raise CodecError("fragment-order", f"fragment {i}: CONTINUED must be set on all fragments but the last")
    return dataclasses.replace(first, payload=b"".join(f.payload for f in fragments), continued=False)
