"""Micromessage2 fuzz targets.

``micromessage2-codec``  the first byte picks a decoder:
    0 decode_frame (re-encodes to exactly its bytes, LARGE_PAYLOAD as sent);
    1 decode_handshake (re-encodes exactly); 2 StreamDecoder (byte 1: bit 0 =
    handshake first, the rest seeds the chunking): the same items and error
    fed whole or in chunks; 3 extension list, 4 MESSAGE properties, 5 COMMAND
    payload, 6 FILTER_VALUE (7-bit text: parse, format, parse gives the same);
    7 decode_frames + join; 8 decode_frame with max_frame = byte 1.
``micromessage2-connection``  a server-role Connection with the test service
    and a broker (pubsub to itself), as server.py runs them: byte 0 seeds the
    chunking, the rest is the client's stream; time moves on between chunks
    (read timeout).  Everything the server writes must decode: one handshake
    (or the ERROR sent instead), then frames.

Allowed: CodecError and ProtocolViolation from the decoders; nothing may
escape the connection or the service.
"""

from __future__ import annotations

from reference_impl.common.errors import CodecError
from reference_impl.micromessage2 import codec, extensions
from reference_impl.micromessage2.codec import Flags
from reference_impl.micromessage2.connection import Connection, Role
from reference_impl.micromessage2.service import Broker, TestService

from fuzz.common import InvariantViolation, check, split

MAX_MESSAGE = 4096
READ_TIMEOUT = 2.0
STEP = 0.25


def _ascii(data: bytes) -> str:
    return bytes(b & 0x7F for b in data).decode("ascii")


def _items(stream: bytes, chunks: list[bytes], handshake_first: bool) -> tuple[list, str | None]:
    decoder = codec.StreamDecoder()
    items: list = []
    want_handshake = handshake_first
    try:
        for chunk in chunks:
            decoder.feed(chunk)
            while True:
                item = decoder.next_handshake() if want_handshake else decoder.next_frame()
                if item is None:
                    break
                want_handshake = False
                items.append(item)
    except CodecError as exc:
        return items, exc.code
    return items, None


def _frame(data: bytes, max_frame: int = codec.DEFAULT_MAX_FRAME) -> None:
    frame = codec.decode_frame(data, max_frame)
    again = codec.encode_frame(frame, force_large=bool(data[0] & Flags.LARGE_PAYLOAD))
    check(again == data, f"{frame!r} re-encodes to {again.hex()}, not {data.hex()}")


def _text_roundtrip(parse, fmt, text: str) -> None:
    parsed = parse(text)
    check(parse(fmt(parsed)) == parsed, f"{text!r}: parse(format(parse(x))) differs")


def codec_one_input(data: bytes) -> None:
    if not data:
        return
    mode, rest = data[0] % 9, data[1:]
    if mode == 0:
        _frame(rest)
    elif mode == 1:
        handshake = codec.decode_handshake(rest)
        check(codec.encode_handshake(handshake) == rest, f"{handshake!r} does not re-encode to its bytes")
    elif mode == 2 and rest:
        stream = rest[1:]
        whole = _items(stream, [stream], bool(rest[0] & 1))
        chunked = _items(stream, split(stream, rest[0] >> 1), bool(rest[0] & 1))
        check(whole == chunked, f"chunking changed the outcome: {whole} vs {chunked}")
    elif mode == 3:
        _text_roundtrip(extensions.parse_extension_list, extensions.format_extension_list, _ascii(rest))
    elif mode == 4:
        _text_roundtrip(extensions.parse_properties, extensions.format_properties, _ascii(rest))
    elif mode == 5:
        _text_roundtrip(extensions.parse_command, extensions.format_command, _ascii(rest))
    elif mode == 6:
        _text_roundtrip(extensions.parse_filter_value, lambda kv: extensions.format_filter_value(*kv), _ascii(rest))
    elif mode == 7:
        frames = codec.decode_frames(rest)
        if frames:
            whole = codec.join(frames)
            check(len(whole.payload) == sum(len(f.payload) for f in frames), "join lost bytes")
    elif rest:
        _frame(rest[1:], rest[0])


