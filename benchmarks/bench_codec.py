"""Codec throughput of the reference implementations: encode and decode, frames/s and MB/s.

    .venv/bin/python benchmarks/bench_codec.py                      # the table (best of 5 runs per row)
    .venv/bin/python -m pytest benchmarks/bench_codec.py -q         # the same through pytest-benchmark

Each protocol has a fixed message mix (MIX_SIZE messages, payload sizes
cycling through PAYLOAD_SIZES bytes, kinds cycling through the protocol's
common traffic).  Encode turns the mix into bytes one message at a time;
decode feeds the whole byte stream to the protocol's StreamDecoder and reads
every message out.  MB/s counts wire bytes (1 MB = 10^6 bytes).

mc0 and MTL messages ride on ZMTP message frames, so each has two rows:
"messages" is the message codec alone (message <-> its list of frames), and
"on ZMTP frames" adds the ZMTP framing (frames with MORE flags <-> the byte
stream, through zmtp's StreamDecoder, regrouped into messages).  Both count the
same wire bytes (the ZMTP frames, before any CURVE boxing).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

MIX_SIZE = 2000
PAYLOAD_SIZES = (0, 16, 64, 256, 1024, 4096)
REPEATS = 5


@dataclass
class Mix:
    protocol: str
    form: str
    messages: list
    encode: Callable[[list], Any]  # the wire: bytes, or a list of frame lists for a message codec
    decode: Callable[[Any], int]  # returns how many messages it decoded
    size: Callable[[Any], int] = len  # wire bytes of what encode returned


def _payload(i: int) -> bytes:
    size = PAYLOAD_SIZES[i % len(PAYLOAD_SIZES)]
    return bytes((i + k) % 256 for k in range(size))


def stmp_mixes() -> list[Mix]:
    from reference_impl.stmp import codec
    from reference_impl.stmp.codec import Encoding, Notify, Ping, Request, Response, Status

    messages: list = []
    for i in range(MIX_SIZE):
        payload = _payload(i)
        encoding = Encoding.RAW if payload else Encoding.NONE
        messages.append([Request(i % 0xFFFF + 1, 0x100, encoding, payload),
                         Response(i % 0xFFFF + 1, Status.OK, encoding, payload),
                         Notify(0x101, encoding, payload), Ping()][i % 4])

    def encode_stream(batch: list) -> bytes:
        return b"".join([codec.encode_binary(m, with_ps=True) for m in batch])

    def decode_stream(data: bytes) -> int:
        return len(codec.StreamDecoder().feed(data))

    # The text form carries UTF-8 payloads: the same mix with ASCII payloads.  Text messages are
    # WebSocket frames, delimited by the transport: decode reads the frames the last encode made.
    text_messages = [m if isinstance(m, Ping) or not m.payload else type(m)(*_fields(m), b"a" * len(m.payload))
                     for m in messages]
    texts: list[str] = []

    def encode_text(batch: list) -> bytes:
        texts[:] = [codec.encode_text(m) for m in batch]
        return "".join(texts).encode()

    def decode_text(data: bytes) -> int:
        return len([codec.decode_text(t) for t in texts])

    return [Mix("stmp", "binary (TCP)", messages, encode_stream, decode_stream),
            Mix("stmp", "text (WebSocket)", text_messages, encode_text, decode_text)]


def _fields(message) -> tuple:
    from reference_impl.stmp.codec import Notify, Request
    if isinstance(message, Request):
        return (message.id, message.action, message.encoding)
    if isinstance(message, Notify):
        return (message.action, message.encoding)
    return (message.id, message.status, message.encoding)


def micromessage2_mixes() -> list[Mix]:
    from reference_impl.micromessage2 import codec
    from reference_impl.micromessage2.codec import CommandFrame, ExtensionFrame, MessageFrame

    messages: list = []
    for i in range(MIX_SIZE):
        payload = _payload(i)
        messages.append([MessageFrame(i % 65535 + 1, "test/echo", "count:N3;", payload),
                         ExtensionFrame(1, (i % 65535 + 1).to_bytes(2, "big")),
                         MessageFrame(i % 65535 + 1, "test/topic", "", payload),
                         CommandFrame(b"subscribe;destination=test%2Ftopic")][i % 4])

    def encode(batch: list) -> bytes:
        return b"".join([codec.encode_frame(f) for f in batch])

    def decode(data: bytes) -> int:
        decoder = codec.StreamDecoder()
        decoder.feed(data)
        count = 0
        while decoder.next_frame() is not None:
            count += 1
        return count

    return [Mix("micromessage2", "frames", messages, encode, decode)]


def rsio_mixes() -> list[Mix]:
    from reference_impl.rsio import codec
    from reference_impl.rsio.codec import OnNext, OnNextPacked, Request, Subscribe

    messages: list = []
    for i in range(MIX_SIZE):
        payload = _payload(i)
        packed = OnNextPacked(2, tuple((payload + b"abcd")[:4] for _ in range(8)))  # subscriber 2: elementSize 4
        messages.append([OnNext(1, payload), Request(1, 16), OnNext(1, i.to_bytes(8, "big")),
                         Subscribe(f"test/range/{i}", i + 3, 8), packed][i % 5])

    sizes = {1: 0, 2: 4}

    def encode(batch: list) -> bytes:
        return b"".join([codec.encode_message(m, element_size=sizes.get(getattr(m, "subscriber", 0), 0))
                         for m in batch])

    def decode(data: bytes) -> int:
        decoder = codec.StreamDecoder(element_size=lambda sid: sizes.get(sid, 0))
        decoder.feed(data)
        return sum(1 for _ in decoder)

    return [Mix("rsio", "messages", messages, encode, decode)]


def zmtp_mixes() -> list[Mix]:
    try:
        from reference_impl.zmtp import codec
        from reference_impl.zmtp.codec import Frame
        from reference_impl.zmtp.commands import Ping, encode_command
    except ImportError:
        return []
    messages: list = []
    for i in range(MIX_SIZE):
        payload = _payload(i)
        messages.append([Frame(b"", more=True), Frame(payload), Frame(encode_command(Ping(0, b"")), command=True),
                         Frame(payload)][i % 4])

    def encode(batch: list) -> bytes:
        return b"".join([codec.encode_frame(f) for f in batch])

    def decode(data: bytes) -> int:
        return len(codec.StreamDecoder().feed(data))

    return [Mix("zmtp", "frames", messages, encode, decode)]


def _zmtp_wire_size(messages: list[list[bytes]]) -> int:
    """Octets of these messages as ZMTP frames: a 2-octet header up to 255 octets of body, else 9."""
    return sum(len(f) + (2 if len(f) <= 255 else 9) for frames in messages for f in frames)


def _on_zmtp(protocol: str, messages: list, to_frames: Callable, from_frames: Callable) -> list[Mix]:
    """Two mixes for a message codec over ZMTP: the codec alone, and the codec plus ZMTP framing."""
    from reference_impl.zmtp import codec as zmtp

    def encode_messages(batch: list) -> list[list[bytes]]:
        return [to_frames(m) for m in batch]

    def decode_messages(wire: list[list[bytes]]) -> int:
        return len([from_frames(frames) for frames in wire])

    def encode_wire(batch: list) -> bytes:
        return b"".join([zmtp.encode_message(to_frames(m)) for m in batch])

    def decode_wire(data: bytes) -> int:
        decoded, parts = [], []
        for frame in zmtp.StreamDecoder().feed(data):
            parts.append(frame.body)
            if not frame.more:
                decoded.append(from_frames(parts))
                parts = []
        return len(decoded)

    return [Mix(protocol, "messages", messages, encode_messages, decode_messages, _zmtp_wire_size),
            Mix(protocol, "on ZMTP frames", messages, encode_wire, decode_wire)]


def mc0_mixes() -> list[Mix]:
    try:
        from reference_impl.mc0 import codec
        from reference_impl.mc0.codec import ID, TOPIC, message
    except ImportError:
        return []
    messages: list = []
    for i in range(MIX_SIZE):
        payload = _payload(i)
        request_id = b"%d" % i
        messages.append([
            message(codec.PUT, [(ID, request_id), (TOPIC, b"test/topic"), (b"X-Trace", b"t%d" % i)], [payload]),
            codec.ok(request_id),
            codec.delivery(b"test/topic", [(b"X-Trace", b"t%d" % i)], [payload, b"part-2"]),
            message(codec.SUB, [(ID, request_id), (TOPIC, b"test/")]),
            codec.NOOP_MESSAGE][i % 5])
    return _on_zmtp("mc0", messages, codec.encode_message, codec.decode_message)


def mtl_mixes() -> list[Mix]:
    try:
        from reference_impl.mtl.codec import Confirm, Content, Ping, Response, decode_data, encode_data
    except ImportError:
        return []
    messages: list = []
    for i in range(MIX_SIZE):
        payload = _payload(i)
        messages.append([
            Content(i, "test/queue", (("content-type", "application/octet-stream"), ("n", str(i))), payload),
            Confirm(i, multiple=i % 2 == 0),
            Content(i, "test/queue", (), payload),
            Response(i, 200),
            Ping()][i % 5])
    return _on_zmtp("mtl", messages, encode_data, decode_data)


def all_mixes() -> list[Mix]:
    return stmp_mixes() + micromessage2_mixes() + rsio_mixes() + zmtp_mixes() + mc0_mixes() + mtl_mixes()


def _best(fn: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(REPEATS):
        started = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - started)
    return best


def measure(mix: Mix) -> dict[str, float]:
    wire = mix.encode(mix.messages)
    decoded = mix.decode(wire)
    assert decoded == len(mix.messages), f"{mix.protocol}: decoded {decoded} of {len(mix.messages)}"
    encode_s = _best(lambda: mix.encode(mix.messages))
    decode_s = _best(lambda: mix.decode(wire))
    n, size = len(mix.messages), mix.size(wire)
    return {"frames": n, "bytes": size, "encode_fps": n / encode_s, "encode_mbs": size / encode_s / 1e6,
            "decode_fps": n / decode_s, "decode_mbs": size / decode_s / 1e6}


def main() -> None:
    print(f"{'protocol':<14} {'form':<18} {'encode frames/s':>16} {'MB/s':>7} {'decode frames/s':>16} {'MB/s':>7}"
          f"   ({MIX_SIZE} messages, payloads {'/'.join(map(str, PAYLOAD_SIZES))} B, best of {REPEATS})")
    for mix in all_mixes():
        r = measure(mix)
        print(f"{mix.protocol:<14} {mix.form:<18} {r['encode_fps']:>16,.0f} {r['encode_mbs']:>7.1f} "
              f"{r['decode_fps']:>16,.0f} {r['decode_mbs']:>7.1f}")


# -- pytest-benchmark ---------------------------------------------------------------------

try:
    import pytest
except ImportError:  # the script works without pytest
    pytest = None

if pytest is not None:
    _MIXES = {f"{m.protocol}-{m.form.split()[0]}": m for m in all_mixes()}  # "on ZMTP frames" -> "mc0-on"

    @pytest.mark.parametrize("name", sorted(_MIXES))
    def test_encode(benchmark, name: str) -> None:
        mix = _MIXES[name]
        wire = benchmark(mix.encode, mix.messages)
        benchmark.extra_info.update(frames=len(mix.messages), bytes=len(wire))

    @pytest.mark.parametrize("name", sorted(_MIXES))
    def test_decode(benchmark, name: str) -> None:
        mix = _MIXES[name]
        wire = mix.encode(mix.messages)
        assert benchmark(mix.decode, wire) == len(mix.messages)
        benchmark.extra_info.update(frames=len(mix.messages), bytes=len(wire))


if __name__ == "__main__":
    main()
