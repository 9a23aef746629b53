"""WebSocket (RFC 6455) out of one reassembled TCP direction: the HTTP upgrade, then messages.

The upgrade request or its 101 answer, then frames: unmasked (server) or masked (client),
fragmented messages joined, control frames (ping, pong, close) passed on by kind.  A stream that
is not WebSocket raises :class:`NotWebSocket` (the observer reports that direction as not
checkable with its reason: it is not the protocol binding the port map names).
"""

from __future__ import annotations

import struct

_MAX_HEADER = 16 * 1024
_MAX_MESSAGE = 64 * 1024 * 1024
TEXT, BINARY, CLOSE, PING, PONG = 1, 2, 8, 9, 10


class NotWebSocket(Exception):
    pass


class WsDirection:
    """One direction: ``feed(bytes)`` -> [(kind, payload)]; kind is "upgrade" (the header block,
    str), "text" (str), "binary" (bytes), "close", "ping" or "pong"."""

    def __init__(self, sender: str) -> None:
        self.sender = sender
        self.buf = bytearray()
        self.upgraded = False
        self.fragments: list[bytes] = []
        self.fragment_op = 0

    def feed(self, data: bytes) -> list[tuple[str, bytes | str]]:
        self.buf += data
        out: list[tuple[str, bytes | str]] = []
        if not self.upgraded:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                if len(self.buf) > _MAX_HEADER:
                    raise NotWebSocket(f"no end of the HTTP upgrade header in {_MAX_HEADER} bytes")
                return out
            head = bytes(self.buf[:end]).decode("latin-1")
            del self.buf[:end + 4]
            self._check_upgrade(head)
            self.upgraded = True
            out.append(("upgrade", head))
        while (frame := self._frame()) is not None:
            out += frame
        return out

    def _check_upgrade(self, head: str) -> None:
        lines = head.split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        if self.sender == "client":
            if not lines[0].startswith("GET ") or headers.get("upgrade", "").lower() != "websocket":
                raise NotWebSocket(f"the client's first line is {lines[0][:60]!r}, not a WebSocket upgrade")
        elif not lines[0].startswith("HTTP/1.1 101"):
            raise NotWebSocket(f"the server answered the upgrade with {lines[0][:60]!r}")

    def _frame(self) -> list[tuple[str, bytes | str]] | None:
        buf = self.buf
        if len(buf) < 2:
            return None
        fin, opcode, masked, size = buf[0] & 0x80, buf[0] & 0x0F, buf[1] & 0x80, buf[1] & 0x7F
        at = 2
        if size == 126:
            if len(buf) < 4:
                return None
            size, at = struct.unpack_from(">H", buf, 2)[0], 4
        elif size == 127:
            if len(buf) < 10:
                return None
            size, at = struct.unpack_from(">Q", buf, 2)[0], 10
        if size > _MAX_MESSAGE:
            raise NotWebSocket(f"a frame of {size} bytes: more than the {_MAX_MESSAGE} we hold")
        key = b""
        if masked:
            if len(buf) < at + 4:
                return None
            key, at = bytes(buf[at:at + 4]), at + 4
        if len(buf) < at + size:
            return None
        payload = bytes(buf[at:at + size])
        del buf[:at + size]
        if key:
            payload = bytes(b ^ key[i % 4] for i, b in enumerate(payload)) if size < 256 else _unmask(payload, key)
        if opcode >= 8:
            return [({CLOSE: "close", PING: "ping", PONG: "pong"}.get(opcode, f"opcode-{opcode}"), payload)]
        if opcode in (TEXT, BINARY):
            self.fragment_op, self.fragments = opcode, [payload]
        elif opcode == 0 and self.fragments:
            self.fragments.append(payload)
        else:
            raise NotWebSocket(f"frame opcode {opcode} where a message frame belongs")
        if not fin:
            return []
        message, self.fragments = b"".join(self.fragments), []
        if self.fragment_op == TEXT:
            try:
                return [("text", message.decode("utf-8"))]
            except UnicodeDecodeError:
                raise NotWebSocket("a text message that is not UTF-8") from None
        return [("binary", message)]


def _unmask(payload: bytes, key: bytes) -> bytes:
    n = len(payload)
    mask = int.from_bytes((key * (n // 4 + 1))[:n], "big")
    return (int.from_bytes(payload, "big") ^ mask).to_bytes(n, "big")
