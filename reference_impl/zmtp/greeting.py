"""The 64-octet ZMTP 3.x greeting (RFC 23 "Formal Grammar", RFC 37).

    signature  ff, 8 padding octets, 7f        octets 0-9
    version    major (3), minor (0 or 1)       octets 10-11
    mechanism  20 octets, null padded          octets 12-31
    as-server  00 or 01                        octet 32
    filler     31 zero octets                  octets 33-63

:class:`GreetingDecoder` judges the greeting as its octets arrive, in the
order RFC 23 "Backwards Interoperability" reads them: the first octet and
the tenth tell a ZMTP 1.0 peer from a versioned one, the eleventh carries the
major version.  libzmq sends its greeting in three pieces and waits for ours
in between, so a decoder that insisted on 64 octets before looking would
still work, but could not refuse an old peer early.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from reference_impl.common.errors import CodecError, IncompleteFrame

GREETING_SIZE = 64
SIGNATURE_SIZE = 10
MECHANISM_SIZE = 20

_MAJOR_AT = 10
_MINOR_AT = 11
_MECHANISM_AT = 12
_AS_SERVER_AT = 32
_MECHANISM_NAME = re.compile(rb"[A-Z0-9_.+-]{1,20}")


@dataclass(frozen=True)
class Greeting:
    mechanism: str
    as_server: bool = False
    major: int = 3
    minor: int = 1


def encode_greeting(greeting: Greeting) -> bytes:
    """The full greeting, padding zeroed as RFC 23 asks of peers sending all 64 octets at once."""
    name = greeting.mechanism.encode("ascii", "replace")
    if not _MECHANISM_NAME.fullmatch(name):
        raise CodecError("bad-mechanism", f"mechanism name {greeting.mechanism!r}")
    if not (0 <= greeting.major <= 255 and 0 <= greeting.minor <= 255):
        raise CodecError("unsupported-version", f"{greeting.major}.{greeting.minor}")
    return (
        b"\xff" + bytes(8) + b"\x7f"
        + bytes([greeting.major, greeting.minor])
        + name.ljust(MECHANISM_SIZE, b"\x00")
        + (b"\x01" if greeting.as_server else b"\x00")
        + bytes(31)
    )


def check_greeting_prefix(data: bytes) -> None:
    """Refuse a greeting as early as its first octets allow (``data`` may be partial)."""
    if len(data) >= 1 and data[0] != 0xFF:
        raise CodecError("bad-signature", "first octet is not ff (a ZMTP 1.0 peer or not ZMTP)")
    if len(data) >= SIGNATURE_SIZE and not data[SIGNATURE_SIZE - 1] & 0x01:
        # RFC 23: a clear low bit in octet 9 is a ZMTP 1.0 long identity frame.
        raise CodecError("bad-signature", "octet 9 has its low bit clear (a ZMTP 1.0 peer)")
    if len(data) > _MAJOR_AT and data[_MAJOR_AT] < 3:
        raise CodecError("unsupported-version", f"major version {data[_MAJOR_AT]}: ZMTP 1.0/2.0 peers are not served")
    if len(data) >= _AS_SERVER_AT:
        _mechanism_name(data[_MECHANISM_AT:_AS_SERVER_AT])
    if len(data) > _AS_SERVER_AT and data[_AS_SERVER_AT] > 1:
        raise CodecError("bad-as-server", f"as-server octet {data[_AS_SERVER_AT]:#04x}")


def _mechanism_name(field: bytes) -> str:
    name = field.rstrip(b"\x00")
    if not _MECHANISM_NAME.fullmatch(name):
        raise CodecError("bad-mechanism", f"mechanism field {field.hex()}")
    return name.decode("ascii")


def decode_greeting(data: bytes) -> Greeting:
    """Decode exactly one greeting.  Padding and filler are not looked at (RFC 23: padding MUST NOT be validated)."""
    check_greeting_prefix(data[:GREETING_SIZE])
    if len(data) < GREETING_SIZE:
        raise IncompleteFrame()
    if len(data) > GREETING_SIZE:
        raise CodecError("trailing-bytes", f"{len(data) - GREETING_SIZE} octets after the greeting")
    return Greeting(
        mechanism=_mechanism_name(data[_MECHANISM_AT:_AS_SERVER_AT]),
        as_server=bool(data[_AS_SERVER_AT]),
        major=data[_MAJOR_AT],
        minor=data[_MINOR_AT],
    )


class GreetingDecoder:
    """Collects the peer's greeting from arbitrary chunks; never holds more than 64 octets."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self.greeting: Greeting | None = None

    def feed(self, data: bytes) -> bytes:
        """Take what the greeting still needs; return the octets that follow it."""
        if self.greeting is not None:
            return data
        take = GREETING_SIZE - len(self._buffer)
        self._buffer += data[:take]
        check_greeting_prefix(bytes(self._buffer))
        if len(self._buffer) == GREETING_SIZE:
            self.greeting = decode_greeting(bytes(self._buffer))
        return data[take:]
