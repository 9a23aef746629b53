"""The ZMTP greeting: hand-computed bytes and the octet-by-octet refusal rules of RFC 23."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reference_impl.common.errors import CodecError, IncompleteFrame
from reference_impl.zmtp.greeting import Greeting, GreetingDecoder, decode_greeting, encode_greeting

# RFC 23 "Worked Example": signature ff 00x8 7f, major 03, minor 00, "NULL", as-server 00, filler.
RFC23_NULL = bytes.fromhex("ff00000000000000007f0300") + b"NULL" + bytes(16) + b"\x00" + bytes(31)


def test_encode_matches_rfc23_worked_example() -> None:
    assert encode_greeting(Greeting("NULL", False, 3, 0)) == RFC23_NULL


def test_curve_server_greeting_bytes() -> None:
    # Octet 11 minor 01 (RFC 37), octets 12-31 "CURVE" + 15 nulls, octet 32 as-server 01.
    wire = encode_greeting(Greeting("CURVE", True))
    assert wire[:12] == bytes.fromhex("ff00000000000000007f0301")
    assert wire[12:32] == b"CURVE" + bytes(15)
    assert wire[32] == 1 and wire[33:] == bytes(31) and len(wire) == 64


def test_padding_is_not_validated() -> None:
    # libzmq puts identity size + 1 in the padding (RFC 23 ZMTP 1.0 detection).
    wire = b"\xff" + (1).to_bytes(8, "big") + RFC23_NULL[9:]
    assert decode_greeting(wire) == Greeting("NULL", False, 3, 0)


@pytest.mark.parametrize("prefix, code", [
    (b"\x01", "bad-signature"),                     # first octet of a ZMTP 1.0 identity frame
    (b"\xff" + bytes(8) + b"\x00", "bad-signature"),  # octet 9 low bit clear: ZMTP 1.0 long frame
    (b"\xff" + bytes(8) + b"\x7f\x01", "unsupported-version"),  # ZMTP 2.0 revision 01
    (b"\xff" + bytes(8) + b"\x7f\x02", "unsupported-version"),
])
def test_old_peers_are_refused_at_the_first_telling_octet(prefix: bytes, code: str) -> None:
    decoder = GreetingDecoder()
    for octet in prefix[:-1]:
        decoder.feed(bytes([octet]))  # nothing wrong yet
    with pytest.raises(CodecError) as info:
        decoder.feed(prefix[-1:])
    assert info.value.code == code


def test_decoder_returns_the_octets_after_the_greeting() -> None:
    decoder = GreetingDecoder()
    wire = encode_greeting(Greeting("PLAIN")) + b"\x04\x08\x07WELCOME"
    assert decoder.feed(wire[:30]) == b""
    assert decoder.greeting is None
    assert decoder.feed(wire[30:]) == b"\x04\x08\x07WELCOME"
    assert decoder.greeting == Greeting("PLAIN", False, 3, 1)
    assert decoder.feed(b"more") == b"more"


def test_mechanism_checked_once_its_20_octets_are_in() -> None:
    wire = encode_greeting(Greeting("NULL"))[:12] + b"NULL\x00X" + bytes(14)
    decoder = GreetingDecoder()
    decoder.feed(wire[:31])
    with pytest.raises(CodecError) as info:
        decoder.feed(wire[31:32])
    assert info.value.code == "bad-mechanism"


def test_short_greeting_is_incomplete() -> None:
    with pytest.raises(IncompleteFrame):
        decode_greeting(RFC23_NULL[:40])


@settings(max_examples=60, deadline=None)
@given(st.from_regex(r"[A-Z0-9_.+-]{1,20}", fullmatch=True), st.booleans(), st.integers(3, 255), st.integers(0, 255))
def test_roundtrip(mechanism: str, as_server: bool, major: int, minor: int) -> None:
    greeting = Greeting(mechanism, as_server, major, minor)
    assert decode_greeting(encode_greeting(greeting)) == greeting


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=0, max_size=80))
def test_random_bytes_raise_only_codec_errors(data: bytes) -> None:
    decoder = GreetingDecoder()
    try:
        rest = decoder.feed(data)
    except CodecError:
        return
    assert decoder.greeting is not None or rest == b""


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 20), max_size=64))
def test_chunking_does_not_change_the_result(cuts: list[int]) -> None:
    wire = encode_greeting(Greeting("CURVE", True)) + b"tail"
    decoder = GreetingDecoder()
    rest = b""
    at = 0
    for size in [*cuts, len(wire)]:
        rest += decoder.feed(wire[at:at + size])
        at += size
    assert decoder.greeting == Greeting("CURVE", True)
    assert rest == b"tail"
