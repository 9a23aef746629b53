"""The suite's own WebSocket side failing the connection is not the target closing it.

A target that answers with a frame RFC 6455 forbids (a reserved bit set, no extension
negotiated) makes the suite's WebSocket client fail the connection with 1002; that must
grade FAILED, never satisfy an expectation that the target closes.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib

from suite_helpers import Grade, all_cases, run_case

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"  # RFC 6455 section 1.3
BINARY_WITH_RSV1 = bytes([0x80 | 0x40 | 0x02, 0x01, 0x41])  # FIN, RSV1, opcode 2; one octet "A"
CLOSE_1000 = bytes([0x88, 0x02, 0x03, 0xE8])


async def _serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, answer: bytes) -> None:
    """Accept the upgrade, wait for the case's first message, answer ``answer``, then hang up."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
        key = next(line.split(b":", 1)[1].strip() for line in head.split(b"\r\n")
                   if line.lower().startswith(b"sec-websocket-key:"))
        accept = base64.b64encode(hashlib.sha1(key + GUID).digest())
        writer.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                     b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\n")
        await reader.read(2)  # the start of the suite's (masked) frame
        writer.write(answer)
        await writer.drain()
        await asyncio.sleep(0.2)
    finally:
        writer.close()


async def _grade(answer: bytes):
    server = await asyncio.start_server(lambda r, w: _serve(r, w, answer), "127.0.0.1", 0)
    case = all_cases("stmp")["stmp/error-disconnect/garbage-first-byte"]
    try:
        return await run_case(case, f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}/", transport="ws")
    finally:
        server.close()
        await server.wait_closed()


def test_an_invalid_websocket_frame_then_a_hang_up_is_not_a_refusal() -> None:
    result = asyncio.run(_grade(BINARY_WITH_RSV1))
    assert result.grade is Grade.FAILED, (result.grade, result.message)
    assert "WebSocket protocol" in result.message, result.message


def test_a_clean_close_by_the_target_still_counts_as_its_refusal() -> None:
    # the twin: the same target closing properly passes, so the failure above is the bad frame's
    result = asyncio.run(_grade(CLOSE_1000))
    assert result.grade is Grade.PASSED, (result.grade, result.message)
