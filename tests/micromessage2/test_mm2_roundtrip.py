"""Hypothesis: round trips for every frame kind and text grammar, noise, and chunking invariance."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from reference_impl.common.errors import CodecError
from reference_impl.micromessage2.codec import (
    CommandFrame, ErrorFrame, ExtensionFrame, Handshake, MessageFrame, StreamDecoder, decode_frame, decode_frames,
    decode_handshake, encode_frame, encode_handshake, join, split,
)
from reference_impl.micromessage2.extensions import (
    Command, Extension, format_command, format_extension_list, format_filter_value, format_properties,
    parse_command, parse_extension_list, parse_filter_value, parse_properties,
)

SETTINGS = settings(max_examples=150, deadline=None)

fields = st.from_regex(r"[a-z0-9-]{1,12}", fullmatch=True)
ascii_text = st.text(st.characters(min_codepoint=0, max_codepoint=127), max_size=40)
payloads = st.one_of(st.binary(max_size=40), st.binary(min_size=250, max_size=600))
values = st.text(max_size=20)
property_values = st.from_regex(r"[\x21-\x3a\x3c-\x7e]{1,20}", fullmatch=True)

destinations = st.text(max_size=30).filter(lambda s: len(s.encode()) <= 255)
message_frames = st.builds(MessageFrame, st.integers(1, 65535), destinations, ascii_text, payloads, st.booleans())
frames = st.one_of(
    message_frames,
    st.builds(CommandFrame, payloads, st.booleans()),
    st.builds(ExtensionFrame, st.integers(1, 255), payloads, st.booleans()),
    st.builds(ErrorFrame, payloads, st.booleans()),
)
handshakes = st.builds(Handshake, st.integers(0, 255), st.integers(0, 255), ascii_text, ascii_text, ascii_text,
                       st.integers(0, 255))


@SETTINGS
@given(frames, st.booleans())
def test_frame_round_trip(frame, force_large) -> None:
    wire = encode_frame(frame, force_large=force_large)
    assert decode_frame(wire) == frame
    assert bool(wire[0] & 8) == (force_large or len(frame.payload) > 255)


@SETTINGS
@given(handshakes)
def test_handshake_round_trip(hs) -> None:
    assert decode_handshake(encode_handshake(hs)) == hs


@SETTINGS
@given(st.lists(frames, max_size=6), st.data())
def test_stream_decoder_is_chunking_invariant(frame_list, data) -> None:
    wire = b"".join(encode_frame(f) for f in frame_list)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(wire)), max_size=8)))
    decoder = StreamDecoder()
    out = []
    for start, end in zip([0, *cuts], [*cuts, len(wire)]):
        decoder.feed(wire[start:end])
        while (frame := decoder.next_frame()) is not None:
            out.append(frame)
    assert out == frame_list
    assert decoder.buffered == 0


@SETTINGS
@given(message_frames, st.integers(1, 64))
def test_split_then_join(frame, size) -> None:
    whole = MessageFrame(frame.seq, frame.destination, frame.properties, frame.payload)
    fragments = split(whole, size)
    assert all(len(f.payload) <= size for f in fragments)
    assert join(decode_frames(b"".join(encode_frame(f) for f in fragments))) == whole


@SETTINGS
@given(st.binary(max_size=80))
def test_noise_raises_only_codec_error(noise) -> None:
    for decode in (decode_frame, decode_handshake, decode_frames):
        try:
            decode(noise)
        except CodecError:
            pass
    decoder = StreamDecoder(max_frame=64)
    decoder.feed(noise)
    try:
        while decoder.next_handshake() is not None and decoder.next_frame() is not None:
            pass
    except CodecError:
        pass


@SETTINGS
@given(st.text(max_size=40))
def test_text_noise_raises_only_codec_error(text) -> None:
    for parse in (parse_extension_list, parse_properties, parse_command, parse_filter_value):
        try:
            parse(text)
        except CodecError:
            pass


extension_lists = st.lists(st.builds(Extension, fields, st.dictionaries(fields, values, max_size=3)),
                           max_size=4, unique_by=lambda e: e.name)


@SETTINGS
@given(extension_lists)
def test_extension_list_round_trip(extensions) -> None:
    text = format_extension_list(extensions)
    assert not text.endswith(";")
    assert parse_extension_list(text) == extensions
    if extensions:
        assert parse_extension_list(text + ";") == extensions


@SETTINGS
@given(st.dictionaries(fields, property_values, max_size=4))
def test_properties_round_trip(pairs) -> None:
    assert parse_properties(format_properties(pairs)) == pairs


@SETTINGS
@given(st.builds(Command, fields, st.dictionaries(fields, values, max_size=3)))
def test_command_round_trip(command) -> None:
    assert parse_command(format_command(command)) == command


@SETTINGS
@given(st.one_of(
    st.tuples(st.just("number"), st.integers(-(2**63), 2**63 - 1)),
    st.tuples(st.just("date"), st.floats(0, 4e9, allow_nan=False)),
    st.tuples(st.just("text"), values),
))
def test_filter_value_round_trip(kind_value) -> None:
    kind, value = kind_value
    assert parse_filter_value(format_filter_value(kind, value)) == (kind, value)
