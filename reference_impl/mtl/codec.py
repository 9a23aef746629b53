"""MTL data-flow commands (11/MTL "Data Command Encoding", "Field Encodings").

Every data command is one ZMTP message of exactly two frames: a header (a
1-octet command type, then that type's fields) and a body.

    Integer       8 octets, unsigned, big-endian
    Shortint      2 octets, unsigned, big-endian
    Short string  1 length octet, then 0-255 printable characters (0x20-0x7e)
    Boolean       1 octet, 0 (FALSE) or 1 (TRUE); any other value is invalid
    Field table   the spec leaves it undefined; docs/profiles/mtl.md pins: a Shortint
                  count, then count pairs (name, value) of short strings

    01 Lease     seq:Integer lease:Short string          body unused
    02 Response  seq:Integer                             body: three ASCII digits, 100-999
    03 Summon    seq:Integer resource:Short string       body unused
    04 Dismiss   seq:Integer resource:Short string       body unused
    05 Content   seq:Integer resource:Short string properties:Field table   body: content
    06 Confirm   seq:Integer multiple:Boolean            body unused
    07 Reject    seq:Integer multiple:Boolean recycle:Boolean   body unused
    08 Ping                                              body unused
    09 Pong                                              body unused

Readings pinned here: an "unused" body is sent empty and ignored on receipt
(whatever it holds); a header with octets past its last field is invalid
(``trailing-bytes``), as is one that ends inside a field (``truncated``).
Decoding raises :class:`CodecError` with a stable code: ``frame-count``,
``empty-header``, ``unknown-type``, ``truncated``, ``trailing-bytes``,
``bad-boolean``, ``bad-short-string``, ``bad-code``.  Encoding refuses values
out of range with ``field-range`` / ``bad-short-string``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from reference_impl.common.errors import CodecError

MAX_INTEGER = 2**64 - 1
MAX_SHORTINT = 2**16 - 1


class DataType(IntEnum):
    LEASE = 0x01
    RESPONSE = 0x02
    SUMMON = 0x03
    DISMISS = 0x04
    CONTENT = 0x05
    CONFIRM = 0x06
    REJECT = 0x07
    PING = 0x08
    PONG = 0x09


Properties = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Lease:
    seq: int
    lease: str


@dataclass(frozen=True)
class Response:
    seq: int
    code: int


@dataclass(frozen=True)
class Summon:
    seq: int
    resource: str


@dataclass(frozen=True)
class Dismiss:
    seq: int
    resource: str


@dataclass(frozen=True)
class Content:
    seq: int
    resource: str = ""
    properties: Properties = ()
    body: bytes = b""


@dataclass(frozen=True)
class Confirm:
    seq: int
    multiple: bool = False


@dataclass(frozen=True)
class Reject:
    seq: int
    multiple: bool = False
    recycle: bool = False


@dataclass(frozen=True)
class Ping:
    pass


@dataclass(frozen=True)
class Pong:
    pass


DataCommand = Lease | Response | Summon | Dismiss | Content | Confirm | Reject | Ping | Pong

TYPE_OF: dict[type, DataType] = {
    Lease: DataType.LEASE, Response: DataType.RESPONSE, Summon: DataType.SUMMON, Dismiss: DataType.DISMISS,
    Content: DataType.CONTENT, Confirm: DataType.CONFIRM, Reject: DataType.REJECT, Ping: DataType.PING,
    Pong: DataType.PONG,
}


# -- field encodings ----------------------------------------------------------

def encode_integer(value: int) -> bytes:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_INTEGER:
        raise CodecError("field-range", f"an Integer is 0..2^64-1, not {value!r}")
    return value.to_bytes(8, "big")


def encode_shortint(value: int) -> bytes:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SHORTINT:
        raise CodecError("field-range", f"a Shortint is 0..65535, not {value!r}")
    return value.to_bytes(2, "big")


def encode_short_string(value: str) -> bytes:
    if not isinstance(value, str):
        raise CodecError("bad-short-string", f"a short string is text, not {value!r}")
    data = value.encode("ascii", "replace")
    if not value.isascii() or not _printable(data):
        raise CodecError("bad-short-string", f"a short string holds printable characters only: {value!r}")
    if len(data) > 255:
        raise CodecError("bad-short-string", f"a short string holds at most 255 characters, not {len(data)}")
    return bytes([len(data)]) + data


def encode_boolean(value: bool) -> bytes:
    if not isinstance(value, bool):
        raise CodecError("field-range", f"a Boolean is true or false, not {value!r}")
    return b"\x01" if value else b"\x00"


def encode_field_table(properties: Properties) -> bytes:
    if len(properties) > MAX_SHORTINT:
        raise CodecError("field-range", f"a field table holds at most 65535 pairs, not {len(properties)}")
    out = bytearray(encode_shortint(len(properties)))
    for name, value in properties:
        out += encode_short_string(name) + encode_short_string(value)
    return bytes(out)


def _printable(data: bytes) -> bool:
    return all(0x20 <= b <= 0x7E for b in data)


class _Fields:
    """Reads the fields of one header, after its type octet."""

    def __init__(self, header: bytes) -> None:
        self.data = header
        self.pos = 1

    def take(self, n: int, what: str) -> bytes:
        if self.pos + n > len(self.data):
            raise CodecError("truncated", f"the header ends inside {what}")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def integer(self, what: str = "an Integer") -> int:
        return int.from_bytes(self.take(8, what), "big")

    def shortint(self, what: str = "a Shortint") -> int:
        return int.from_bytes(self.take(2, what), "big")

    def short_string(self, what: str = "a short string") -> str:
        size = self.take(1, what)[0]
        data = self.take(size, what)
        if not _printable(data):
            raise CodecError("bad-short-string", f"{what} holds a character that is not printable: {data!r}")
        return data.decode("ascii")

    def boolean(self, what: str = "a Boolean") -> bool:
        value = self.take(1, what)[0]
        if value not in (0, 1):
            raise CodecError("bad-boolean", f"{what} is {value}, not 0 or 1")
        return value == 1

    def field_table(self) -> Properties:
        count = self.shortint("the field table count")
        pairs = []
        for i in range(count):
            pairs.append((self.short_string(f"field table name {i}"), self.short_string(f"field table value {i}")))
        return tuple(pairs)

    def end(self) -> None:
        if self.pos != len(self.data):
            raise CodecError("trailing-bytes", f"{len(self.data) - self.pos} octets after the last field")


# -- commands -------------------------------------------------------------------

def encode_header(command: DataCommand) -> bytes:
    kind = TYPE_OF[type(command)]
    out = bytearray([kind])
    if isinstance(command, (Lease, Response, Summon, Dismiss, Content, Confirm, Reject)):
        out += encode_integer(command.seq)
    if isinstance(command, Lease):
        out += encode_short_string(command.lease)
    elif isinstance(command, (Summon, Dismiss)):
        out += encode_short_string(command.resource)
    elif isinstance(command, Content):
        out += encode_short_string(command.resource) + encode_field_table(command.properties)
    elif isinstance(command, Confirm):
        out += encode_boolean(command.multiple)
    elif isinstance(command, Reject):
        out += encode_boolean(command.multiple) + encode_boolean(command.recycle)
    return bytes(out)


def encode_body(command: DataCommand) -> bytes:
    if isinstance(command, Content):
        return bytes(command.body)
    if isinstance(command, Response):
        if isinstance(command.code, bool) or not isinstance(command.code, int) or not 100 <= command.code <= 999:
            raise CodecError("bad-code", f"a response code is three digits, not {command.code!r}")
        return b"%03d" % command.code
    return b""


def encode_data(command: DataCommand) -> list[bytes]:
    """The two frames (header, body) of a data command."""
    return [encode_header(command), encode_body(command)]


def decode_data(frames: list[bytes]) -> DataCommand:
    """One data command from the frames of one ZMTP message (routing envelope already removed)."""
    if len(frames) != 2:
        raise CodecError("frame-count", f"a data command has 2 frames (header, body), not {len(frames)}")
    header, body = bytes(frames[0]), bytes(frames[1])
    if not header:
        raise CodecError("empty-header", "the header frame is empty")
    try:
        kind = DataType(header[0])
    except ValueError:
        raise CodecError("unknown-type", f"unknown command type {header[0]:#04x}") from None
    f = _Fields(header)
    command: DataCommand
    if kind is DataType.LEASE:
        command = Lease(f.integer("the command sequence"), f.short_string("the lease"))
    elif kind is DataType.RESPONSE:
        seq = f.integer("the command sequence")
        # 100-999, as the encoder writes: "092" would decode to 92, which no encoder can send back
        # (a fuzz finding: vectors/mtl/data-commands.json, FUZZ_CRASH)
        if len(body) != 3 or not all(0x30 <= b <= 0x39 for b in body) or body[0] == 0x30:
            raise CodecError("bad-code", f"a Response body is a three-digit code 100-999, not {body[:16]!r}")
        command = Response(seq, int(body))
    elif kind is DataType.SUMMON:
        command = Summon(f.integer("the command sequence"), f.short_string("the resource name"))
    elif kind is DataType.DISMISS:
        command = Dismiss(f.integer("the command sequence"), f.short_string("the resource name"))
    elif kind is DataType.CONTENT:
        seq = f.integer("the content sequence")
        resource = f.short_string("the resource name")
        command = Content(seq, resource, f.field_table(), body)
    elif kind is DataType.CONFIRM:
        command = Confirm(f.integer("the content sequence"), f.boolean("multiple"))
    elif kind is DataType.REJECT:
        command = Reject(f.integer("the content sequence"), f.boolean("multiple"), f.boolean("recycle"))
    elif kind is DataType.PING:
        command = Ping()
    else:
        command = Pong()
    f.end()
    return command


def decode_field_table(data: bytes) -> Properties:
    """A field table on its own (the octets after a Content's resource name)."""
    f = _Fields(b"\x00" + bytes(data))
    table = f.field_table()
    f.end()
    return table


def properties_from(mapping: dict[str, str] | Properties | list) -> Properties:
    """A field table from a dict or a list of pairs."""
    if isinstance(mapping, dict):
        return tuple((str(k), str(v)) for k, v in mapping.items())
    return tuple((str(k), str(v)) for k, v in mapping)


__all__ = [
    "Confirm", "Content", "DataCommand", "DataType", "Dismiss", "Lease", "MAX_INTEGER", "Ping", "Pong", "Properties",
    "Reject", "Response", "Summon", "decode_data", "encode_data", "encode_header", "encode_body",
    "encode_field_table", "decode_field_table", "encode_short_string", "encode_integer", "encode_shortint", "encode_boolean",
    "properties_from",
]
