"""RSocket fuzz targets.

``rsocket-codec``  the first byte picks a decoder:
    0 decode_frame (one WebSocket message): what decodes re-encodes to bytes that decode to the
      same frame (not to the same bytes: undefined flag bits and the reserved stream bit are
      dropped on receipt);
    1 TcpDecoder (byte 1 seeds the chunking): the stream fed whole and in chunks gives the same
      frames and the same error;
    2 TcpDecoder with max_frame = 6 + byte 1: refused as soon as the length prefix says more.
``rsocket-connection``  a server-role Connection with the test service, as server.py runs them:
    byte 0 seeds the chunking, byte 1 picks how far the clock moves per chunk, the rest is the
    client's stream.  Everything the server writes must decode.

Allowed: CodecError and ProtocolViolation from the decoders; nothing may escape the connection
or the service.
"""

from __future__ import annotations

from reference_impl.common.errors import CodecError
from reference_impl.rsocket import codec
from reference_impl.rsocket.codec import (
    Cancel, Keepalive, MetadataPush, Payload, RequestChannel, RequestFnf, RequestN, RequestResponse,
    RequestStream, Setup,
)
from reference_impl.rsocket.connection import Connection, Role
from reference_impl.rsocket.service import TestService

from fuzz.common import InvariantViolation, check, split


def _frames(chunks: list[bytes], max_frame: int = codec.MAX_FRAME) -> tuple[list, str | None]:
    decoder = codec.TcpDecoder(max_frame)
    frames: list = []
    try:
        for chunk in chunks:
            decoder.feed(chunk)
            while (frame := decoder.next_frame()) is not None:  # one by one: an error keeps what came before
                frames.append(frame)
    except CodecError as exc:
        return frames, exc.code
    return frames, None


def codec_one_input(data: bytes) -> None:
    if len(data) < 2:
        return
    mode, arg, rest = data[0] % 3, data[1], data[2:]
    if mode == 0:
        frame = codec.decode_frame(data[1:])
        again = codec.decode_frame(codec.encode_frame(frame))
        check(again == frame, f"{frame!r} re-encodes to bytes that decode to {again!r}")
    elif mode == 1:
        whole = _frames([rest])
        chunked = _frames(split(rest, arg))
        check(whole == chunked, f"chunking changed the outcome: {whole} vs {chunked}")
    else:
        limit = codec.HEADER_SIZE + arg
        frames, error = _frames([rest], limit)
        if len(rest) >= 3 and int.from_bytes(rest[:3], "big") > limit:
            check(error == "frame-too-large" and not frames, f"a {int.from_bytes(rest[:3], 'big')}-byte frame passed "
                                                             f"a limit of {limit}")


def _check_output(out: bytes) -> None:
    frames, error = _frames([out])
    if error is not None:
        raise InvariantViolation(f"the server wrote bytes RSocket refuses: {error}")


def connection_one_input(data: bytes) -> None:
    if len(data) < 3:
        return
    now = 0.0
    conn = Connection(Role.SERVER, now=now, fragment_size=64, max_reassembly=4096)
    service = TestService(conn, max_payloads=16)
    out = bytearray()
    for chunk in split(data[2:], data[0]):
        now += data[1] / 100
        service.handle(conn.receive_data(chunk, now))
        service.handle(conn.tick(now))
        out += conn.data_to_send()
    service.handle(conn.connection_lost())
    out += conn.data_to_send()
    _check_output(bytes(out))


TARGETS = {"rsocket-codec": codec_one_input, "rsocket-connection": connection_one_input}


def seeds(vectors: list[tuple[dict, dict]]) -> dict[str, list[bytes]]:
    codec_seeds: list[bytes] = []
    setup = codec.encode_tcp(Setup(1, 0, 30000, 90000, "text/plain", "text/plain"))
    conn_seeds: list[bytes] = [b"\x00\x00" + setup]
    for context, test in vectors:
        wire = bytes.fromhex(test["wire"])
        if context.get("framing") == "tcp":
            codec_seeds += [b"\x01\x00" + wire, b"\x02\x10" + wire]
            if test["result"] == "valid":
                conn_seeds.append(b"\x00\x00" + setup + wire)
        else:
            codec_seeds.append(b"\x00" + wire)
            if test["result"] == "valid":
                conn_seeds.append(b"\x00\x00" + setup + codec.encode_tcp(codec.decode_frame(wire)))
    session = [RequestResponse(1, None, b"echo:hi"), RequestStream(3, 2, b"m", b"range:5"), RequestN(3, 2),
               RequestChannel(5, 1, None, b"open"), Payload(5, None, b"x", follows=True, next=True),
               Payload(5, None, b"y", complete=True, next=True), RequestFnf(7, None, b"fnf:x"),
               MetadataPush(b"p"), Keepalive(True, 0, b"k"), RequestResponse(9, None, b"never"), Cancel(9),
               RequestStream(11, 1, None, b"error:e"), RequestN(3, 0)]
    body = b"".join(codec.encode_tcp(f) for f in session)
    conn_seeds += [b"\x01\x00" + setup + body, b"\x07\x30" + setup + body]
    return {"rsocket-codec": codec_seeds, "rsocket-connection": conn_seeds}
