"""ZMTP 3.x fuzz targets.

``zmtp-codec``  the first byte picks a decoder:
    0 decode_frame (re-encodes to exactly the bytes it took, LONG as sent);
    1 StreamDecoder (byte 1 seeds the chunking): the same error fed whole or
      in chunks, the same frames up to it (see below), never IncompleteFrame
      out of ``feed``;
    2 decode_greeting, and GreetingDecoder fed in chunks agrees with it;
    3 decode_command (decode, encode, decode gives the same command);
    4 Metadata.decode (re-encodes exactly); 5 PLAIN decode_hello (re-encodes exactly).
``zmtp-connection``  a server-side ROUTER Connection (byte 0 bit 0: NULL or
    PLAIN server; the rest of byte 0 seeds the chunking), echoing every
    message, as a broker would; time moves on between chunks (heartbeats,
    TTLs, the handshake timeout).  Everything it writes must decode: our
    greeting, then frames.

Allowed: CodecError and ProtocolViolation, and IncompleteFrame from the
whole-input decoders (documented: "more bytes are needed").
"""

from __future__ import annotations

from reference_impl.common.errors import CodecError, IncompleteFrame
from reference_impl.zmtp import plain
from reference_impl.zmtp.codec import LONG, Frame, StreamDecoder, decode_frame, encode_frame
from reference_impl.zmtp.commands import Metadata, Ping, Ready, command_body, decode_command, encode_command
from reference_impl.zmtp.connection import Connection, Message, Phase
from reference_impl.zmtp.greeting import GREETING_SIZE, Greeting, GreetingDecoder, decode_greeting, encode_greeting
from reference_impl.zmtp.null import NullConfig

from fuzz.common import InvariantViolation, check, split

MAX_FRAME = 4096
STEP = 0.25


def _frames(stream: bytes, chunks: list[bytes]) -> tuple[list[Frame], str | None]:
    decoder = StreamDecoder(MAX_FRAME)
    frames: list[Frame] = []
    try:
        for chunk in chunks:
            frames += decoder.feed(chunk)
    except CodecError as exc:
        return frames, exc.code
    except IncompleteFrame:
        raise InvariantViolation("IncompleteFrame escaped StreamDecoder.feed") from None
    return frames, None


def _greeting_in_chunks(data: bytes, seed: int) -> Greeting | None:
    decoder = GreetingDecoder()
    for chunk in split(data, seed):
        decoder.feed(chunk)
    return decoder.greeting


def codec_one_input(data: bytes) -> None:
    if len(data) < 2:
        return
    mode, rest = data[0] % 6, data[1:]
    try:
        if mode == 0:
            frame, end = decode_frame(rest, MAX_FRAME)
            again = encode_frame(frame, long=bool(rest[0] & LONG))
            check(again == rest[:end], f"{frame!r} re-encodes to {again.hex()}, not {rest[:end].hex()}")
        elif mode == 1:
            whole = _frames(rest[1:], [rest[1:]])
            chunked = _frames(rest[1:], split(rest[1:], rest[0]))
            # feed() raises without returning the frames it completed before the error in that same call
            # (documented nowhere, unlike STMP's decoder), so with an error only prefixes are compared
            check(whole[1] == chunked[1], f"chunking changed the error: {whole[1]} vs {chunked[1]}")
            shorter, longer = sorted((whole[0], chunked[0]), key=len)
            check(longer[:len(shorter)] == shorter and (whole[1] or len(shorter) == len(longer)),
                  f"chunking changed the frames: {whole} vs {chunked}")
        elif mode == 2:
            greeting = decode_greeting(rest)
            check(decode_greeting(encode_greeting(greeting)) == greeting, "a greeting does not round-trip")
            check(_greeting_in_chunks(rest, rest[-1]) == greeting, "GreetingDecoder disagrees with decode_greeting")
        elif mode == 3:
            command = decode_command(rest)
            check(decode_command(encode_command(command)) == command, f"{command!r} does not round-trip")
        elif mode == 4:
            metadata = Metadata.decode(rest)
            check(metadata.encode() == rest, f"{metadata!r} does not re-encode to its bytes")
        else:
            username, password = plain.decode_hello(rest)
            check(plain.encode_hello(username, password) == command_body("HELLO", rest), "HELLO does not re-encode")
    except IncompleteFrame:
        if mode == 1:
            raise
        return  # documented for the whole-input decoders: more bytes are needed


