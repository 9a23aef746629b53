"""Property tests of the STMP codec: round trips, robustness, chunking."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from reference_impl.common.errors import CodecError
from reference_impl.stmp.codec import (
    Message,
    Notify,
    Ping,
    Request,
    Response,
    StreamDecoder,
    attach_split_payload,
    decode_binary,
    decode_text,
    encode_binary,
    encode_text,
)

FAST = settings(max_examples=150, deadline=None)

ids = st.integers(0, 0xFFFF)
actions = st.integers(0, 0xFFFFFFFF)
statuses = st.integers(0, 0xFF)


def _messages(payloads: st.SearchStrategy[bytes]) -> st.SearchStrategy[Message]:
    """Valid messages: ENCODING 0 has no payload, any other ENCODING a non-empty one."""
    body = st.one_of(st.tuples(st.just(0), st.just(b"")), st.tuples(st.integers(1, 5), payloads))
    return st.one_of(
        st.just(Ping()),
        st.builds(lambda i, a, b: Request(i, a, *b), ids, actions, body),
        st.builds(lambda a, b: Notify(a, *b), actions, body),
        st.builds(lambda i, s, b: Response(i, s, *b), ids, statuses, body),
    )


binary_messages = _messages(st.binary(min_size=1, max_size=64))
text_messages = _messages(st.text(min_size=1, max_size=32).map(lambda s: s.encode("utf-8")))


@FAST
@given(binary_messages, st.booleans())
def test_binary_round_trip(message: Message, with_ps: bool) -> None:
    wire = encode_binary(message, with_ps=with_ps)
    assert decode_binary(wire, with_ps=with_ps) == message
    assert wire[0] >> 6 == {Ping: 0, Request: 1, Notify: 2, Response: 3}[type(message)]
    assert wire[0] & 0x07 == 0


@FAST
@given(text_messages)
def test_text_round_trip(message: Message) -> None:
    text = encode_text(message)
    assert decode_text(text) == message
    assert encode_text(decode_text(text)) == text  # the text form is canonical


@FAST
@given(binary_messages.filter(lambda m: not isinstance(m, Ping) and m.encoding != 0))
def test_split_text_header_round_trip(message: Message) -> None:
    header = decode_text(encode_text(replace(message, payload=None)))
    assert header.payload is None
    assert attach_split_payload(header, message.payload) == message


@FAST
@given(st.binary(max_size=40), st.booleans(), st.integers(0, 64))
def test_random_bytes_raise_only_codec_error(data: bytes, with_ps: bool, limit: int) -> None:
    try:
        decode_binary(data, with_ps=with_ps, max_payload=limit)
    except CodecError:
        pass
    decoder = StreamDecoder(max_payload=limit)
    try:
        decoder.feed(data)
        decoder.feed(b"")
    except CodecError:
        pass
    assert decoder.buffered <= len(data)


@FAST
@given(st.text(alphabet=st.sampled_from("0123456789|a\u00e9\ud800"), max_size=30))
def test_random_text_raises_only_codec_error(text: str) -> None:
    try:
        message = decode_text(text)
    except CodecError:
        return
    assert decode_text(encode_text(message)) == message


def _decode_all(chunks: list[bytes]) -> tuple[list[Message], str | None]:
    decoder = StreamDecoder(max_payload=48)
    got: list[Message] = []
    try:
        for chunk in chunks:
            got += decoder.feed(chunk)
        got += decoder.feed(b"")
    except CodecError as exc:
        return got, exc.code
    return got, None


@FAST
@given(st.lists(binary_messages, max_size=6), st.binary(max_size=12), st.data())
def test_stream_decoder_is_chunking_invariant(messages: list[Message], tail: bytes, data) -> None:
    wire = b"".join(encode_binary(m, with_ps=True) for m in messages) + tail
    cuts = sorted(data.draw(st.lists(st.integers(0, len(wire)), max_size=12)))
    chunks = [wire[a:b] for a, b in zip([0, *cuts], [*cuts, len(wire)])]
    whole = _decode_all([wire])
    assert _decode_all(chunks) == whole
    assert _decode_all([bytes([b]) for b in wire]) == whole
    if not tail:
        expected: list[Message] = []
        for message in messages:
            if len(getattr(message, "payload", b"")) > 48:
                assert whole == (expected, "too-large")
                break
            expected.append(message)
        else:
            assert whole == (expected, None)
