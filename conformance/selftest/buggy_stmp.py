"""A small STMP server over TCP with one switchable bug, for proving the suite can fail.

Correct behaviour follows docs/profiles/stmp.md; each bug name turns one rule off.
Built on the codec only, so its bugs are independent of the reference
connection state machine.  ``explains=True`` is a correct variant that answers a stream ending
mid-message with BadRequest before it closes (the reference just closes).
"""

from __future__ import annotations

import asyncio
import time

from reference_impl.common.errors import CodecError
from reference_impl.stmp import codec
from reference_impl.stmp.codec import Notify, Ping, Request, Response

BUGS = {
    "no-close-after-0x35",      # answers VersionNotSupported but keeps the connection
    "wrong-id-after-wrap",      # answers request 0xFFFF with ID 0
    "ps-missing",               # omits PS on TCP responses
    "kind-bits-swapped",        # sends Responses with KIND 1 (request) bits
    "no-heartbeat-timeout",     # never drops a silent peer
    "accepts-before-negotiation",  # serves requests before negotiation
    "no-heartbeats",            # never pings
    "answers-unknown-response",  # replies BadRequest to a Response with an unknown ID
    "reserved-bits-ignored",    # serves frames with reserved bits set
    "not-found-as-bad-request",  # answers an unknown ACTION with 0x20, not 0x24 (a SHOULD)
    "truncated-as-server-error",  # answers a stream that ends mid-message with 0x30 before closing
    "ping-before-negotiation-ignored",  # a Ping before negotiation is let through (no BadRequest, no close)
    "response-before-negotiation-id-zero",  # a Response before negotiation is refused with ID 0, not its own ID
    "negotiation-id-unchecked",  # any Request ACTION 0 negotiates, whatever its ID
    "reserved-bit-0-ignored",   # checks header bits 2-1 only (mask 0x06): bit 0 set is served
    "reserved-action-off-by-one",  # ACTION 0xFF is treated as an application action (NotFound, not 0x31)
    "unknown-notify-answered",  # answers a Notify with an unknown ACTION with Response ID 0 NotFound
    "version-minor-ignored",    # accepts any offered 0.x as 0.1 (compares the major only)
    "only-pings-keep-alive",    # the heartbeat timeout is reset by Pings only, not by other traffic
    "text-guessed-on-tcp",      # like the Go original: a TCP chunk starting 0x30..0x33 is read as a text message
    "reserved-bits-requests-only",  # checks the reserved bits on Requests only: a Notify 0xA9 is read as 0xA8
    "encoding67-requests-only",  # refuses ENCODING 6/7 on Requests only: a Notify or Response reads them as Raw
    "reserved-bits-first-only",  # checks the header of the first message of each TCP read only
    "notify-action0-negotiates",  # before negotiation, a Notify ACTION 0 is taken as the negotiation request
    "negotiation-rejects-json-only",  # refuses a JSON negotiation request only (ENCODING 1, 3, 4 read as Raw)
    "action-low16-dispatch",    # dispatches on ACTION & 0xFFFF: 0x00010100 is served as the echo
    "notify-enc0-writes-ps",    # writes a PS (0) after a Notify with ENCODING 0
    "reserved-range-0xfff",     # takes ACTIONs up to 0xFFF as reserved: 0x200 gets 0x31, not 0x24 (a SHOULD)
    "action-signed",            # holds ACTION in a signed int: 0x80000000 and up get 0x31, not 0x24 (a SHOULD)
    "pings-once",               # sends the first heartbeat only
    "pings-before-negotiation",  # sends heartbeats before negotiation completes
}

#: the header table with reserved bits ignored (for reserved-bits-first-only)
_LENIENT = tuple(codec._HEADERS[b] if codec._HEADERS[b] is not None else codec._HEADERS[b & 0xF8] for b in range(256))


