"""common/varint.py: strict unsigned LEB128, expected bytes computed by hand."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reference_impl.common.errors import CodecError, IncompleteFrame
from reference_impl.common.varint import (
    MAX_UVARINT_VALUE,
    decode_uvarint,
    encode_uvarint,
    uvarint_size,
)

# value -> bytes, each worked out from the 7-bit groups, least significant first
HAND = [
    (0, "00"),
    (1, "01"),
    (127, "7f"),
    (128, "8001"),           # 128 = 1<<7: group0 = 0 (+cont) = 80, group1 = 01
    (300, "ac02"),           # 300 = 0b10_0101100: 0x2c|0x80 = ac, 2
    (16383, "ff7f"),         # 2^14-1: two full groups
    (16384, "808001"),
    (2**32, "8080808010"),   # 2^32 = 16 << 28
    (2**63 - 1, "ffffffffffffffff7f"),  # 63 one-bits = nine groups
]


@pytest.mark.parametrize("value,hexbytes", HAND)
def test_encode_matches_hand_computation(value: int, hexbytes: str) -> None:
    assert encode_uvarint(value).hex() == hexbytes
    assert uvarint_size(value) == len(hexbytes) // 2


@pytest.mark.parametrize("value,hexbytes", HAND)
def test_decode_matches_hand_computation(value: int, hexbytes: str) -> None:
    data = bytes.fromhex("aa" + hexbytes + "bb")
    assert decode_uvarint(data, 1) == (value, 1 + len(hexbytes) // 2)


@pytest.mark.parametrize("hexbytes,code", [
    ("8000", "varint-overlong"),
    ("8100", "varint-overlong"),
    ("ff8000", "varint-overlong"),
    ("80" * 9 + "00", "varint-overlong"),      # 10 bytes of zero
    ("80" * 9 + "01", "varint-too-large"),     # 2^63
    ("ff" * 9 + "01", "varint-too-large"),     # 2^64-1
    ("80" * 10 + "00", "varint-too-long"),     # 11 bytes
    ("80" * 10, "varint-too-long"),            # 10th byte continues: no 11th needed
])
def test_invalid_varints(hexbytes: str, code: str) -> None:
    with pytest.raises(CodecError) as err:
        decode_uvarint(bytes.fromhex(hexbytes))
    assert err.value.code == code


def test_too_large_is_found_before_the_varint_ends() -> None:
    # 2^64 worth of bits already in the first 10 bytes, and the input stops there
    with pytest.raises(CodecError) as err:
        decode_uvarint(bytes.fromhex("ff" * 9 + "ff"))
    assert err.value.code == "varint-too-large"


def test_smaller_bounds_for_other_protocols() -> None:
    assert decode_uvarint(b"\xff\x01", max_value=255) == (255, 2)
    with pytest.raises(CodecError) as err:
        decode_uvarint(b"\x80\x02", max_value=255)
    assert err.value.code == "varint-too-large"
    with pytest.raises(CodecError) as err:
        decode_uvarint(b"\x80\x80\x01", max_bytes=2)
    assert err.value.code == "varint-too-long"
    with pytest.raises(CodecError):
        encode_uvarint(256, max_value=255)


@pytest.mark.parametrize("hexbytes", ["", "80", "ff", "8080", "ff" * 8])
def test_incomplete(hexbytes: str) -> None:
    with pytest.raises(IncompleteFrame):
        decode_uvarint(bytes.fromhex(hexbytes))


def test_lenient_decoding_accepts_overlong_and_caller_can_tell() -> None:
    value, end = decode_uvarint(bytes.fromhex("810000"), strict=False)
    assert (value, end) == (1, 2)
    assert end != uvarint_size(value)  # how a lenient caller notices
    with pytest.raises(CodecError) as err:  # bounds still apply when lenient
        decode_uvarint(bytes.fromhex("80" * 10 + "00"), strict=False)
    assert err.value.code == "varint-too-long"


@pytest.mark.parametrize("value,code", [(-1, "varint-negative"), (2**63, "varint-too-large")])
def test_encode_refuses(value: int, code: str) -> None:
    with pytest.raises(CodecError) as err:
        encode_uvarint(value)
    assert err.value.code == code


@settings(max_examples=300, deadline=None)
@given(st.integers(0, MAX_UVARINT_VALUE))
def test_roundtrip_is_minimal(value: int) -> None:
    data = encode_uvarint(value)
    assert decode_uvarint(data) == (value, len(data))
    assert len(data) == uvarint_size(value) <= 9
    assert all(b & 0x80 for b in data[:-1]) and not data[-1] & 0x80


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=12))
def test_random_bytes_raise_only_codec_errors(data: bytes) -> None:
    try:
        value, end = decode_uvarint(data)
    except (CodecError, IncompleteFrame):
        return
    assert encode_uvarint(value) == data[:end]  # strict: only minimal forms decode
