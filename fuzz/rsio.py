"""rsio fuzz targets.

``rsio-codec``  the first byte picks a decoder:
    0 decode_exact (byte 1 = elementSize of subscriber 1, 0 = variable; two
      extension layouts known): re-encodes to exactly its bytes (varints are
      strict, so there is one form per message);
    1 StreamDecoder (byte 1 seeds the chunking): the same messages and error
      fed whole or in chunks, re-encoding to a prefix of the stream;
    2 decode_uvarint, strict (re-encodes exactly) and lenient (same value);
    3 decode_exact with max_message = byte 1.
``rsio-connection``  a server-role Connection with the test publishers, as
    session.py runs them: byte 0 seeds the chunking, the rest is the client's
    stream.  Everything the server writes must decode (elementSize taken from
    the server's own ``subscribed`` messages).

Allowed: CodecError and ProtocolViolation from the decoders; nothing may
escape the connection or the service.
"""

from __future__ import annotations

from reference_impl.common.errors import CodecError, IncompleteFrame
from reference_impl.common.varint import decode_uvarint, encode_uvarint
from reference_impl.rsio import codec
from reference_impl.rsio.codec import (
    Cancel, ClientHello, Goodbye, Request, Subscribe, Subscribed, decode_exact, encode_message,
)
from reference_impl.rsio.connection import Connection, Role
from reference_impl.rsio.service import TestService

from fuzz.common import InvariantViolation, check, split

LAYOUTS = {64: ("varint", "bytes"), 300: ("string",)}


def _sizes(size: int):
    return lambda sid: size if sid == 1 else 0


def _messages(stream: bytes, chunks: list[bytes], size: int) -> tuple[list, str | None]:
    decoder = codec.StreamDecoder(element_size=_sizes(size), layouts=LAYOUTS)
    messages: list = []
    try:
        for chunk in chunks:
            decoder.feed(chunk)
            for message in decoder:  # one by one: an error must not lose the messages before it
                messages.append(message)
    except CodecError as exc:
        return messages, exc.code
    return messages, None


def _element_size(message, size: int) -> int:
    return size if getattr(message, "subscriber", None) == 1 else 0


def codec_one_input(data: bytes) -> None:
    if len(data) < 2:
        return
    mode, arg, rest = data[0] % 4, data[1], data[2:]
    if mode == 0:
        message = decode_exact(rest, element_size=_sizes(arg), layouts=LAYOUTS)
        again = encode_message(message, element_size=_element_size(message, arg))
        check(again == rest, f"{message!r} re-encodes to {again.hex()}, not {rest.hex()}")
    elif mode == 1:
        whole = _messages(rest, [rest], 4)
        chunked = _messages(rest, split(rest, arg), 4)
        check(whole == chunked, f"chunking changed the outcome: {whole} vs {chunked}")
        encoded = b"".join(encode_message(m, element_size=_element_size(m, 4)) for m in whole[0])
        check(rest.startswith(encoded), "decoded messages do not re-encode to the stream's bytes")
    elif mode == 2:
        buf = data[1:]
        try:
            lenient, lenient_end = decode_uvarint(buf, strict=False)
        except IncompleteFrame:
            return
        try:
            value, end = decode_uvarint(buf)
        except CodecError as exc:
            check(exc.code == "varint-overlong", f"strict decoder refused what the lenient one took: {exc}")
            return
        check((value, end) == (lenient, lenient_end), "strict and lenient decoders disagree")
        check(encode_uvarint(value) == buf[:end], "a strict varint does not re-encode to its bytes")
    else:
        try:
            decode_exact(rest, max_message=arg, layouts=LAYOUTS)
        except IncompleteFrame:
            raise InvariantViolation("decode_exact let IncompleteFrame escape") from None


# -- the connection --------------------------------------------------------------------


def _check_output(out: bytes) -> None:
    sizes: dict[int, int] = {}
    decoder = codec.StreamDecoder(element_size=lambda sid: sizes.get(sid, 0))
    decoder.feed(out)
    try:
        for message in decoder:
            if isinstance(message, Subscribed):
                sizes[message.subscriber] = message.element_size
    except CodecError as exc:
        raise InvariantViolation(f"the server wrote bytes rsio refuses: {exc}") from None
    check(decoder.buffered == 0, f"the server's output ends inside a message ({decoder.buffered} bytes)")


def connection_one_input(data: bytes) -> None:
    if len(data) < 2:
        return
    conn = Connection(Role.SERVER, max_message=4096, max_element=4096, max_partial_elements=8)
    service = TestService(conn, part_size=64, pack_bytes=256, max_fixed_size=256, max_large=4096)
    out = bytearray(conn.data_to_send())
    for chunk in split(data[1:], data[0]):
        for event in conn.receive_data(chunk):
            service.handle(event)
        for _ in range(4):  # session.py pumps in batches while there is work
            if not service.has_work or not service.pump(64):
                break
        out += conn.data_to_send()
    for event in conn.connection_lost():
        service.handle(event)
    out += conn.data_to_send()
    _check_output(bytes(out))


TARGETS = {"rsio-codec": codec_one_input, "rsio-connection": connection_one_input}


# -- seeds ------------------------------------------------------------------------------


def seeds(vectors: list[tuple[dict, dict]]) -> dict[str, list[bytes]]:
    codec_seeds: list[bytes] = []
    hello = encode_message(ClientHello(0, ()))
    conn_seeds: list[bytes] = [b"\x00" + hello]
    for context, test in vectors:
        wire = bytes.fromhex(test["wire"])
        size = context.get("elementSizes", {}).get("1", 0)
        codec_seeds.append(bytes([0, min(size, 255)]) + wire)
        codec_seeds.append(b"\x01\x00" + wire)
        if "maxMessage" in context:
            codec_seeds.append(bytes([3, min(context["maxMessage"], 255)]) + wire)
        if test["result"] == "valid" and not context:
            conn_seeds.append(b"\x00" + hello + wire)
    session = [Subscribe("test/range/5", 1, 2), Request(1, 3), Subscribe("test/fixed/6/3", 2, 6),
               Subscribe("test/large/300", 3, 1), Subscribe("test/error", 4, 0), Subscribe("test/never", 5, 1),
               Cancel(5), Subscribe("nope", 6, 1), Request(2, 0), Goodbye("bye")]
    conn_seeds.append(b"\x01" + hello + b"".join(encode_message(m) for m in session))
    conn_seeds.append(b"\x07" + hello + b"".join(encode_message(m) for m in session[:4]))
    codec_seeds += [b"\x02" + encode_uvarint(n) for n in (0, 1, 127, 128, 2**63 - 1)]
    return {"rsio-codec": codec_seeds, "rsio-connection": conn_seeds}
