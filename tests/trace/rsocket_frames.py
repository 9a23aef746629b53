"""RSocket frames for hand-built captures, laid out by hand from Protocol.md ("Framing"): a 24-bit
length, the stream ID (31 bits), the frame type (6 bits) and flags (10 bits), then the body.
Lengths of positioned frames (for implied positions) are written out where the tests use them."""

from __future__ import annotations

TOKEN = b"tok"


def frame(stream: int, kind: int, flags: int, body: bytes) -> bytes:
    rest = stream.to_bytes(4, "big") + (kind << 10 | flags).to_bytes(2, "big") + body
    return len(rest).to_bytes(3, "big") + rest


def setup(lease: bool = False) -> bytes:
    """SETUP 1.0 (0x01) with R (0x080), and L (0x040) if asked: keepalive 30 s, lifetime 90 s, token "tok"."""
    body = (bytes.fromhex("0001" "0000" "00007530" "00015f90") + len(TOKEN).to_bytes(2, "big") + TOKEN
            + b"\x0atext/plain" * 2)
    return frame(0, 0x01, 0x080 | (0x040 if lease else 0), body)


#: REQUEST_STREAM (0x06) on stream 1, n 2, data "range:5": 6 + 4 + 7 = 17 bytes (implied position 0-17)
REQUEST_STREAM = frame(1, 0x06, 0, bytes.fromhex("00000002") + b"range:5")


def payload(data: bytes) -> bytes:
    """PAYLOAD (0x0A) with N (0x020) on stream 1: 6 + len(data) bytes."""
    return frame(1, 0x0A, 0x020, data)


def lease() -> bytes:
    """LEASE (0x02): TTL 30 s, 1000 requests."""
    return frame(0, 0x02, 0, bytes.fromhex("00007530" "000003e8"))


def keepalive(position: int, respond: bool = True) -> bytes:
    """KEEPALIVE (0x03), R (0x080) if asked, with the last received position."""
    return frame(0, 0x03, 0x080 if respond else 0, position.to_bytes(8, "big"))


def resume(server_position: int, client_position: int = 0) -> bytes:
    """RESUME (0x0D) 1.0 with token "tok", the last received server position, the first available client one."""
    return frame(0, 0x0D, 0, bytes.fromhex("0001" "0000") + len(TOKEN).to_bytes(2, "big") + TOKEN
                 + server_position.to_bytes(8, "big") + client_position.to_bytes(8, "big"))


def resume_ok(client_position: int) -> bytes:
    """RESUME_OK (0x0E) with the last received client position."""
    return frame(0, 0x0E, 0, client_position.to_bytes(8, "big"))
