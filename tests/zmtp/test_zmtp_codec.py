"""ZMTP frames: hand-computed bytes, bounds, round trips, noise and chunking."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reference_impl.common.errors import CodecError, IncompleteFrame
from reference_impl.zmtp.codec import Frame, StreamDecoder, decode_frame, encode_frame


@pytest.mark.parametrize("frame, wire", [
    (Frame(b""), "0000"),
    (Frame(b"hi", more=True), "01026869"),
    (Frame(b"\x04PING\x00\x00", command=True), "040704" + b"PING".hex() + "0000"),
    (Frame(b"x" * 255), "00ff" + "78" * 255),
    (Frame(b"x" * 256), "02" + "0000000000000100" + "78" * 256),
    (Frame(b"x" * 256, more=True), "03" + "0000000000000100" + "78" * 256),
    (Frame(b"x" * 256, command=True), "06" + "0000000000000100" + "78" * 256),
])
def test_encode_hand_computed(frame: Frame, wire: str) -> None:
    assert encode_frame(frame).hex() == wire
    assert decode_frame(bytes.fromhex(wire)) == (frame, len(wire) // 2)


def test_long_form_for_a_short_body_decodes() -> None:
    assert decode_frame(b"\x02" + (3).to_bytes(8, "big") + b"abc") == (Frame(b"abc"), 12)
    assert encode_frame(Frame(b"abc"), long=True) == b"\x02" + (3).to_bytes(8, "big") + b"abc"


def test_too_large_is_refused_from_the_size_field_alone() -> None:
    decoder = StreamDecoder(max_frame=1000)
    with pytest.raises(CodecError) as info:
        decoder.feed(b"\x02" + (2**40).to_bytes(8, "big"))
    assert info.value.code == "too-large"
    assert decoder.buffered == 9  # nothing was allocated from the size


def test_size_beyond_2_63_is_bad_size() -> None:
    with pytest.raises(CodecError) as info:
        decode_frame(b"\x02" + (2**63).to_bytes(8, "big"))
    assert info.value.code == "bad-size"


@pytest.mark.parametrize("flags", [0x08, 0x10, 0x80, 0x05, 0x07])
def test_reserved_bits_and_command_more_are_refused(flags: int) -> None:
    with pytest.raises(CodecError) as info:
        decode_frame(bytes([flags, 0]))
    assert info.value.code == "bad-flags"


def test_incomplete_input() -> None:
    for partial in (b"", b"\x00", b"\x02\x00\x00", b"\x00\x03ab"):
        with pytest.raises(IncompleteFrame):
            decode_frame(partial)


def test_stream_decoder_waits_for_the_whole_body() -> None:
    decoder = StreamDecoder()
    body = bytes(range(256)) * 5000  # 1.28 MB
    wire = encode_frame(Frame(body, more=True)) + encode_frame(Frame(b"end"))
    frames = []
    for at in range(0, len(wire), 65536):
        frames += decoder.feed(wire[at:at + 65536])
    assert frames == [Frame(body, more=True), Frame(b"end")]
    assert decoder.buffered == 0


frames_strategy = st.lists(
    st.builds(Frame, st.binary(max_size=600), st.booleans(), st.booleans()).filter(lambda f: not (f.more and f.command)),
    max_size=8,
)


@settings(max_examples=80, deadline=None)
@given(frames_strategy)
def test_roundtrip(frames: list[Frame]) -> None:
    wire = b"".join(encode_frame(f) for f in frames)
    assert StreamDecoder().feed(wire) == frames


@settings(max_examples=80, deadline=None)
@given(frames_strategy, st.lists(st.integers(1, 300), max_size=30))
def test_chunking_does_not_change_the_frames(frames: list[Frame], cuts: list[int]) -> None:
    wire = b"".join(encode_frame(f) for f in frames)
    decoder = StreamDecoder()
    got: list[Frame] = []
    at = 0
    for size in [*cuts, len(wire)]:
        got += decoder.feed(wire[at:at + size])
        at += size
    assert got == frames


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_random_bytes_raise_only_codec_errors(data: bytes) -> None:
    decoder = StreamDecoder(max_frame=4096)
    try:
        frames = decoder.feed(data)
    except CodecError:
        return
    assert sum(len(encode_frame(f, long=None)) for f in frames) <= len(data)
