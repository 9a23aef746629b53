"""ZMTP command bodies and connection metadata (RFC 23, RFC 37).

A command body is ``name-size name data`` with a name of 1-255 letters.
This module knows the commands of ZMTP itself: READY, ERROR, SUBSCRIBE,
CANCEL, PING and PONG.  Mechanism commands (PLAIN's HELLO, CURVE's HELLO, ...)
share names but not layouts, so each mechanism module decodes its own;
:func:`decode_command` returns any other name as a plain :class:`Command`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from reference_impl.common.errors import CodecError

_COMMAND_NAME = re.compile(rb"[A-Za-z]{1,255}")
_PROPERTY_NAME = re.compile(rb"[A-Za-z0-9_.+-]{1,255}")
_MAX_VALUE = 2**31 - 1
MAX_PING_CONTEXT = 16


def command_body(name: str, data: bytes = b"") -> bytes:
    raw = name.encode("ascii", "replace")
    if not _COMMAND_NAME.fullmatch(raw):
        raise CodecError("bad-command-name", f"command name {name!r}")
    return bytes([len(raw)]) + raw + data


def split_command(body: bytes) -> tuple[str, bytes]:
    """(name, data) of a command body."""
    if not body:
        raise CodecError("bad-command-name", "empty command body")
    size = body[0]
    if len(body) < 1 + size:
        raise CodecError("bad-command-name", f"name size {size} runs past the {len(body)}-octet body")
    name = body[1:1 + size]
    if not _COMMAND_NAME.fullmatch(name):
        raise CodecError("bad-command-name", f"command name {name!r}")
    return name.decode("ascii"), body[1 + size:]


@dataclass(frozen=True)
class Metadata:
    """Properties in wire order; names compare case-insensitively (RFC 23 "Connection Metadata")."""

    properties: tuple[tuple[str, bytes], ...] = ()

    @classmethod
    def of(cls, items: Mapping[str, bytes] | Iterable[tuple[str, bytes]] = ()) -> Metadata:
        pairs = items.items() if isinstance(items, Mapping) else items
        return cls(tuple((name, bytes(value)) for name, value in pairs))

    def get(self, name: str) -> bytes | None:
        wanted = name.lower()
        for key, value in self.properties:
            if key.lower() == wanted:
                return value
        return None

    def encode(self) -> bytes:
        out = bytearray()
        for name, value in self.properties:
            raw = name.encode("ascii", "replace")
            if not _PROPERTY_NAME.fullmatch(raw):
                raise CodecError("bad-property-name", f"property name {name!r}")
            if len(value) > _MAX_VALUE:
                raise CodecError("bad-property-value", f"value of {len(value)} octets exceeds 2^31-1")
            out += bytes([len(raw)]) + raw + len(value).to_bytes(4, "big") + value
        return bytes(out)

    @classmethod
    def decode(cls, data: bytes) -> Metadata:
        pairs = []
        at = 0
        while at < len(data):
            size = data[at]
            name = data[at + 1:at + 1 + size]
            if len(name) < size or not _PROPERTY_NAME.fullmatch(name):
                raise CodecError("bad-property-name", f"property name {name!r} at octet {at}")
            at += 1 + size
            if len(data) < at + 4:
                raise CodecError("truncated-property", f"value size of {name!r} cut short")
            value_size = int.from_bytes(data[at:at + 4], "big")
            if value_size > _MAX_VALUE:
                raise CodecError("bad-property-value", f"value size {value_size} exceeds 2^31-1")
            at += 4
            if len(data) < at + value_size:
                raise CodecError("truncated-property", f"value of {name!r} needs {value_size} octets")
            pairs.append((name.decode("ascii"), data[at:at + value_size]))
            at += value_size
        return cls(tuple(pairs))


@dataclass(frozen=True)
class Ready:
    metadata: Metadata = Metadata()


@dataclass(frozen=True)
class Error:
    reason: bytes = b""


@dataclass(frozen=True)
class Subscribe:
    topic: bytes = b""


@dataclass(frozen=True)
class Cancel:
    topic: bytes = b""


@dataclass(frozen=True)
class Ping:
    ttl: int = 0  # tenths of a second; 0 means no TTL
    context: bytes = b""


@dataclass(frozen=True)
class Pong:
    context: bytes = b""


@dataclass(frozen=True)
class Command:
    """A command this module does not parse further."""

    name: str
    data: bytes = b""


AnyCommand = Ready | Error | Subscribe | Cancel | Ping | Pong | Command


def encode_command(command: AnyCommand) -> bytes:
    """The command body (no frame header)."""
    match command:
        case Ready(metadata):
            return command_body("READY", metadata.encode())
        case Error(reason):
            if len(reason) > 255:
                raise CodecError("bad-error", f"reason of {len(reason)} octets exceeds 255")
            return command_body("ERROR", bytes([len(reason)]) + reason)
        case Subscribe(topic):
            return command_body("SUBSCRIBE", topic)
        case Cancel(topic):
            return command_body("CANCEL", topic)
        case Ping(ttl, context):
            if not 0 <= ttl <= 0xFFFF:
                raise CodecError("bad-ping", f"ttl {ttl} is not a u16")
            if len(context) > MAX_PING_CONTEXT:
                raise CodecError("bad-ping", f"context of {len(context)} octets exceeds 16")
            return command_body("PING", ttl.to_bytes(2, "big") + context)
        case Pong(context):
            if len(context) > MAX_PING_CONTEXT:
                raise CodecError("bad-pong", f"context of {len(context)} octets exceeds 16")
            return command_body("PONG", context)
        case Command(name, data):
            return command_body(name, data)
    raise TypeError(f"not a command: {command!r}")


def decode_error(data: bytes) -> Error:
    if not data or len(data) != 1 + data[0]:
        raise CodecError("bad-error", "ERROR data must be a reason size and exactly that many octets")
    return Error(data[1:])


def decode_command(body: bytes) -> AnyCommand:
    name, data = split_command(body)
    match name:
        case "READY":
            return Ready(Metadata.decode(data))
        case "ERROR":
            return decode_error(data)
        case "SUBSCRIBE":
            return Subscribe(data)
        case "CANCEL":
            return Cancel(data)
        case "PING":
            if not 2 <= len(data) <= 2 + MAX_PING_CONTEXT:
                raise CodecError("bad-ping", f"PING data of {len(data)} octets (ttl 2 + context 0-16)")
            return Ping(int.from_bytes(data[:2], "big"), data[2:])
        case "PONG":
            if len(data) > MAX_PING_CONTEXT:
                raise CodecError("bad-pong", f"context of {len(data)} octets exceeds 16")
            return Pong(data)
    return Command(name, data)
