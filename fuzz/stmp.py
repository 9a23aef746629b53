"""STMP fuzz targets.

``stmp-codec``  the first byte picks a decoder, the rest is its input:
    0 StreamDecoder (byte 1 seeds the chunking; the rest is the stream): the
      messages and the error are the same fed whole or in chunks, and the
      messages re-encode to exactly the bytes they came from;
    1/2 decode_binary with/without PS; 3 decode_text (the bytes as UTF-8, lone
      surrogates kept); 4 decode_versions (byte 1 bit 0: text); 5
      classify_first_byte; 6 decode_binary with PS and max_payload = byte 1.
    Every message decoded re-encodes to the input (the codec has one form per message).
``stmp-connection``  a server-role Connection with the test service, as the
    reference servers run it.  Byte 0 bit 0: 0 = TCP (byte 1 seeds the
    chunking, the rest is the stream), 1 = WebSocket (records of
    ``fuzz.common.records``, flag = text frame).  Time moves on between
    chunks so heartbeats, request timeouts and delayed replies fire.  Every
    byte the server writes must decode with the STMP decoder.

Allowed: CodecError (decoders) and ProtocolViolation; nothing may escape the
service (the server's handler would die of it).
"""

from __future__ import annotations

from reference_impl.common.errors import CodecError
from reference_impl.stmp import codec
from reference_impl.stmp.codec import Encoding, Request
from reference_impl.stmp.connection import Connection
from reference_impl.stmp.service import ConformanceService

from fuzz.common import InvariantViolation, check, record, records, split

# Small limits so the fuzzer reaches them.
MAX_PAYLOAD = 64
HEARTBEAT_INTERVAL = 1.0
HEARTBEAT_TIMEOUT = 3.0
REQUEST_TIMEOUT = 2.0
STEP = 0.25  # seconds between two chunks


def _stream_messages(stream: bytes, chunks: list[bytes]) -> tuple[list[codec.Message], str | None, int]:
    decoder = codec.StreamDecoder()
    messages: list[codec.Message] = []
    try:
        for chunk in chunks:
            messages += decoder.feed(chunk)
        messages += decoder.feed(b"")
    except CodecError as exc:
        return messages, exc.code, decoder.buffered
    return messages, None, decoder.buffered


def _codec_stream(data: bytes) -> None:
    if not data:
        return
    seed, stream = data[0], data[1:]
    whole = _stream_messages(stream, [stream])
    chunked = _stream_messages(stream, split(stream, seed))
    check(whole[:2] == chunked[:2], f"chunking changed the outcome: {whole[:2]} vs {chunked[:2]}")
    encoded = b"".join(codec.encode_binary(m, with_ps=True) for m in whole[0])
    check(stream.startswith(encoded), "decoded messages do not re-encode to the stream's bytes")
    if whole[1] is None:
        check(len(encoded) + whole[2] == len(stream), "buffered bytes do not add up")


def _codec_text(data: bytes) -> None:
    text = data.decode("utf-8", "surrogateescape")
    message = codec.decode_text(text)
    check(codec.encode_text(message) == text, f"{text!r} decodes to {message!r}, which encodes otherwise")


def _codec_versions(data: bytes) -> None:
    if not data:
        return
    text = bool(data[0] & 1)
    versions = codec.decode_versions(data[1:], text=text)
    check(codec.encode_versions(versions, text=text).lower() == data[1:].lower(), "versions do not round-trip")


def _codec_binary(data: bytes, with_ps: bool, max_payload: int = codec.DEFAULT_MAX_PAYLOAD) -> None:
    message = codec.decode_binary(data, with_ps=with_ps, max_payload=max_payload)
    check(codec.encode_binary(message, with_ps=with_ps) == data, f"{message!r} does not re-encode to its bytes")


def codec_one_input(data: bytes) -> None:
    if not data:
        return
    mode, rest = data[0] % 7, data[1:]
    if mode == 0:
        _codec_stream(rest)
    elif mode == 1:
        _codec_binary(rest, True)
    elif mode == 2:
        _codec_binary(rest, False)
    elif mode == 3:
        _codec_text(rest)
    elif mode == 4:
        _codec_versions(rest)
    elif mode == 5:
        if rest:
            codec.classify_first_byte(rest[0])
    elif rest:
        _codec_binary(rest[1:], True, rest[0])


# -- the connection --------------------------------------------------------------------


def _server(framing: str) -> tuple[Connection, ConformanceService]:
    conn = Connection("server", framing=framing, heartbeat_interval=HEARTBEAT_INTERVAL,
                      heartbeat_timeout=HEARTBEAT_TIMEOUT, request_timeout=REQUEST_TIMEOUT,
                      max_payload=MAX_PAYLOAD)
    return conn, ConformanceService(conn, max_delayed=8)


