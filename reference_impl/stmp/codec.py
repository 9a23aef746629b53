"""STMP message codec: binary form (with or without PS) and text form.

Wire layout (docs/profiles/stmp.md): one header byte, KIND in bits 7-6, ENCODING in
bits 5-3, bits 2-0 zero; then, when present and in this order, ID u16, ACTION
u32, STATUS u8, PS u32 (big endian), PAYLOAD.  Request carries ID ACTION,
Notify ACTION, Response ID STATUS, Ping nothing.  PS is present only in the
stream form (``with_ps=True``, TCP) and only when ENCODING != 0; the message
form (``with_ps=False``, WebSocket binary frames) takes the payload to be the
rest of the frame.

Payload rules: ENCODING 0 means no payload (``payload == b""``); any other
ENCODING needs a non-empty payload, because an empty payload is sent as
ENCODING 0.  ``payload=None`` exists only in the text form, as the header of a
split message (below).

Text form: the decimal header fields joined by "|" in the binary order, no PS.
A field is canonical decimal (no sign, no leading zero) of at most the width the
spec gives (KIND 1, ENCODING 1, ID 5, ACTION 10, STATUS 3 digits); a longer or
non-canonical field is "text-syntax", a value out of the field's range is
"field-range".  Ping is exactly "0".  After the last header field:

- nothing: no payload field.  With ENCODING 0 that is the whole message; with
  ENCODING != 0 it is the header of a split message (``payload=None``) whose
  payload is the next binary WebSocket message (see ``attach_split_payload``).
- "|" and the rest: the payload field, bytes = UTF-8 of the rest, which may
  contain "|".  So "2|5|7|" is an explicit empty payload with ENCODING 5:
  invalid ("empty-payload"), exactly like PS 0 with ENCODING != 0 in the binary
  form; it is never read as a split header.  "2|0|7|" has a payload field with
  ENCODING 0: "unexpected-payload".  "0|..." (anything after a ping) is
  "trailing-bytes", as in the binary form.

Error codes (CodecError.code), checked in this order for the header byte:
reserved-bits, encoding-invalid, ping-encoding.

- truncated: fewer bytes/fields than the message needs (one-message decoders).
- trailing-bytes: bytes after a complete message; anything after a text ping.
- reserved-bits: header bits 2-0 not zero.
- encoding-invalid: ENCODING 6 or 7.
- ping-encoding: KIND 0 with ENCODING != 0.
- first-byte: a first byte/character that is neither text (0x30..0x33) nor binary
  (0x00, >= 0x40) where the form is classified by it, and any text message
  whose KIND character is not "0".."3".
- too-large: payload longer than ``max_payload`` (raised as ``PayloadTooLarge``,
  which also names the offending message's ID when it has one), raised as soon
  as the PS field is read, before any payload byte arrives.
- text-syntax: a text field that is not canonical decimal of the allowed width,
  or a text string that cannot be UTF-8 encoded.
- field-range: a field value out of range (encode; text decode), or ENCODING 8/9
  in the text form.
- empty-payload: ENCODING != 0 with an empty payload (PS 0, an empty rest of a
  binary frame, "x|5|...|" with nothing after, an empty split payload frame).
- unexpected-payload: ENCODING 0 with a payload (encode; text payload field).
- split-header: ``payload=None`` where it cannot be (binary form, ENCODING 0).
- payload-not-utf8: ``encode_text`` of a payload that is not UTF-8; send it as a
  split message instead.
- version-syntax: a text version list that is not pairs of hex digits (every
  byte is a version in the binary form).
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, replace
from enum import IntEnum
from typing import Literal, NamedTuple, TypeAlias

from reference_impl.common.errors import CodecError

DEFAULT_MAX_PAYLOAD = 16 * 1024 * 1024
MAX_PS = 0xFFFFFFFF


class Kind(IntEnum):
    PING = 0
    REQUEST = 1
    NOTIFY = 2
    RESPONSE = 3


class Encoding(IntEnum):
    NONE = 0
    PROTOBUF = 1
    JSON = 2
    MSGPACK = 3
    BSON = 4
    RAW = 5


class Status(IntEnum):
    OK = 0x00
    MOVED_PERMANENTLY = 0x10
    FOUND = 0x11
    NOT_MODIFIED = 0x12
    BAD_REQUEST = 0x20
    UNAUTHORIZED = 0x21
    PAYMENT_REQUIRED = 0x22
    FORBIDDEN = 0x23
    NOT_FOUND = 0x24
    REQUEST_TIMEOUT = 0x25
    REQUEST_ENTITY_TOO_LARGE = 0x26
    TOO_MANY_REQUESTS = 0x27
    INTERNAL_SERVER_ERROR = 0x30
    NOT_IMPLEMENTED = 0x31
    BAD_GATEWAY = 0x32
    SERVICE_UNAVAILABLE = 0x33
    GATEWAY_TIMEOUT = 0x34
    VERSION_NOT_SUPPORTED = 0x35


@dataclass(frozen=True)
class Ping:
    pass


@dataclass(frozen=True)
class Request:
    id: int
    action: int
    encoding: int
    payload: bytes | None


@dataclass(frozen=True)
class Notify:
    action: int
    encoding: int
    payload: bytes | None


@dataclass(frozen=True)
class Response:
    id: int
    status: int
    encoding: int
    payload: bytes | None


Message: TypeAlias = Ping | Request | Notify | Response


class PayloadTooLarge(CodecError):
    """A payload over the limit; ``message_id`` lets a server answer 0x26 to that ID."""

    def __init__(self, size: int, limit: int, message_id: int | None) -> None:
        super().__init__("too-large", f"payload of {size} bytes, limit {limit}")
        self.message_id = message_id


# Per kind: struct format of the fixed fields after the header byte, and their
# text widths in digits.  Field order is the spec's: ID, ACTION, STATUS.
_FIXED = {
    Kind.PING: struct.Struct(">"),
    Kind.REQUEST: struct.Struct(">HI"),
    Kind.NOTIFY: struct.Struct(">I"),
    Kind.RESPONSE: struct.Struct(">HB"),
}
_TEXT_WIDTHS = {Kind.PING: (), Kind.REQUEST: (5, 10), Kind.NOTIFY: (10,), Kind.RESPONSE: (5, 3)}
_FIELD_MAX = {Kind.PING: (), Kind.REQUEST: (0xFFFF, 0xFFFFFFFF), Kind.NOTIFY: (0xFFFFFFFF,),
              Kind.RESPONSE: (0xFFFF, 0xFF)}
_PS = struct.Struct(">I")
_DECIMAL = re.compile(r"0|[1-9][0-9]*")


def _kind_of(msg: Message) -> Kind:
    if isinstance(msg, Ping):
        return Kind.PING
    if isinstance(msg, Request):
        return Kind.REQUEST
    if isinstance(msg, Notify):
        return Kind.NOTIFY
    if isinstance(msg, Response):
        return Kind.RESPONSE
    raise TypeError(f"not an STMP message: {msg!r}")


def _fields_of(msg: Message) -> tuple[int, ...]:
    if isinstance(msg, Request):
        return (msg.id, msg.action)
    if isinstance(msg, Notify):
        return (msg.action,)
    if isinstance(msg, Response):
        return (msg.id, msg.status)
    return ()


def _build(kind: Kind, encoding: int, fields: tuple[int, ...], payload: bytes | None) -> Message:
    if kind == Kind.REQUEST:
        return Request(fields[0], fields[1], encoding, payload)
    if kind == Kind.NOTIFY:
        return Notify(fields[0], encoding, payload)
    if kind == Kind.RESPONSE:
        return Response(fields[0], fields[1], encoding, payload)
    return Ping()


def _message_id(kind: Kind, fields: tuple[int, ...]) -> int | None:
    return fields[0] if kind in (Kind.REQUEST, Kind.RESPONSE) else None


def _check_encoding(encoding: int) -> None:
    if encoding in (6, 7):
        raise CodecError("encoding-invalid", f"ENCODING {encoding} is not defined")
    if not 0 <= encoding <= 5:
        raise CodecError("field-range", f"ENCODING {encoding} out of 0..7")


def _check_outgoing(msg: Message, *, allow_split: bool) -> tuple[Kind, int, tuple[int, ...]]:
    """Validate a message for encoding; return its kind, encoding and fixed fields."""
    kind = _kind_of(msg)
    if kind == Kind.PING:
        return kind, 0, ()
    fields = _fields_of(msg)
    for value, limit in zip(fields, _FIELD_MAX[kind]):
        if not 0 <= value <= limit:
            raise CodecError("field-range", f"{value} out of 0..{limit:#x}")
    encoding = msg.encoding  # type: ignore[union-attr]
    payload = msg.payload  # type: ignore[union-attr]
    _check_encoding(encoding)
    if payload is None:
        if not allow_split or encoding == 0:
            raise CodecError("split-header", "payload=None is only a text split header with ENCODING != 0")
    elif encoding == 0 and payload:
        raise CodecError("unexpected-payload", "ENCODING 0 carries no payload")
    elif encoding != 0 and not payload:
        raise CodecError("empty-payload", "an empty payload is sent as ENCODING 0")
    elif len(payload) > MAX_PS:
        raise CodecError("field-range", "payload longer than PS can express")
    return kind, encoding, fields


def encode_binary(msg: Message, *, with_ps: bool) -> bytes:
    kind, encoding, fields = _check_outgoing(msg, allow_split=False)
    head = bytes([kind << 6 | encoding << 3]) + _FIXED[kind].pack(*fields)
    if encoding == 0:
        return head
    payload: bytes = msg.payload  # type: ignore[union-attr,assignment]
    return head + (_PS.pack(len(payload)) if with_ps else b"") + payload


def _parse_header_byte(byte: int) -> tuple[Kind, int]:
    if byte & 0x07:
        raise CodecError("reserved-bits", f"header byte {byte:#04x}")
    kind, encoding = Kind(byte >> 6), byte >> 3 & 0x07
    _check_encoding(encoding)
    if kind == Kind.PING and encoding != 0:
        raise CodecError("ping-encoding", f"ping with ENCODING {encoding}")
    return kind, encoding


def _valid_header(byte: int) -> tuple[Kind, int, struct.Struct] | None:
    try:
        kind, encoding = _parse_header_byte(byte)
    except CodecError:
        return None
    return kind, encoding, _FIXED[kind]


# every header byte parsed once: decoding looks it up (None: _parse_header_byte says what is wrong)
_HEADERS = tuple(_valid_header(byte) for byte in range(256))


class _Head(NamedTuple):
    kind: Kind
    encoding: int
    fields: tuple[int, ...]
    size: int  # bytes up to the payload, from ``at``
    payload_size: int | None  # from PS; None when there is no PS to read


def _read_head(data: bytes | bytearray, *, with_ps: bool, max_payload: int, at: int = 0) -> _Head | None:
    """Parse everything before the payload of the message at ``at``; None if more bytes are needed."""
    if len(data) <= at:
        return None
    header = _HEADERS[data[at]]
    if header is None:
        _parse_header_byte(data[at])  # raises the reason
    kind, encoding, fixed = header
    end = 1 + fixed.size
    if len(data) < at + end:
        return None
    fields = fixed.unpack_from(data, at + 1)
    if encoding == 0:
        return _Head(kind, encoding, fields, end, 0)
    if not with_ps:
        return _Head(kind, encoding, fields, end, None)
    if len(data) < at + end + _PS.size:
        return None
    (size,) = _PS.unpack_from(data, at + end)
    if size == 0:
        raise CodecError("empty-payload", "PS 0 with ENCODING != 0")
    if size > max_payload:
        raise PayloadTooLarge(size, max_payload, _message_id(kind, fields))
    return _Head(kind, encoding, fields, end + _PS.size, size)


def decode_binary(data: bytes, *, with_ps: bool, max_payload: int = DEFAULT_MAX_PAYLOAD) -> Message:
    """Decode exactly one message."""
    head = _read_head(data, with_ps=with_ps, max_payload=max_payload)
    if head is None:
        raise CodecError("truncated", f"{len(data)} bytes do not hold a header")
    rest = bytes(data[head.size:])
    if head.payload_size is None:  # message form: the payload is the rest of the frame
        if not rest:
            raise CodecError("empty-payload", "ENCODING != 0 with no payload")
        if len(rest) > max_payload:
            raise PayloadTooLarge(len(rest), max_payload, _message_id(head.kind, head.fields))
        return _build(head.kind, head.encoding, head.fields, rest)
    if len(rest) < head.payload_size:
        raise CodecError("truncated", f"payload has {len(rest)} of {head.payload_size} bytes")
    if len(rest) > head.payload_size:
        raise CodecError("trailing-bytes", f"{len(rest) - head.payload_size} bytes after the message")
    return _build(head.kind, head.encoding, head.fields, rest)


class StreamDecoder:
    """Incremental decoder of the stream form (with PS), fed arbitrary chunks.

    ``feed`` returns every message completed so far.  If invalid bytes follow
    messages returned by a call, the error is raised by the next call (``feed(b"")``
    surfaces it), so the messages before an error are the same under any
    chunking.  After an error the decoder stays failed: every call raises it.
    The buffer only ever holds bytes that arrived; PS is checked against
    ``max_payload`` as soon as its four bytes are in.
    """

    def __init__(self, max_payload: int = DEFAULT_MAX_PAYLOAD) -> None:
        self._max_payload = max_payload
        self._buffer = bytearray()
        self._error: CodecError | None = None

    @property
    def buffered(self) -> int:
        return len(self._buffer)

    @property
    def at_boundary(self) -> bool:
        return not self._buffer

    def feed(self, data: bytes) -> list[Message]:
        if self._error is not None:
            raise self._error
        buffer = self._buffer
        buffer += data
        messages: list[Message] = []
        at = 0  # where the next message starts: the buffer is cut once per feed, not per message
        try:
            while (head := _read_head(buffer, with_ps=True, max_payload=self._max_payload, at=at)) is not None:
                start = at + head.size
                end = start + (head.payload_size or 0)  # never None: the stream form has PS
                if len(buffer) < end:
                    break
                messages.append(_build(head.kind, head.encoding, head.fields, bytes(buffer[start:end])))
                at = end
        except CodecError as exc:
            self._error = exc
            if not messages:
                raise
        del buffer[:at]
        return messages


def classify_first_byte(b: int) -> Literal["text", "binary"]:
    if 0x30 <= b <= 0x33:
        return "text"
    if b == 0x00 or b >= 0x40:
        return "binary"
    raise CodecError("first-byte", f"{b:#04x} starts neither a text nor a binary message")


def encode_text(msg: Message) -> str:
    kind, encoding, fields = _check_outgoing(msg, allow_split=True)
    if kind == Kind.PING:
        return "0"
    header = "|".join(str(v) for v in (kind, encoding, *fields))
    payload = msg.payload  # type: ignore[union-attr]
    if payload is None or encoding == 0:
        return header
    try:
        return header + "|" + payload.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CodecError("payload-not-utf8", "send a binary payload as a split message") from exc


def _text_field(text: str, width: int) -> int:
    if len(text) > width or not _DECIMAL.fullmatch(text):
        raise CodecError("text-syntax", f"{text[:16]!r} is not a decimal of at most {width} digits")
    return int(text)


def decode_text(text: str, *, max_payload: int = DEFAULT_MAX_PAYLOAD) -> Message:
    if not text:
        raise CodecError("truncated", "empty text message")
    if text[0] not in "0123":
        raise CodecError("first-byte", f"{text[0]!r} is not a KIND")
    kind = Kind(int(text[0]))
    if kind == Kind.PING:
        if text != "0":
            raise CodecError("trailing-bytes", "a text ping is exactly '0'")
        return Ping()
    widths = _TEXT_WIDTHS[kind]
    parts = text.split("|", 2 + len(widths))  # KIND, ENCODING, fields, and the payload field if any
    if len(parts) < 2 + len(widths):
        raise CodecError("truncated", f"{kind.name} needs {2 + len(widths)} header fields")
    if parts[0] != text[0]:
        raise CodecError("text-syntax", "KIND is one digit")
    encoding = _text_field(parts[1], 1)
    fields = tuple(_text_field(field, width) for field, width in zip(parts[2:], widths))
    _check_encoding(encoding)
    for value, limit in zip(fields, _FIELD_MAX[kind]):
        if value > limit:
            raise CodecError("field-range", f"{value} out of 0..{limit:#x}")
    if len(parts) == 2 + len(widths):
        return _build(kind, encoding, fields, b"" if encoding == 0 else None)
    if encoding == 0:
        raise CodecError("unexpected-payload", "ENCODING 0 with a payload field")
    try:
        payload = parts[-1].encode("utf-8")
    except UnicodeEncodeError as exc:
        raise CodecError("text-syntax", "payload is not encodable as UTF-8") from exc
    if not payload:
        raise CodecError("empty-payload", "ENCODING != 0 with an empty payload field")
    if len(payload) > max_payload:
        raise PayloadTooLarge(len(payload), max_payload, _message_id(kind, fields))
    return _build(kind, encoding, fields, payload)


def attach_split_payload(header: Message, payload: bytes, *, max_payload: int = DEFAULT_MAX_PAYLOAD) -> Message:
    """Complete a split text header (``payload=None``) with the binary message that follows it."""
    kind = _kind_of(header)
    if kind == Kind.PING or header.payload is not None:  # type: ignore[union-attr]
        raise ValueError("not a split header")
    if not payload:
        raise CodecError("empty-payload", "empty split payload")
    if len(payload) > max_payload:
        raise PayloadTooLarge(len(payload), max_payload, _message_id(kind, _fields_of(header)))
    return replace(header, payload=bytes(payload))  # type: ignore[type-var]


def encode_versions(versions: list[tuple[int, int]], *, text: bool) -> bytes:
    for major, minor in versions:
        if not (0 <= major <= 15 and 0 <= minor <= 15):
            raise CodecError("field-range", f"version {major}.{minor} out of 0.0..15.15")
    if text:
        return "".join(f"{major:x}{minor:x}" for major, minor in versions).encode("ascii")
    return bytes(major << 4 | minor for major, minor in versions)


_HEX = re.compile(rb"(?:[0-9a-fA-F]{2})*")


def decode_versions(payload: bytes, *, text: bool) -> list[tuple[int, int]]:
    if not text:
        return [(b >> 4, b & 0x0F) for b in payload]
    if not _HEX.fullmatch(payload):
        raise CodecError("version-syntax", "text versions are pairs of hex digits")
    return [(int(payload[i:i + 1], 16), int(payload[i + 1:i + 2], 16)) for i in range(0, len(payload), 2)]