class BuggyStmpServer:
    def __init__(self, bug: str | None, heartbeat_interval: float = 1.0, heartbeat_timeout: float = 3.0,
                 explains: bool = False) -> None:
        assert bug is None or bug in BUGS, bug
        self.bug = bug
        self.explains = explains
        self.interval = heartbeat_interval
        self.timeout = heartbeat_timeout
        self.server: asyncio.base_events.Server | None = None
        self.url = ""

    async def start(self) -> "BuggyStmpServer":
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.url = f"tcp://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"
        return self

    async def close(self) -> None:
        self.server.close()

    def _encode(self, msg) -> bytes:
        if isinstance(msg, Notify) and msg.encoding == 0 and self.bug == "notify-enc0-writes-ps":
            return bytes([0x80]) + msg.action.to_bytes(4, "big") + bytes(4)
        data = codec.encode_binary(msg, with_ps=True)
        if isinstance(msg, Response) and self.bug == "ps-missing" and msg.encoding:
            data = data[:4] + data[8:]
        if isinstance(msg, Response) and self.bug == "kind-bits-swapped":
            data = bytes([data[0] & 0x3F | 0x40]) + data[1:]
        return data

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        decoder = codec.StreamDecoder()
        negotiated = False
        last_in = last_ping = time.monotonic()
        pings_sent = 0
        pending: list[asyncio.Task] = []

        def send(msg) -> None:
            writer.write(self._encode(msg))

        try:
            while True:
                try:
                    data = await asyncio.wait_for(reader.read(65536), 0.1)
                except asyncio.TimeoutError:
                    data = None
                now = time.monotonic()
                if data == b"":
                    if decoder.buffered and self.bug == "truncated-as-server-error":
                        send(Response(0, 0x30, 0, b""))
                    elif decoder.buffered and self.explains:
                        send(Response(0, 0x20, 0, b""))
                    break
                if data:
                    if self.bug != "only-pings-keep-alive":
                        last_in = now
                    if self.bug == "reserved-bit-0-ignored" and decoder.at_boundary:
                        data = bytes([data[0] & 0xFE]) + data[1:] if data[0] & 0x06 == 0 else data
                    if self.bug == "reserved-bits-ignored":
                        data = bytes(b & 0xF8 if i == 0 else b for i, b in enumerate(data))
                    if self.bug in ("reserved-bits-requests-only", "encoding67-requests-only") and decoder.at_boundary:
                        data = self._mask(data)
                    try:
                        if self.bug == "text-guessed-on-tcp" and decoder.at_boundary and 0x30 <= data[0] <= 0x33:
                            messages = [codec.decode_text(data.decode("utf-8", "replace"))]
                        elif self.bug == "reserved-bits-first-only":
                            if decoder.at_boundary:
                                codec._parse_header_byte(data[0])  # the header check, on a read's first message only
                            saved, codec._HEADERS = codec._HEADERS, _LENIENT
                            try:
                                messages = decoder.feed(data)
                            finally:
                                codec._HEADERS = saved
                        else:
                            messages = decoder.feed(data)
                    except CodecError:
                        send(Response(0, 0x20, 0, b""))
                        break
                    bad_after = False
                    if messages and self.bug != "reserved-bits-first-only":  # (its later headers go unchecked)
                        try:
                            decoder.feed(b"")  # raises an error found after them (answered once they are)
                        except CodecError:
                            bad_after = True
                    for msg in messages:
                        if isinstance(msg, Ping) or self.bug != "only-pings-keep-alive":
                            last_in = now
                        if not negotiated:
                            if isinstance(msg, Ping) and self.bug == "ping-before-negotiation-ignored":
                                continue
                            id_ok = msg.id == 0 if isinstance(msg, Request) else False
                            if self.bug == "negotiation-id-unchecked":
                                id_ok = True
                            if self.bug == "notify-action0-negotiates" and isinstance(msg, Notify) and msg.action == 0:
                                msg = Request(0, 0, msg.encoding, msg.payload)
                                id_ok = True
                            if isinstance(msg, Request) and id_ok and msg.action == 0:
                                lenient = self.bug == "negotiation-rejects-json-only"
                                if msg.encoding == 2 if lenient else msg.encoding not in (0, 5):  # no version list
                                    send(Response(0, 0x20, 0, b""))
                                    raise ConnectionAbortedError
                                versions = (codec.decode_versions(msg.payload, text=False)
                                            if msg.encoding == 5 or (lenient and msg.encoding) else [])
                                if self.bug == "version-minor-ignored" and any(major == 0 for major, _ in versions):
                                    versions.append((0, 1))
                                if (0, 1) in versions:
                                    send(Response(0, 0, 5, bytes([0x01])))
                                    negotiated = True
                                    continue
                                send(Response(0, 0x35, 0, b""))
                                if self.bug != "no-close-after-0x35":
                                    raise ConnectionAbortedError
                                continue
                            if self.bug != "accepts-before-negotiation":
                                reply_id = getattr(msg, "id", 0)
                                if self.bug == "response-before-negotiation-id-zero" and isinstance(msg, Response):
                                    reply_id = 0
                                send(Response(reply_id, 0x20, 0, b""))
                                raise ConnectionAbortedError
                        self._handle(msg, send, pending)
                    if bad_after:
                        send(Response(0, 0x20, 0, b""))
                        break
                may_ping = negotiated or self.bug == "pings-before-negotiation"
                if self.bug == "pings-once" and pings_sent >= 1:
                    may_ping = False
                if may_ping and self.bug != "no-heartbeats" and now - last_ping >= self.interval:
                    send(Ping())
                    last_ping = now
                    pings_sent += 1
                if negotiated and self.bug != "no-heartbeat-timeout" and now - last_in > self.timeout:
                    break
                await writer.drain()
        except (ConnectionAbortedError, ConnectionError):
            pass
        finally:
            for task in pending:
                task.cancel()
            try:
                await writer.drain()
            except ConnectionError:
                pass
            writer.close()

    def _handle(self, msg, send, pending: list[asyncio.Task]) -> None:
        if isinstance(msg, Ping):
            return
        if isinstance(msg, Response):
            if self.bug == "answers-unknown-response":
                send(Response(msg.id, 0x20, 0, b""))
            return
        if isinstance(msg, Notify):
            if msg.action == 0x101:
                send(Notify(0x101, msg.encoding, msg.payload))
            elif self.bug == "unknown-notify-answered":
                send(Response(0, 0x24, 0, b""))
            return
        reply_id = 0 if (self.bug == "wrong-id-after-wrap" and msg.id == 0xFFFF) else msg.id
        action = msg.action & 0xFFFF if self.bug == "action-low16-dispatch" else msg.action
        if self.bug == "action-signed" and action >= 0x80000000:
            action -= 0x100000000  # ACTION held in a signed 32-bit int
        if action == 0x100:
            send(Response(reply_id, 0, msg.encoding, msg.payload))
        elif action == 0x102:
            if len(msg.payload) != 4:
                send(Response(reply_id, 0x20, 0, b""))
                return
            delay = int.from_bytes(msg.payload, "big") / 1000

            async def later() -> None:
                await asyncio.sleep(delay)
                send(Response(reply_id, 0, 0, b""))
            pending.append(asyncio.ensure_future(later()))
        elif action < {"reserved-action-off-by-one": 0xFF, "reserved-range-0xfff": 0x1000}.get(self.bug, 0x100):
            send(Response(reply_id, 0x31, 0, b""))
        else:
            send(Response(reply_id, 0x20 if self.bug == "not-found-as-bad-request" else 0x24, 0, b""))

    def _mask(self, data: bytes) -> bytes:
        """The first header of a read, as reserved-bits-requests-only or encoding67-requests-only read it."""
        b = data[0]
        if b >> 6 == 1:  # a Request: checked
            return data
        if self.bug == "reserved-bits-requests-only":
            b &= 0xF8
        elif (b >> 3 & 7) in (6, 7) and b >> 6 != 0:
            b = b & 0xC7 | (5 << 3)  # read as Raw
        return bytes([b]) + data[1:]


def main() -> None:
    """`python -m conformance.selftest.buggy_stmp --bug NAME --port N`: serve until killed (for cmd: targets)."""
    import argparse
    parser = argparse.ArgumentParser()
    parser.add_argument("--bug", choices=sorted(BUGS))
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()

    async def serve() -> None:
        server = BuggyStmpServer(args.bug)
        server.server = await asyncio.start_server(server._serve, "127.0.0.1", args.port)
        await asyncio.Event().wait()

    asyncio.run(serve())


if __name__ == "__main__":
    main()