# -- the connection --------------------------------------------------------------------


def _check_output(out: bytes) -> None:
    decoder = codec.StreamDecoder(codec.DEFAULT_MAX_FRAME)
    decoder.feed(out)
    try:
        first = decoder.next_handshake()
        if first is not None:
            while decoder.next_frame() is not None:
                pass
    except CodecError as exc:
        raise InvariantViolation(f"the server wrote bytes Micromessage2 refuses: {exc}") from None
    check(decoder.buffered == 0, f"the server's output ends inside a frame ({decoder.buffered} bytes)")


def connection_one_input(data: bytes) -> None:
    if len(data) < 2:
        return
    conn = Connection(Role.SERVER, identity="fuzz", max_message=MAX_MESSAGE, read_timeout=READ_TIMEOUT)
    service = TestService(conn, Broker(), max_pending=16, max_push_count=256)
    out = bytearray()
    now = 0.0
    for chunk in split(data[1:], data[0]):
        now += STEP
        events = conn.receive_data(chunk, now) + conn.tick(now)
        for event in events:
            service.handle(event)
        for _ in range(4):  # server.py pumps while pump() says more could go at once
            if not service.pump():
                break
        out += conn.data_to_send()
    now += READ_TIMEOUT
    for event in conn.tick(now) + conn.receive_data(b"", now):
        service.handle(event)
    service.close()
    out += conn.data_to_send()
    _check_output(bytes(out))


TARGETS = {"micromessage2-codec": codec_one_input, "micromessage2-connection": connection_one_input}


# -- seeds ------------------------------------------------------------------------------

_FORMS = {"frame": b"\x00", "handshake": b"\x01", "extension-list": b"\x03", "properties": b"\x04",
          "command": b"\x05", "filter-value": b"\x06", "fragments": b"\x07"}


def _client_session(optional: list[str], actions) -> bytes:
    """The bytes a reference client sends in a session with a reference server (both in memory)."""
    client = Connection(Role.CLIENT, optional=optional)
    server = Connection(Role.SERVER)
    sent = bytearray()
    for _ in range(2):  # hello, hello, final (b"" would mean end of stream)
        data = client.data_to_send()
        sent += data
        server.receive_data(data, 0.0)
        if reply := server.data_to_send():
            client.receive_data(reply, 0.0)
    sent += client.data_to_send()
    actions(client)
    sent += client.data_to_send()
    return bytes(sent)


def _echo(client: Connection) -> None:
    client.send_message("test/echo", b"hello", {"a": "N1"})
    client.send_message("test/push", b"", "count:3;size:5;")


def _pubsub(client: Connection) -> None:
    client.send_command("subscribe", {"destination": "t"})
    client.send_message("t", b"fan out")
    client.send_command("unsubscribe", {"destination": "t"})


def seeds(vectors: list[tuple[dict, dict]]) -> dict[str, list[bytes]]:
    codec_seeds: list[bytes] = []
    conn_seeds: list[bytes] = []
    for context, test in vectors:
        wire = bytes.fromhex(test["wire"])
        form = context.get("form", "")
        if form == "frame" and "max_frame" in context:
            codec_seeds.append(b"\x08" + bytes([min(context["max_frame"], 255)]) + wire)
        elif form == "stream":
            start = 1 if context.get("start") == "handshake" else 0
            codec_seeds.append(b"\x02" + bytes([start]) + wire)
            if start:
                conn_seeds.append(b"\x00" + wire)
        elif form in _FORMS:
            codec_seeds.append(_FORMS[form] + wire)
    for optional, actions in ((["json"], _echo), (["batch-ack:max-count=4", "dotnet"], _echo),
                              (["ack", "pubsub"], _pubsub), (["pubsub"], _pubsub)):
        conn_seeds.append(b"\x00" + _client_session(optional, actions))
        conn_seeds.append(b"\x05" + _client_session(optional, actions))
    return {"micromessage2-codec": codec_seeds, "micromessage2-connection": conn_seeds}