# -- the connection --------------------------------------------------------------------


def _check_output(out: bytes) -> None:
    try:
        decode_greeting(out[:GREETING_SIZE])
        decoder = StreamDecoder()
        decoder.feed(out[GREETING_SIZE:])
    except (CodecError, IncompleteFrame) as exc:
        raise InvariantViolation(f"the server wrote bytes ZMTP refuses: {exc!r}") from None
    check(decoder.buffered == 0, f"the server's output ends inside a frame ({decoder.buffered} bytes)")


def connection_one_input(data: bytes) -> None:
    if len(data) < 2:
        return
    mechanism = plain.PlainServerConfig() if data[0] & 1 else NullConfig()
    conn = Connection("ROUTER", mechanism, max_frame=MAX_FRAME, handshake_timeout=5.0,
                      heartbeat_interval=1.0, heartbeat_ttl=2.0)
    out = bytearray(conn.start(0.0).data)
    now = 0.0
    for chunk in split(data[1:], data[0] >> 1):
        now += STEP
        result = conn.receive_data(chunk, now)
        out += result.data
        for event in result.events:
            if isinstance(event, Message) and conn.phase is Phase.TRAFFIC:
                out += conn.send(Message(list(event.frames))).data
        out += conn.tick(now).data
    out += conn.tick(now + 10.0).data
    out += conn.receive_data(b"", now + 10.0).data
    _check_output(bytes(out))


TARGETS = {"zmtp-codec": codec_one_input, "zmtp-connection": connection_one_input}


# -- seeds ------------------------------------------------------------------------------


def _command_frame(body: bytes) -> bytes:
    return encode_frame(Frame(body, command=True))


def seeds(vectors: list[tuple[dict, dict]]) -> dict[str, list[bytes]]:
    codec_seeds: list[bytes] = []
    for context, test in vectors:
        wire = bytes.fromhex(test["wire"])
        kind = context.get("kind")
        if kind == "frame":
            codec_seeds += [b"\x00" + wire, b"\x01\x00" + wire]
        elif kind == "greeting":
            codec_seeds.append(b"\x02" + wire)
        elif kind in ("command", "plain-command"):
            codec_seeds.append(b"\x01\x05" + wire)
            try:
                frame, _ = decode_frame(wire)
            except (CodecError, IncompleteFrame):
                continue
            codec_seeds.append(b"\x03" + frame.body)
            codec_seeds.append(b"\x04" + frame.body[1 + frame.body[0]:])
            codec_seeds.append(b"\x05" + frame.body[1 + frame.body[0]:])
    metadata = Metadata.of({"Socket-Type": b"DEALER", "Identity": b"fuzz"})
    traffic = (encode_frame(Frame(b"part", more=True)) + encode_frame(Frame(b"hello"))
               + _command_frame(encode_command(Ping(10, b"ctx"))))
    null = encode_greeting(Greeting("NULL")) + _command_frame(encode_command(Ready(metadata))) + traffic
    plain_session = (encode_greeting(Greeting("PLAIN"))
                     + _command_frame(command_body("HELLO", plain.encode_hello(b"user", b"secret")))
                     + _command_frame(plain.encode_initiate(metadata)) + traffic)
    conn_seeds = [b"\x00" + null, b"\x0e" + null, b"\x01" + plain_session, b"\x0f" + plain_session]
    return {"zmtp-codec": codec_seeds, "zmtp-connection": conn_seeds}
