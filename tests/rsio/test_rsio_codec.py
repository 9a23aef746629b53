"""rsio codec: round trips for every message, random input, chunking, bounds."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reference_impl.common.errors import CodecError, IncompleteFrame
from reference_impl.common.varint import uvarint_size
from reference_impl.rsio.codec import (
    CORE_TYPES,
    LONG_MAX,
    Cancel,
    ClientHello,
    ExtensionMessage,
    Goodbye,
    OnComplete,
    OnError,
    OnNext,
    OnNextLastPart,
    OnNextPacked,
    OnNextPart,
    Request,
    ServerHello,
    StreamDecoder,
    Subscribe,
    Subscribed,
    decode_exact,
    decode_message,
    encode_message,
)

FAST = settings(max_examples=150, deadline=None)
longs = st.integers(0, LONG_MAX)
small_ids = st.integers(0, 300)
text = st.text(max_size=12)
blobs = st.binary(max_size=24)
LAYOUTS = {64: ("varint", "bytes"), 200: ("string", "varint")}

variable_messages = st.one_of(
    st.builds(ClientHello, longs, st.lists(longs, max_size=4).map(tuple)),
    st.builds(ServerHello, longs, st.lists(longs, max_size=4).map(tuple)),
    st.builds(Goodbye, text),
    st.builds(Subscribe, text, longs, longs),
    st.builds(Request, longs, longs),
    st.builds(Cancel, longs),
    st.builds(Subscribed, longs, longs),
    st.builds(OnNext, longs, blobs),
    st.builds(OnComplete, longs),
    st.builds(OnError, longs, text),
    st.builds(OnNextPart, longs, longs, blobs),
    st.builds(OnNextLastPart, longs, longs, blobs),
    st.builds(ExtensionMessage, st.just(64), st.tuples(longs, blobs)),
    st.builds(ExtensionMessage, st.just(200), st.tuples(text, longs)),
)


@st.composite
def fixed_messages(draw) -> tuple[int, OnNext | OnNextPacked]:
    size = draw(st.integers(1, 9))
    element = st.binary(min_size=size, max_size=size)
    sid = draw(longs)
    if draw(st.booleans()):
        return size, OnNext(sid, draw(element))
    return size, OnNextPacked(sid, tuple(draw(st.lists(element, max_size=5))))


def test_every_core_type_is_covered() -> None:
    assert sorted(CORE_TYPES) == list(range(1, 14))


@FAST
@given(variable_messages)
def test_roundtrip_variable_size(message) -> None:
    data = encode_message(message)
    assert decode_exact(data, layouts=LAYOUTS) == message
    # a prefix is never a whole message: the format is self-delimiting
    with pytest.raises(IncompleteFrame):
        decode_message(data[:-1], layouts=LAYOUTS)


@FAST
@given(fixed_messages())
def test_roundtrip_fixed_size(sized) -> None:
    size, message = sized
    data = encode_message(message, element_size=size)
    assert decode_exact(data, element_size=lambda sid: size) == message
    if isinstance(message, OnNext):  # no length prefix: type, Id, raw element
        assert data.endswith(message.element)
        assert len(data) == 1 + uvarint_size(message.subscriber) + size


def test_fixed_size_element_has_no_length_prefix() -> None:
    # hand: 08 type, 01 subscriber, then the 4 raw bytes
    assert encode_message(OnNext(1, b"\x00\x01\x02\x03"), element_size=4).hex() == "080100010203"
    assert encode_message(OnNext(1, b"\x00\x01\x02\x03")).hex() == "08010400010203"


def test_element_size_lookup_is_per_subscriber() -> None:
    sizes = {1: 2}
    data = bytes.fromhex("080161620802016308030263 64".replace(" ", ""))
    first, end = decode_message(data, 0, element_size=lambda s: sizes.get(s, 0))
    second, end = decode_message(data, end, element_size=lambda s: sizes.get(s, 0))
    third, end = decode_message(data, end, element_size=lambda s: sizes.get(s, 0))
    assert (first, second, third) == (OnNext(1, b"ab"), OnNext(2, b"c"), OnNext(3, b"cd"))
    assert end == len(data)


@pytest.mark.parametrize("message,code", [
    (Request(1, -1), "varint-negative"),
    (Request(1, LONG_MAX + 1), "varint-too-large"),
    (Goodbye("\ud800"), "invalid-utf8"),
    (ExtensionMessage(63, ()), "not-extension-type"),
    (ExtensionMessage(64, (1.5,)), "bad-field"),
    (OnNextPacked(1, (b"a",)), "not-fixed-size"),
])
def test_encoder_refuses(message, code: str) -> None:
    with pytest.raises(CodecError) as err:
        encode_message(message)
    assert err.value.code == code


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=40), st.integers(0, 8))
def test_random_bytes_raise_only_codec_errors(data: bytes, size: int) -> None:
    try:
        decode_exact(data, max_message=32, element_size=lambda sid: size, layouts=LAYOUTS)
    except CodecError:
        pass
    try:
        decode_message(data, max_message=32, element_size=lambda sid: size, layouts=LAYOUTS)
    except (CodecError, IncompleteFrame):
        pass


@FAST
@given(st.lists(variable_messages, min_size=1, max_size=6), st.data())
def test_chunking_does_not_change_the_messages(messages, data) -> None:
    wire = b"".join(encode_message(m) for m in messages)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(wire)), max_size=8)))
    decoder = StreamDecoder(layouts=LAYOUTS)
    decoded = []
    for start, end in zip([0, *cuts], [*cuts, len(wire)]):
        decoder.feed(wire[start:end])
        decoded.extend(decoder)
    assert decoded == messages
    assert decoder.buffered == 0


def test_one_byte_at_a_time_with_fixed_size_switched_on_by_subscribed() -> None:
    # subscribed(1, 2) must be processed before the onNext behind it is decoded
    sizes: dict[int, int] = {}
    wire = bytes.fromhex("070102" "08016162" "0b01026364 6566".replace(" ", ""))
    decoder = StreamDecoder(element_size=lambda s: sizes.get(s, 0))
    out = []
    for byte in wire:
        decoder.feed(bytes([byte]))
        for message in decoder:
            if isinstance(message, Subscribed):
                sizes[message.subscriber] = message.element_size
            out.append(message)
    assert out == [Subscribed(1, 2), OnNext(1, b"ab"), OnNextPacked(1, (b"cd", b"ef"))]


def test_stream_decoder_refuses_huge_length_before_the_bytes() -> None:
    decoder = StreamDecoder(max_message=1 << 20)
    decoder.feed(bytes.fromhex("0801ffffffff0f"))  # onNext with a 4 GiB element
    with pytest.raises(CodecError) as err:
        decoder.next_message()
    assert err.value.code == "too-large"


def test_stream_decoder_waits_without_sizing_a_buffer() -> None:
    decoder = StreamDecoder(max_message=1 << 20)
    decoder.feed(bytes.fromhex("0380800401"))  # goodbye, reason length 65536, 1 byte so far
    assert decoder.next_message() is None
    assert decoder.buffered == 5


def test_max_message_is_inclusive() -> None:
    data = encode_message(Goodbye("bye"))
    assert len(data) == 5
    assert decode_exact(data, max_message=5) == Goodbye("bye")
    with pytest.raises(CodecError) as err:
        decode_exact(data, max_message=4)
    assert err.value.code == "too-large"


def test_many_hello_ids_stay_within_max_message() -> None:
    data = encode_message(ClientHello(0, tuple([LONG_MAX] * 10)))  # 3 + 10*9 = 93 bytes
    assert decode_exact(data, max_message=93).extensions == tuple([LONG_MAX] * 10)
    with pytest.raises(CodecError) as err:
        decode_exact(data, max_message=92)
    assert err.value.code == "too-large"
