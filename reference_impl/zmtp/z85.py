"""Z85 (ZeroMQ RFC 32), the text form of CURVE keys used by libzmq and its users."""

from __future__ import annotations

from reference_impl.common.errors import CodecError

_ALPHABET = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_VALUES = {char: value for value, char in enumerate(_ALPHABET)}


def z85_encode(data: bytes) -> str:
    if len(data) % 4:
        raise CodecError("bad-z85", f"Z85 encodes multiples of 4 octets, not {len(data)}")
    out = bytearray()
    for at in range(0, len(data), 4):
        value = int.from_bytes(data[at:at + 4], "big")
        out += bytes(_ALPHABET[value // 85**power % 85] for power in range(4, -1, -1))
    return out.decode("ascii")


def z85_decode(text: str) -> bytes:
    raw = text.encode("ascii", "replace")
    if len(raw) % 5:
        raise CodecError("bad-z85", f"Z85 text is a multiple of 5 characters, not {len(raw)}")
    out = bytearray()
    for at in range(0, len(raw), 5):
        value = 0
        for char in raw[at:at + 5]:
            if char not in _VALUES:
                raise CodecError("bad-z85", f"{chr(char)!r} is not a Z85 character")
            value = value * 85 + _VALUES[char]
        if value > 0xFFFFFFFF:
            raise CodecError("bad-z85", f"{raw[at:at + 5].decode()!r} exceeds 32 bits")
        out += value.to_bytes(4, "big")
    return bytes(out)
