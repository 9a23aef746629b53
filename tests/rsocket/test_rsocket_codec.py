"""RSocket codec against frames written by hand from Protocol.md's layouts.

Each expected byte string is typed from the field tables of
https://github.com/rsocket/rsocket/blob/master/Protocol.md, with the field
breakdown beside it; none comes from our encoder.  Type-and-flags word:
type << 10 | I 0x200 | M 0x100 | F/R 0x80 | C/L 0x40 | N 0x20.
"""

from __future__ import annotations

import pytest

from reference_impl.common.errors import CodecError
from reference_impl.rsocket.codec import (
    Cancel, Error, Ext, FrameError, Keepalive, Lease, MetadataPush, Payload, RequestChannel,
    RequestFnf, RequestN, RequestResponse, RequestStream, Resume, ResumeOk, Setup, TcpDecoder,
    decode_frame, decode_tcp_exact, decode_websocket, encode_frame, encode_tcp,
)

H = bytes.fromhex

# (frame, wire) pairs; wire is a whole frame without the TCP length prefix.
ROUNDTRIP = [
    (Setup(1, 0, 500, 2000, "a", "b"),
     # stream 0 | SETUP 0x01<<10 = 0400 | major 0001 minor 0000 | keepalive 000001f4 (500)
     # | lifetime 000007d0 (2000) | mime len 01 'a' | mime len 01 'b'
     H("00000000" "0400" "0001" "0000" "000001f4" "000007d0" "0161" "0162")),
    (Setup(1, 0, 1, 1, "", "", resume_token=b"\xaa", lease=True, metadata=b"m", data=b"d"),
     # stream 0 | 0400|M 0100|R 0080|L 0040 = 05c0 | 0001 0000 | 00000001 | 00000001
     # | token len 0001 token aa | mime 00 | mime 00 | metadata len 000001 'm' | 'd'
     H("00000000" "05c0" "0001" "0000" "00000001" "00000001" "0001aa" "00" "00" "0000016d" "64")),
    (Lease(1000, 5),
     # stream 0 | LEASE 0x02<<10 = 0800 | ttl 000003e8 | number 00000005
     H("00000000" "0800" "000003e8" "00000005")),
    (Lease(1, 2, metadata=b"xy"),
     # 0800|M = 0900 | ttl 00000001 | number 00000002 | metadata to the end, no length
     H("00000000" "0900" "00000001" "00000002" "7879")),
    (Keepalive(True, 0, b"hi"),
     # stream 0 | KEEPALIVE 0x03<<10|R = 0c80 | position 0000000000000000 | data 'hi'
     H("00000000" "0c80" "0000000000000000" "6869")),
    (RequestResponse(1, data=b"echo:x"),
     # stream 1 | 0x04<<10 = 1000 | data 'echo:x'
     H("00000001" "1000" "6563686f3a78")),
    (RequestResponse(3, metadata=b"md", data=b"", follows=True),
     # stream 3 | 1000|M|F = 1180 | metadata length 000002 | 'md' | no data
     H("00000003" "1180" "000002" "6d64")),
    (RequestFnf(5, data=b"z"),
     # stream 5 | 0x05<<10 = 1400 | 'z'
     H("00000005" "1400" "7a")),
    (RequestStream(7, 0x7FFFFFFF, data=b"r"),
     # stream 7 | 0x06<<10 = 1800 | initial n 7fffffff | 'r'
     H("00000007" "1800" "7fffffff" "72")),
    (RequestChannel(9, 1, metadata=b"", data=b"c", complete=True),
     # stream 9 | 0x07<<10|M|C = 1d40 | n 00000001 | metadata length 000000 | 'c'
     H("00000009" "1d40" "00000001" "000000" "63")),
    (RequestN(2, 3),
     # stream 2 | 0x08<<10 = 2000 | n 00000003
     H("00000002" "2000" "00000003")),
    (Cancel(0x7FFFFFFF),
     # stream 7fffffff | 0x09<<10 = 2400
     H("7fffffff" "2400")),
    (Payload(1, data=b"", next=True),
     # stream 1 | 0x0a<<10|N = 2820 | empty data (onNext of 0 bytes)
     H("00000001" "2820")),
    (Payload(1, metadata=b"a", data=b"b", next=True, complete=True),
     # stream 1 | 2800|M|C|N = 2960 | 000001 'a' | 'b'
     H("00000001" "2960" "000001" "61" "62")),
    (Error(0, 0x101, b"bye"),
     # stream 0 | 0x0b<<10 = 2c00 | code 00000101 CONNECTION_ERROR | 'bye'
     H("00000000" "2c00" "00000101" "627965")),
    (MetadataPush(b"mp"),
     # stream 0 | 0x0c<<10|M = 3100 | metadata to the end
     H("00000000" "3100" "6d70")),
    (Resume(1, 0, b"t", 5, 2),
     # stream 0 | 0x0d<<10 = 3400 | 0001 0000 | token len 0001 't' | server pos 8 bytes 5
     # | client pos 8 bytes 2
     H("00000000" "3400" "0001" "0000" "000174" "0000000000000005" "0000000000000002")),
    (ResumeOk(0x7FFFFFFFFFFFFFFF),
     # stream 0 | 0x0e<<10 = 3800 | position 7fffffffffffffff
     H("00000000" "3800" "7fffffffffffffff")),
    (Ext(1, 1, b"\x01", ignore=True),
     # stream 1 | 0x3f<<10|I = fe00 | extended type 00000001 | 01
     H("00000001" "fe00" "00000001" "01")),
]


