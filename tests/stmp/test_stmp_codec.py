"""STMP codec against bytes from independent sources.

AUTHORS: the authors' own codec tests, quoted in docs/profiles/stmp.md.
HAND: computed by hand from the layout in docs/profiles/stmp.md: header byte =
KIND << 6 | ENCODING << 3 (Request ENCODING 5 = 0x40 | 0x28 = 0x68, Notify
ENCODING 5 = 0xA8, Response ENCODING 5 = 0xE8, Response ENCODING 2 = 0xD0),
then ID u16, ACTION u32, STATUS u8, PS u32, big endian.
"""

from __future__ import annotations

import pytest

from reference_impl.common.errors import CodecError
from reference_impl.stmp.codec import (
    Encoding,
    Kind,
    Notify,
    PayloadTooLarge,
    Ping,
    Request,
    Response,
    Status,
    StreamDecoder,
    attach_split_payload,
    classify_first_byte,
    decode_binary,
    decode_text,
    decode_versions,
    encode_binary,
    encode_text,
    encode_versions,
)

HELLO = b'["hello","world"]'
AUTHORS_REQUEST = Request(id=1, action=305419896, encoding=2, payload=HELLO)
AUTHORS_RESPONSE = Response(id=0x1234, status=0x32, encoding=0, payload=b"")


def test_enum_values_match_the_profile() -> None:
    assert [k.value for k in Kind] == [0, 1, 2, 3]
    assert [e.value for e in Encoding] == [0, 1, 2, 3, 4, 5]
    assert Status.REQUEST_TIMEOUT == 0x25 and Status.VERSION_NOT_SUPPORTED == 0x35
    assert Status.REQUEST_ENTITY_TOO_LARGE == 0x26 and Status.NOT_IMPLEMENTED == 0x31
    assert len(Status) == 18


def test_authors_request_text_and_binary_stream() -> None:
    wire = bytes.fromhex("50 0001 12345678 00000011") + HELLO
    assert len(HELLO) == 0x11
    assert encode_binary(AUTHORS_REQUEST, with_ps=True) == wire
    assert decode_binary(wire, with_ps=True) == AUTHORS_REQUEST
    text = '1|2|1|305419896|["hello","world"]'
    assert encode_text(AUTHORS_REQUEST) == text
    assert decode_text(text) == AUTHORS_REQUEST


def test_authors_request_message_form_drops_ps() -> None:
    wire = bytes.fromhex("50 0001 12345678") + HELLO
    assert encode_binary(AUTHORS_REQUEST, with_ps=False) == wire
    assert decode_binary(wire, with_ps=False) == AUTHORS_REQUEST


@pytest.mark.parametrize("with_ps", [True, False])
def test_authors_response_without_payload(with_ps: bool) -> None:
    wire = bytes.fromhex("c0 1234 32")
    assert encode_binary(AUTHORS_RESPONSE, with_ps=with_ps) == wire
    assert decode_binary(wire, with_ps=with_ps) == AUTHORS_RESPONSE
    assert encode_text(AUTHORS_RESPONSE) == "3|0|4660|50"
    assert decode_text("3|0|4660|50") == AUTHORS_RESPONSE


HAND = [
    (Ping(), "00", "00", "0"),
    (Notify(0x101, 5, b"ab"), "a8 00000101 00000002 6162", "a8 00000101 6162", "2|5|257|ab"),
    (Response(7, 0, 2, b"{}"), "d0 0007 00 00000002 7b7d", "d0 0007 00 7b7d", "3|2|7|0|{}"),
    (Request(0, 0, 5, b"\x01"), "68 0000 00000000 00000001 01", "68 0000 00000000 01", None),
    (Request(0xFFFF, 0xFFFFFFFF, 0, b""), "40 ffff ffffffff", "40 ffff ffffffff", "1|0|65535|4294967295"),
    (Notify(9, 0, b""), "80 00000009", "80 00000009", "2|0|9"),
    (Response(1, 0xFF, 3, b"\x80"), "d8 0001 ff 00000001 80", "d8 0001 ff 80", None),
]


@pytest.mark.parametrize(("message", "stream", "framed", "text"), HAND)
def test_hand_computed_forms(message, stream: str, framed: str, text: str | None) -> None:
    assert encode_binary(message, with_ps=True) == bytes.fromhex(stream)
    assert decode_binary(bytes.fromhex(stream), with_ps=True) == message
    assert encode_binary(message, with_ps=False) == bytes.fromhex(framed)
    assert decode_binary(bytes.fromhex(framed), with_ps=False) == message
    if text is not None:
        assert encode_text(message) == text
        assert decode_text(text) == message