def _run(conn: Connection, service: ConformanceService, feed, items) -> list[bytes | str]:
    """The loop of transport.Link.run, with a clock that moves ``STEP`` per item."""
    out: list[bytes | str] = []
    now = 0.0
    for item in items:
        if conn.should_close:
            break
        now += STEP
        feed(item, now)
        conn.tick(now)
        service.tick(now)
        for event in conn.events():
            service.handle(event, now)
        out += conn.data_to_send()
    for _ in range(8):  # let the timers run out
        if conn.should_close:
            break
        now += 1.0
        conn.tick(now)
        service.tick(now)
        for event in conn.events():
            service.handle(event, now)
        out += conn.data_to_send()
    conn.connection_lost()
    conn.events()
    return out


def _check_stream_output(out: list[bytes | str]) -> None:
    check(all(isinstance(item, bytes) for item in out), "stream framing wrote text")
    decoder = codec.StreamDecoder(codec.MAX_PS)
    try:
        decoder.feed(b"".join(out))  # type: ignore[arg-type]
        decoder.feed(b"")
    except CodecError as exc:
        raise InvariantViolation(f"the server wrote bytes STMP refuses: {exc}") from None
    check(decoder.at_boundary, "the server's output ends inside a message")


def _check_message_output(out: list[bytes | str]) -> None:
    items = iter(out)
    for item in items:
        try:
            if isinstance(item, str):
                message = codec.decode_text(item, max_payload=codec.MAX_PS)
                if getattr(message, "payload", b"") is None:
                    payload = next(items, None)
                    check(isinstance(payload, bytes), "a split header without its binary frame")
                    codec.attach_split_payload(message, payload, max_payload=codec.MAX_PS)  # type: ignore[arg-type]
            else:
                codec.decode_binary(item, with_ps=False, max_payload=codec.MAX_PS)
        except CodecError as exc:
            raise InvariantViolation(f"the server wrote a frame STMP refuses: {exc}: {item!r}") from None


def connection_one_input(data: bytes) -> None:
    if len(data) < 2:
        return
    if data[0] & 1 == 0:
        conn, service = _server("stream")
        out = _run(conn, service, conn.receive_data, split(data[2:], data[1]))
        _check_stream_output(out)
    else:
        conn, service = _server("message")
        frames = [payload.decode("utf-8", "replace") if text else payload for text, payload in records(data[1:])]
        out = _run(conn, service, conn.receive_message, frames)
        _check_message_output(out)


TARGETS = {"stmp-codec": codec_one_input, "stmp-connection": connection_one_input}


# -- seeds ------------------------------------------------------------------------------

_DECODE_MODES = {"binary-stream": [b"\x01", b"\x00\x00"], "binary-message": [b"\x02"], "text": [b"\x03"],
                 "versions-binary": [b"\x04\x00"], "versions-text": [b"\x04\x01"], "first-byte": [b"\x05"]}


def seeds(vectors: list[tuple[dict, dict]]) -> dict[str, list[bytes]]:
    """Seed inputs from (group context, test) pairs of the STMP vector files."""
    codec_seeds: list[bytes] = []
    conn_seeds: list[bytes] = []
    hello = codec.encode_binary(Request(0, 0, Encoding.RAW, b"\x01"), with_ps=True)
    hello_ws = codec.encode_binary(Request(0, 0, Encoding.RAW, b"\x01"), with_ps=False)
    hello_text = codec.encode_text(Request(0, 0, Encoding.RAW, b"01")).encode()
    stream_wires = []
    for context, test in vectors:
        wire = bytes.fromhex(test["wire"])
        for prefix in _DECODE_MODES.get(context.get("form", ""), []):
            codec_seeds.append(prefix + wire)
        form = context.get("form")
        if form == "binary-stream":
            conn_seeds.append(b"\x00\x00" + hello + wire)
            conn_seeds.append(b"\x00\x07" + wire)
            if test["result"] == "valid":
                stream_wires.append(wire)
        elif form == "binary-message":
            conn_seeds.append(b"\x01" + record(False, hello_ws) + record(False, wire))
        elif form == "text":
            conn_seeds.append(b"\x01" + record(True, hello_text) + record(True, wire))
    # A session: negotiation, echo, notify echo, a delayed reply, in one stream.
    echo = codec.encode_binary(Request(1, 0x100, Encoding.RAW, b"hello"), with_ps=True)
    notify = codec.encode_binary(codec.Notify(0x101, Encoding.JSON, b"{}"), with_ps=True)
    delay = codec.encode_binary(Request(2, 0x102, Encoding.RAW, (500).to_bytes(4, "big")), with_ps=True)
    conn_seeds.append(b"\x00\x01" + hello + echo + notify + delay + b"".join(stream_wires[:8]))
    return {"stmp-codec": codec_seeds, "stmp-connection": conn_seeds}