@pytest.mark.parametrize("frame,wire", ROUNDTRIP, ids=[f"{type(f).__name__}-{i}" for i, (f, _) in enumerate(ROUNDTRIP)])
def test_encode_and_decode_match_hand_written_bytes(frame, wire):
    assert encode_frame(frame) == wire
    assert decode_frame(wire) == frame


def test_tcp_prefix_is_24_bit_length_of_the_frame():
    # length 00000a (10: header 6 + n 4) | stream 2 | 2000 | n 00000003
    wire = H("00000a" "00000002" "2000" "00000003")
    assert encode_tcp(RequestN(2, 3)) == wire
    assert decode_tcp_exact(wire) == RequestN(2, 3)


def test_stream_decoder_accepts_one_byte_chunks_and_back_to_back_frames():
    wire = H("00000a" "00000002" "2000" "00000003" "000006" "00000001" "2400")
    decoder = TcpDecoder()
    frames = []
    for i in range(len(wire)):
        decoder.feed(wire[i:i + 1])
        frames.extend(decoder)
    assert frames == [RequestN(2, 3), Cancel(1)]
    assert decoder.buffered == 0


def test_stream_decoder_refuses_an_oversized_length_before_its_body_arrives():
    decoder = TcpDecoder(max_frame=64)
    decoder.feed(H("000041"))  # 65 > 64, and nothing of the body sent
    with pytest.raises(FrameError) as err:
        decoder.next_frame()
    assert err.value.code == "frame-too-large"
    with pytest.raises(FrameError):  # stays failed: no resynchronisation
        decoder.next_frame()


def test_stream_decoder_refuses_a_length_shorter_than_a_header():
    decoder = TcpDecoder()
    decoder.feed(H("000005" "0000000024"))
    with pytest.raises(FrameError) as err:
        decoder.next_frame()
    assert err.value.code == "frame-too-short"


def test_stream_decoder_skips_an_ignorable_bad_frame_and_reads_on():
    # CANCEL on stream 0 (ignorable), then CANCEL on stream 1
    decoder = TcpDecoder()
    decoder.feed(H("000006" "00000000" "2400" "000006" "00000001" "2400"))
    with pytest.raises(FrameError) as err:
        decoder.next_frame()
    assert err.value.code == "stream-id-zero" and err.value.ignorable
    assert decoder.next_frame() == Cancel(1)


def test_reserved_stream_id_bit_is_ignored_on_receipt():
    # stream 80000001: top bit reserved, read as stream 1 | CANCEL 2400
    assert decode_frame(H("80000001" "2400")) == Cancel(1)