@pytest.mark.parametrize(("hexwire", "with_ps", "code"), [
    ("", True, "truncated"),
    ("41", True, "reserved-bits"),
    ("ff", True, "reserved-bits"),
    ("70 0001 00000001 00000001 00", True, "encoding-invalid"),  # 01 110 000: ENCODING 6
    ("b8 00000001 00", False, "encoding-invalid"),  # 10 111 000: ENCODING 7
    ("08", True, "ping-encoding"),
    ("28", False, "ping-encoding"),
    ("00 00", True, "trailing-bytes"),
    ("00 00", False, "trailing-bytes"),
    ("40 0001", True, "truncated"),
    ("c0 0001", False, "truncated"),
    ("68 0001 00000100 000000", True, "truncated"),
    ("68 0001 00000100 00000005 61", True, "truncated"),
    ("68 0001 00000100 00000001 6162", True, "trailing-bytes"),
    ("68 0001 00000100 00000000", True, "empty-payload"),
    ("68 0001 00000100", False, "empty-payload"),
    ("40 0001 00000100 61", False, "trailing-bytes"),
])
def test_binary_decode_errors(hexwire: str, with_ps: bool, code: str) -> None:
    with pytest.raises(CodecError) as info:
        decode_binary(bytes.fromhex(hexwire), with_ps=with_ps)
    assert info.value.code == code


def test_too_large_names_the_request_id_before_payload_arrives() -> None:
    head = bytes.fromhex("68 0009 00000100 00000011")  # PS 17, limit 16, no payload byte yet
    with pytest.raises(PayloadTooLarge) as info:
        decode_binary(head, with_ps=True, max_payload=16)
    assert info.value.code == "too-large" and info.value.message_id == 9
    with pytest.raises(PayloadTooLarge) as framed:
        decode_binary(bytes.fromhex("a8 00000100") + b"x" * 17, with_ps=False, max_payload=16)
    assert framed.value.message_id is None  # a Notify has no ID


def test_stream_decoder_rejects_huge_ps_as_soon_as_it_is_read() -> None:
    decoder = StreamDecoder(max_payload=1024)
    assert decoder.feed(bytes.fromhex("68 0001 00000100 ffff")) == []
    assert decoder.buffered == 9 and not decoder.at_boundary
    with pytest.raises(CodecError) as info:
        decoder.feed(bytes.fromhex("ffff"))
    assert info.value.code == "too-large"
    with pytest.raises(CodecError):  # stays failed
        decoder.feed(b"")


def test_stream_decoder_one_byte_at_a_time() -> None:
    wire = bytes.fromhex("00 a8 00000101 00000002 6162 c0 1234 32")
    decoder = StreamDecoder()
    got = []
    for byte in wire:
        got += decoder.feed(bytes([byte]))
    assert got == [Ping(), Notify(0x101, 5, b"ab"), AUTHORS_RESPONSE]
    assert decoder.at_boundary and decoder.buffered == 0


def test_stream_decoder_returns_messages_before_invalid_bytes() -> None:
    decoder = StreamDecoder()
    assert decoder.feed(bytes.fromhex("00 c0 1234 32 01")) == [Ping(), AUTHORS_RESPONSE]
    with pytest.raises(CodecError) as info:
        decoder.feed(b"")
    assert info.value.code == "reserved-bits"


@pytest.mark.parametrize(("text", "message"), [
    ("2|5|7", Notify(7, 5, None)),  # split header: payload in the next binary message
    ("1|2|3|4", Request(3, 4, 2, None)),
    ("2|0|7", Notify(7, 0, b"")),
    ("2|5|7|a|b", Notify(7, 5, b"a|b")),
    ("2|5|7||", Notify(7, 5, b"|")),
    ("2|5|7|\u00e9", Notify(7, 5, b"\xc3\xa9")),
    ("3|0|65535|255", Response(65535, 255, 0, b"")),
])
def test_text_decode(text: str, message) -> None:
    assert decode_text(text) == message


@pytest.mark.parametrize(("text", "code"), [
    ("", "truncated"),
    ("4|0|1", "first-byte"),
    ("a", "first-byte"),
    (" 0", "first-byte"),
    ("0|", "trailing-bytes"),
    ("00", "trailing-bytes"),
    ("1|5|1", "truncated"),
    ("1", "truncated"),
    ("11|5|1|2|x", "text-syntax"),
    ("1||1|2|x", "text-syntax"),
    ("1|5|01|7|x", "text-syntax"),
    ("1|5|+1|7|x", "text-syntax"),
    ("1|5|\u0661|7|x", "text-syntax"),  # ARABIC-INDIC DIGIT ONE is not ASCII decimal
    ("1|5|1||x", "text-syntax"),
    ("1|5|1|42949672960|x", "text-syntax"),  # 11 digits: ACTION is at most 10
    ("1|5|1|4294967296|x", "field-range"),
    ("3|0|65536|0", "field-range"),
    ("3|0|1|256", "field-range"),
    ("1|6|1|2|x", "encoding-invalid"),
    ("1|7|1|2|x", "encoding-invalid"),
    ("1|8|1|2|x", "field-range"),
    ("2|5|7|", "empty-payload"),
    ("2|0|7|", "unexpected-payload"),
    ("2|0|7|x", "unexpected-payload"),
])
def test_text_decode_errors(text: str, code: str) -> None:
    with pytest.raises(CodecError) as info:
        decode_text(text)
    assert info.value.code == code


