"""Codec unit tests; expected bytes are written out by hand from the spec's field tables."""

from __future__ import annotations

import pytest

from reference_impl.common.errors import CodecError
from reference_impl.micromessage2.codec import (
    MAX_FRAGMENT, CommandFrame, ErrorFrame, ExtensionFrame, Handshake, MessageFrame, StreamDecoder, decode_frame,
    decode_frames, decode_handshake, encode_frame, encode_handshake, error_frame, join, split,
)


def test_seed_client_hello_with_required_len_11() -> None:
    # 1 0 0 4 h u l k | 00 0b j s o n ; d o t n e t | 00 00  (the spec prints 0 10; the string is 11 bytes)
    wire = bytes([1, 0, 0, 4]) + b"hulk" + bytes([0, 11]) + b"json;dotnet" + bytes([0, 0])
    hs = Handshake(1, 0, "hulk", "json;dotnet", "")
    assert encode_handshake(hs) == wire
    assert decode_handshake(wire) == hs


def test_handshake_too_large_before_bytes_arrive() -> None:
    decoder = StreamDecoder(max_frame=100)
    decoder.feed(bytes([1, 0, 0, 0, 0x01, 0x00]))  # required-len 256 > 100
    with pytest.raises(CodecError) as exc:
        decoder.next_handshake()
    assert exc.value.code == "too-large"


def test_message_frame_bytes() -> None:
    frame = MessageFrame(258, "ab", "k:N1;", b"xyz")
    wire = bytes([0x00, 0x01, 0x02, 2]) + b"ab" + bytes([0, 5]) + b"k:N1;" + bytes([3]) + b"xyz"
    assert encode_frame(frame) == wire
    assert decode_frame(wire) == frame


def test_large_payload_exactly_above_255() -> None:
    assert encode_frame(CommandFrame(b"a" * 255))[:2] == bytes([0x01, 0xFF])
    assert encode_frame(CommandFrame(b"a" * 256))[:5] == bytes([0x09, 0, 0, 1, 0])
    assert encode_frame(ErrorFrame(b"e" * 300))[:5] == bytes([0x0C, 0, 0, 0x01, 0x2C])
    assert encode_frame(ExtensionFrame(7, b"e" * 511))[:6] == bytes([0x0A, 7, 0, 0, 0x01, 0xFF])


def test_force_large_on_short_payload_decodes_the_same() -> None:
    frame = ExtensionFrame(3, b"\x00\x04")
    wire = encode_frame(frame, force_large=True)
    assert wire == bytes([0x0A, 3, 0, 0, 0, 2, 0, 4])
    assert decode_frame(wire) == frame


def test_error_frame_reason_round_trip() -> None:
    frame = error_frame("missing-required-extension: x-foo")
    assert encode_frame(frame) == bytes([4, 33]) + b"missing-required-extension: x-foo"
    assert frame.reason == "missing-required-extension: x-foo"
    assert ErrorFrame(b"\xff").reason == "\ufffd"


def test_four_gib_length_costs_nothing() -> None:
    with pytest.raises(CodecError) as exc:
        decode_frame(bytes([0x0C, 0xFF, 0xFF, 0xFF, 0xFF]))
    assert exc.value.code == "too-large"


def test_stream_decoder_holds_partial_frames() -> None:
    wire = encode_frame(MessageFrame(1, "q", "", b"hello")) + encode_frame(ErrorFrame(b"bye"))
    decoder = StreamDecoder()
    decoder.feed(wire[:4])
    assert decoder.next_frame() is None
    assert decoder.buffered == 4
    decoder.feed(wire[4:])
    assert decoder.next_frame() == MessageFrame(1, "q", "", b"hello")
    assert decoder.next_frame() == ErrorFrame(b"bye")
    assert decoder.next_frame() is None and decoder.buffered == 0


def test_next_handshake_returns_the_error_sent_instead() -> None:
    decoder = StreamDecoder()
    decoder.feed(bytes([0x04, 3]) + b"bye")
    assert decoder.next_handshake() == ErrorFrame(b"bye")


def test_split_over_one_mib() -> None:
    payload = bytes(range(256)) * (MAX_FRAGMENT // 256) + b"tail"
    fragments = split(MessageFrame(9, "big", "k:N1;", payload))
    assert [len(f.payload) for f in fragments] == [MAX_FRAGMENT, 4]
    assert [f.continued for f in fragments] == [True, False]
    assert all((f.seq, f.destination, f.properties) == (9, "big", "k:N1;") for f in fragments)
    first = encode_frame(fragments[0])
    # flags CONTINUED | LARGE_PAYLOAD, seq 00 09, dest-len 3 "big", props-len 00 05 "k:N1;", length 00 10 00 00
    assert first[:18] == bytes([0x18, 0, 9, 3]) + b"big" + bytes([0, 5]) + b"k:N1;" + bytes([0, 0x10, 0, 0])
    wire = b"".join(encode_frame(f) for f in fragments)
    assert join(decode_frames(wire)) == MessageFrame(9, "big", "k:N1;", payload)


def test_exactly_one_mib_is_not_split() -> None:
    frame = MessageFrame(1, "", "", b"\x00" * MAX_FRAGMENT)
    assert split(frame) == [frame]


@pytest.mark.parametrize(("fragments", "code"), [
    ([MessageFrame(1, "a", "", b"x", True), MessageFrame(2, "a", "", b"y")], "fragment-mismatch"),
    ([MessageFrame(1, "a", "", b"x", True), CommandFrame(b"y")], "fragment-mismatch"),
    ([MessageFrame(1, "a", "", b"x", True)], "fragment-order"),
    ([CommandFrame(b"x"), CommandFrame(b"y")], "fragment-order"),
    ([], "fragment-order"),
])
def test_join_rejects(fragments: list, code: str) -> None:
    with pytest.raises(CodecError) as exc:
        join(fragments)
    assert exc.value.code == code


@pytest.mark.parametrize(("frame", "code"), [
    (MessageFrame(0, "", "", b""), "field-range"),
    (MessageFrame(1, "d" * 256, "", b""), "field-too-long"),
    (MessageFrame(1, "", "p" * 65536, b""), "field-too-long"),
    (ExtensionFrame(0, b""), "field-range"),
])
def test_encoder_refuses(frame: object, code: str) -> None:
    with pytest.raises(CodecError) as exc:
        encode_frame(frame)  # type: ignore[arg-type]
    assert exc.value.code == code