def test_undefined_flags_are_ignored_on_receipt():
    # REQUEST_N 2000 with M 0100, F 0080, C 0040, N 0020 set (undefined for it): 21e0
    assert decode_frame(H("00000002" "21e0" "00000001")) == RequestN(2, 1)
    # CANCEL with the low 5 undefined bits: 241f
    assert decode_frame(H("00000001" "241f")) == Cancel(1)


def test_f_with_c_means_f_is_ignored():
    # PAYLOAD 2800|F|C|N = 28e0 on stream 1, data 'x'
    assert decode_frame(H("00000001" "28e0" "78")) == Payload(1, data=b"x", complete=True, next=True)


INVALID = [
    # (wire, code, ignorable, why)
    (H("0000000024"), "frame-too-short", False, "5 bytes: no whole header"),
    (H("00000000" "0000"), "unknown-frame-type", False, "type 0x00 is reserved"),
    (H("00000001" "3c00"), "unknown-frame-type", False, "type 0x0f is not in the table"),
    (H("00000001" "3e00"), "unknown-frame-type", True, "type 0x0f with I: ignorable"),
    (H("00000000" "1000" "61"), "stream-id-zero", True, "REQUEST_RESPONSE on stream 0"),
    (H("00000000" "2820"), "stream-id-zero", True, "PAYLOAD on stream 0"),
    (H("00000001" "3100" "6d"), "stream-id-nonzero", True, "METADATA_PUSH on stream 1"),
    (H("00000001" "0c80" "0000000000000000"), "stream-id-nonzero", True, "KEEPALIVE on stream 1"),
    (H("00000001" "1100" "000005" "6162"), "metadata-length-overrun", False, "5 bytes of metadata, 2 left"),
    (H("00000001" "1300" "000005" "6162"), "metadata-length-overrun", True, "same with I"),
    (H("00000001" "1100" "0000"), "truncated", False, "metadata length cut short"),
    (H("00000001" "2000" "000000"), "truncated", False, "REQUEST_N with 3 bytes of n"),
    (H("00000001" "2000" "0000000100"), "trailing-bytes", False, "REQUEST_N with a byte too many"),
    (H("00000001" "2000" "80000001"), "reserved-bit-set", False, "REQUEST_N n with top bit"),
    (H("00000001" "2800" "61"), "payload-without-next-or-complete", True, "PAYLOAD, no C, no N"),
    (H("00000000" "3000" "6d"), "metadata-push-without-m", False, "METADATA_PUSH with M clear"),
    (H("00000001" "fc00" "00000000"), "extended-type-zero", False, "EXT extended type 0"),
    (H("00000000" "0800" "00000001" "00000001" "ff"), "trailing-bytes", False, "LEASE, M clear, extra byte"),
    (H("00000000" "0400" "0001" "0000" "000001f4" "000007d0" "01ff" "00"), "mime-not-ascii", False,
     "SETUP metadata MIME byte ff"),
    (H("00000000" "0400" "0001" "0000" "000001f4" "000007d0" "0561"), "truncated", False,
     "SETUP MIME length 5, 1 byte left"),
]


@pytest.mark.parametrize("wire,code,ignorable,why", INVALID, ids=[c[3] for c in INVALID])
def test_invalid_frames_raise_typed_errors(wire, code, ignorable, why):
    with pytest.raises(FrameError) as err:
        decode_frame(wire)
    assert err.value.code == code
    assert err.value.ignorable is ignorable


def test_websocket_messages_are_one_frame_binary_only():
    assert decode_websocket(H("00000001" "2400")) == Cancel(1)
    with pytest.raises(FrameError) as err:
        decode_websocket("00000001")
    assert err.value.code == "websocket-text-message"
    with pytest.raises(FrameError) as err:  # a length prefix is not part of a WebSocket frame
        # read as stream 00000600, word 0001: type 0x00
        decode_websocket(H("000006" "00000001" "2400"))
    assert err.value.code == "unknown-frame-type"


@pytest.mark.parametrize("frame", [RequestN(1, 0x80000000), Cancel(0x80000000),
                                   Ext(1, 0), Setup(1, 0, 1, 1, "é", "")])
def test_encoder_refuses_fields_that_do_not_fit(frame):
    with pytest.raises(CodecError):
        encode_frame(frame)