def test_text_payload_limit_counts_utf8_bytes() -> None:
    assert decode_text("2|5|1|\u00e9\u00e9", max_payload=4).payload == b"\xc3\xa9\xc3\xa9"
    with pytest.raises(PayloadTooLarge) as info:
        decode_text("1|5|3|1|\u00e9\u00e9x", max_payload=4)
    assert info.value.message_id == 3


def test_split_payload_attaches_and_checks() -> None:
    header = decode_text("1|5|3|256")
    assert attach_split_payload(header, b"\xff\xfe") == Request(3, 256, 5, b"\xff\xfe")
    with pytest.raises(CodecError) as empty:
        attach_split_payload(header, b"")
    assert empty.value.code == "empty-payload"
    with pytest.raises(PayloadTooLarge):
        attach_split_payload(header, b"abc", max_payload=2)


@pytest.mark.parametrize(("message", "code"), [
    (Request(0x10000, 1, 0, b""), "field-range"),
    (Request(-1, 1, 0, b""), "field-range"),
    (Request(1, 0x100000000, 0, b""), "field-range"),
    (Response(1, 0x100, 0, b""), "field-range"),
    (Notify(1, 6, b"x"), "encoding-invalid"),
    (Notify(1, 7, b"x"), "encoding-invalid"),
    (Notify(1, 8, b"x"), "field-range"),
    (Notify(1, 0, b"x"), "unexpected-payload"),
    (Notify(1, 5, b""), "empty-payload"),
    (Notify(1, 5, None), "split-header"),
])
def test_binary_encode_errors(message, code: str) -> None:
    with pytest.raises(CodecError) as info:
        encode_binary(message, with_ps=True)
    assert info.value.code == code


def test_text_encode_split_header_and_errors() -> None:
    assert encode_text(Notify(1, 5, None)) == "2|5|1"
    assert encode_text(Request(2, 3, 5, None)) == "1|5|2|3"
    with pytest.raises(CodecError) as none_with_zero:
        encode_text(Notify(1, 0, None))
    assert none_with_zero.value.code == "split-header"
    with pytest.raises(CodecError) as binary:
        encode_text(Notify(1, 5, b"\xff"))
    assert binary.value.code == "payload-not-utf8"


@pytest.mark.parametrize(("byte", "form"), [
    (0x30, "text"), (0x33, "text"), (0x00, "binary"), (0x40, "binary"), (0xFF, "binary"),
])
def test_classify_first_byte(byte: int, form: str) -> None:
    assert classify_first_byte(byte) == form


@pytest.mark.parametrize("byte", [0x01, 0x08, 0x2F, 0x34, 0x39, 0x3F])
def test_classify_first_byte_invalid(byte: int) -> None:
    with pytest.raises(CodecError) as info:
        classify_first_byte(byte)
    assert info.value.code == "first-byte"


def test_versions() -> None:
    assert encode_versions([(0, 1)], text=False) == b"\x01"
    assert encode_versions([(0, 1)], text=True) == b"01"
    assert encode_versions([(1, 15), (0, 1)], text=False) == b"\x1f\x01"
    assert encode_versions([(1, 15), (0, 1)], text=True) == b"1f01"
    assert encode_versions([], text=True) == b""
    assert decode_versions(b"\x1f\x01", text=False) == [(1, 15), (0, 1)]
    assert decode_versions(b"1F01", text=True) == [(1, 15), (0, 1)]
    assert decode_versions(b"af", text=True) == [(10, 15)]


@pytest.mark.parametrize("payload", [b"1", b"0g", b"012", b"0x", b" 1"])
def test_text_versions_syntax(payload: bytes) -> None:
    with pytest.raises(CodecError) as info:
        decode_versions(payload, text=True)
    assert info.value.code == "version-syntax"


def test_versions_out_of_range_do_not_encode() -> None:
    with pytest.raises(CodecError) as info:
        encode_versions([(16, 0)], text=False)
    assert info.value.code == "field-range"
