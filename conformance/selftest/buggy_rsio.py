"""A small rsio/0 server over TCP with one switchable bug, for proving the suite can fail.

Correct behaviour follows docs/profiles/rsio.md (its rules and its test publishers); each bug name turns
one rule off.  Built on the rsio codec only, so its bugs are independent of the reference
connection state machine and test service.  ``explains=True`` is a correct variant that, when the
client's side shuts, ends each open stream with onError and says goodbye before closing.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from unittest import mock

from reference_impl.common.errors import CodecError, IncompleteFrame
from reference_impl.common.varint import decode_uvarint, encode_uvarint
from reference_impl.rsio import codec
from reference_impl.rsio.codec import (
    Cancel, ClientHello, Goodbye, OnComplete, OnError, OnNext, OnNextLastPart, OnNextPacked,
    OnNextPart, Request, ServerHello, Subscribe, Subscribed,
)

LONG_MAX = 2**63 - 1
PART = 16 << 10
PACK_BYTES = 16 << 10

BUGS = {
    "past-demand",               # sends one element more than demanded
    "ignores-cancel",            # cancel is a no-op: the stream goes on serving requests
    "accepts-request-zero",      # request(0) is a no-op instead of onError (rule 3.9)
    "parts-as-onnext",           # sends the parts of a large element as separate onNext messages
    "mislabels-parts",           # gives every part of one element a new element Id
    "parts-use-demand",          # each part of a split element takes one unit of demand
    "wrong-version-no-goodbye",  # closes on a wrong version without sending goodbye
    "no-close-after-goodbye",    # sends goodbye on a wrong version but keeps the connection open
    "demand-wraps",              # adds demand as a signed 64-bit sum, which wraps past 2^63-1
    "no-goodbye-reply",          # closes on goodbye without answering it
    "id-in-use-replaced",        # a subscribe on an Id in use silently replaces the stream
    "completes-on-eof",          # when the client's side shuts, signals onComplete on streams that never completed
    "fixed-single-prefixed",     # in fixed-size mode, a lone onNext (not packed) still carries a length prefix
    "onnext-length-u8",          # writes an onNext element's length as one byte, not a varint (elements of 128+ bytes)
    "goodbye-keeps-streams",     # answers goodbye but leaves the streams open: elements go on after the goodbye
    "fixed-past-count",          # packs as many fixed-size elements as demanded, past the N the stream has
    "packed-count-u8",           # writes onNextPacked's count as one byte, not a varint (128+ elements in one message)
    "hello-count-u8",            # reads the clientHello's extension count as one byte, not a varint (128+ extensions)
    "demand-u64-wrap",           # adds demand as an unsigned 64-bit sum, which wraps to 0 at 2^64
    "demand-per-connection",     # one demand counter for all the range streams of a connection, not one per stream
    "parts-offset-shared",       # keeps a split element's byte offset per connection, not per stream
    "error-goodbye-keeps-streams",  # on a malformed message, says goodbye but its streams go on for 500 ms
    "subscribed-size-u8",        # writes subscribed.elementSize as one byte, not a varint (sizes of 256+)
    "id-u64-accepted",           # reads (and writes) subscriber Ids as u64: an Id past 2^63-1 is accepted
    "initial-demand-u64-clamped",  # reads initialDemand as u64, clamped to 2^63-1, instead of refusing it
    "overlong-only-on-ids",      # refuses an overlong varint only in an Id field: a request's demand as 81 00 is taken
    "request-zero-before-lookup",  # request(0) gets onError even for a stream that has ended
    "goodbye-finishes-split-element",  # answers goodbye, then sends the rest of a split element begun, then closes
}


def _client_hello_count_u8(buf: bytearray):
    """clientHello with its Array[Id] count read as one byte (the bug ``hello-count-u8``)."""
    reader = codec._Reader(buf, 0, codec.DEFAULT_MAX_MESSAGE)
    reader.varint()  # type 1
    version = reader.varint()
    count = reader._take(1)[0]
    ids = tuple(reader.varint() for _ in range(count))
    return ClientHello(version, ids), reader.pos


def _decode_lenient(buf: bytearray, bug: str):
    """subscribe and request read with one varint rule relaxed, as the bugs ``id-u64-accepted``,
    ``initial-demand-u64-clamped`` and ``overlong-only-on-ids`` do; other messages as the codec reads them."""
    if buf[0] not in (4, 5):
        return codec.decode_message(buf, 0)
    pos = 1

    def varint(u64: bool = False, overlong: bool = False) -> int:
        nonlocal pos
        value, pos = decode_uvarint(buf, pos, max_value=2**64 - 1 if u64 else LONG_MAX, strict=not overlong)
        return value

    if buf[0] == 5:
        sid = varint(u64=bug == "id-u64-accepted")
        return Request(sid, varint(overlong=bug == "overlong-only-on-ids")), pos
    length = varint()
    if pos + length > len(buf):
        raise IncompleteFrame()
    try:
        publisher = bytes(buf[pos:pos + length]).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CodecError("invalid-utf8", str(exc)) from exc
    pos += length
    sid = varint(u64=bug == "id-u64-accepted")
    demand = varint(u64=bug == "initial-demand-u64-clamped")
    return Subscribe(publisher, sid, min(demand, LONG_MAX)), pos


def pattern(start: int, length: int) -> bytes:
    return bytes((start + i) % 256 for i in range(length))


class _Stream:
    def __init__(self, kind: str, count: int, size: int, demand: int) -> None:
        self.kind, self.count, self.size, self.demand = kind, count, size, demand
        self.next = 0  # element index, or bytes sent for test/large
        self.done = False  # test/large: every byte sent


class _Connection:
    def __init__(self, bug: str | None, writer: asyncio.StreamWriter) -> None:
        self.bug = bug
        self.writer = writer
        self.buf = bytearray()
        self.streams: dict[int, _Stream] = {}
        self.closed = False
        self.failing = False  # error-goodbye-keeps-streams: goodbye sent, the streams go on
        self.shared_demand = 0  # demand-per-connection
        self.shared_offset = 0  # parts-offset-shared
        self.finishing = False  # goodbye-finishes-split-element: goodbye sent, an element still going out
        self.work = asyncio.Event()
        self.send(ServerHello(0, ()))

    def send(self, message, element_size: int = 0) -> None:
        # a transport that is closing (the peer reset it) takes no more: asyncio would log each write
        if not self.closed and not self.writer.transport.is_closing():
            if self.bug == "onnext-length-u8" and isinstance(message, OnNext) and not element_size:
                data = bytes([8]) + encode_uvarint(message.subscriber) + bytes([len(message.element) & 0xFF])
                self.writer.write(data + message.element)
                return
            if self.bug == "packed-count-u8" and isinstance(message, OnNextPacked):
                data = bytes([11]) + encode_uvarint(message.subscriber) + bytes([len(message.elements) & 0xFF])
                self.writer.write(data + b"".join(message.elements))
                return
            if self.bug == "subscribed-size-u8" and isinstance(message, Subscribed):
                self.writer.write(bytes([7]) + encode_uvarint(message.subscriber) + bytes([message.element_size & 0xFF]))
                return
            if self.bug == "id-u64-accepted":  # Ids u64 end to end
                with mock.patch.object(codec, "encode_uvarint", lambda n, **kw: encode_uvarint(n, max_value=2**64 - 1)):
                    self.writer.write(codec.encode_message(message, element_size=element_size))
                return
            self.writer.write(codec.encode_message(message, element_size=element_size))

    def close(self, reason: str | None) -> None:
        if self.bug == "error-goodbye-keeps-streams" and reason not in (None, "", "unsupported-version"):
            self.send(Goodbye(reason))
            self.failing = True
            asyncio.get_running_loop().call_later(0.5, self.close, None)
            self.work.set()
            return
        if reason is not None:
            self.send(Goodbye(reason))
        self.closed = True
        self.writer.close()

    # -- receiving -------------------------------------------------------------

    def receive(self, data: bytes) -> None:
        self.buf += data
        while self.buf and not self.closed and not self.failing:
            try:
                if self.bug == "hello-count-u8" and self.buf[0] == 1:
                    message, end = _client_hello_count_u8(self.buf)
                elif self.bug in ("id-u64-accepted", "initial-demand-u64-clamped", "overlong-only-on-ids"):
                    message, end = _decode_lenient(self.buf, self.bug)
                else:
                    message, end = codec.decode_message(self.buf, 0)
            except IncompleteFrame:
                return
            except CodecError as exc:
                self.close(exc.code)
                return
            del self.buf[:end]
            self.handle(message)
        self.work.set()

    def handle(self, message) -> None:
        if isinstance(message, ClientHello):
            if message.version != 0:
                if self.bug == "wrong-version-no-goodbye":
                    self.close(None)
                elif self.bug == "no-close-after-goodbye":
                    self.send(Goodbye("unsupported-version"))
                    self.streams.clear()
                else:
                    self.close("unsupported-version")
        elif isinstance(message, Subscribe):
            self.subscribe(message)
        elif isinstance(message, Request):
            if self.bug == "request-zero-before-lookup" and message.demand == 0:
                self.streams.pop(message.subscriber, None)
                self.send(OnError(message.subscriber, "request(0): rule 3.9"))
                return
            stream = self.streams.get(message.subscriber)
            if stream is None:
                return
            if message.demand == 0:
                if self.bug != "accepts-request-zero":
                    del self.streams[message.subscriber]
                    self.send(OnError(message.subscriber, "request(0): rule 3.9"))
                return
            if self.bug == "demand-wraps":
                total = stream.demand + message.demand
                stream.demand = total - 2**64 if total > LONG_MAX else total
            elif self.bug == "demand-u64-wrap":
                stream.demand = (stream.demand + message.demand) % 2**64
            elif self.bug == "demand-per-connection" and stream.kind == "range":
                self.shared_demand = min(LONG_MAX, self.shared_demand + message.demand)
            else:
                stream.demand = min(LONG_MAX, stream.demand + message.demand)
        elif isinstance(message, Cancel):
            if self.bug != "ignores-cancel":
                self.streams.pop(message.subscriber, None)
        elif isinstance(message, Goodbye):
            if self.bug == "goodbye-finishes-split-element":
                begun = {sid: s for sid, s in self.streams.items() if s.kind == "large" and 0 < s.next and not s.done}
                self.send(Goodbye(""))
                self.streams = begun
                self.finishing = True
                if not begun:
                    self.close(None)
                return
            if self.bug == "goodbye-keeps-streams":
                self.send(Goodbye(""))
                return
            self.streams.clear()
            self.close(None if self.bug == "no-goodbye-reply" else "")
        else:  # a serverHello, or a publisher's signal: this server subscribes to nothing
            self.close("unexpected-message")

    def subscribe(self, message: Subscribe) -> None:
        sid = message.subscriber
        if sid in self.streams and self.bug != "id-in-use-replaced":
            del self.streams[sid]
            self.send(OnError(sid, "subscriber id in use"))
            return
        demand = message.initial_demand + (1 if self.bug == "past-demand" else 0)
        if self.bug == "demand-per-connection":
            self.shared_demand = min(LONG_MAX, self.shared_demand + demand)
        name = message.publisher
        stream = None
        if m := re.fullmatch(r"test/range/([0-9]{1,18})", name):
            stream = _Stream("range", int(m[1]), 8, demand)
        elif (m := re.fullmatch(r"test/fixed/([0-9]{1,18})/([0-9]{1,5})", name)) and 1 <= int(m[2]) <= 65536:
            stream = _Stream("fixed", int(m[1]), int(m[2]), demand)
        elif (m := re.fullmatch(r"test/large/([0-9]{1,9})", name)) and int(m[1]) <= 64 << 20:
            stream = _Stream("large", 1, int(m[1]), demand)
        elif name == "test/never":
            stream = _Stream("never", 0, 0, demand)
        self.send(Subscribed(sid, stream.size if stream and stream.kind == "fixed" else 0))
        if stream is None or name == "test/error":
            self.send(OnError(sid, "test error" if name == "test/error" else "unknown publisher"))
            return
        self.streams[sid] = stream

    # -- publishing --------------------------------------------------------------

    def step(self, sid: int, s: _Stream) -> bool:
        """Send at most one message for the stream; False when it has nothing to send now."""
        if s.kind == "never":
            return False
        if s.done or (s.kind != "large" and s.next >= s.count):
            del self.streams[sid]
            self.send(OnComplete(sid))
            return True
        if s.kind == "range":
            if self.bug == "demand-per-connection":
                if self.shared_demand <= 0:
                    return False
                self.shared_demand -= 1
            elif s.demand <= 0:
                return False
            else:
                s.demand -= 1
            self.send(OnNext(sid, s.next.to_bytes(8, "big")))
            s.next += 1
            return True
        if s.kind == "fixed":
            left = s.demand if self.bug == "fixed-past-count" else s.count - s.next
            n = min(s.demand, left, max(1, PACK_BYTES // s.size))
            if n <= 0:
                return False
            s.demand -= n
            elements = tuple(pattern(k, s.size) for k in range(s.next, s.next + n))
            s.next += n
            if n == 1:
                self.send(OnNext(sid, elements[0]), 0 if self.bug == "fixed-single-prefixed" else s.size)
            else:
                self.send(OnNextPacked(sid, elements), s.size)
            return True
        if self.finishing:
            sent = self.step_large(sid, s)
            if s.done:  # the element is whole: now close, without onComplete
                self.streams.clear()
                asyncio.get_running_loop().call_soon(self.close, None)
            return sent
        if self.bug == "parts-offset-shared":
            s.next = self.shared_offset
            sent = self.step_large(sid, s)
            self.shared_offset = 0 if s.done else s.next
            return sent
        return self.step_large(sid, s)

    def step_large(self, sid: int, s: _Stream) -> bool:
        per_part = self.bug in ("parts-use-demand", "parts-as-onnext")
        if s.next == 0 or per_part:
            if s.demand <= 0:
                return False
            s.demand -= 1
        if s.size <= PART:
            self.send(OnNext(sid, pattern(0, s.size)))
            s.done = True
            return True
        chunk = pattern(s.next, min(PART, s.size - s.next))
        element = s.next // PART if self.bug == "mislabels-parts" else 0
        s.next += len(chunk)
        s.done = s.next == s.size
        if self.bug == "parts-as-onnext":
            self.send(OnNext(sid, chunk))
        elif s.done:
            self.send(OnNextLastPart(sid, element, chunk))
        else:
            self.send(OnNextPart(sid, element, chunk))
        return True

    async def pump(self) -> None:
        while not self.closed:
            await self.work.wait()
            self.work.clear()
            busy = True
            while busy and not self.closed:
                busy = False
                for _ in range(64):
                    sent = [self.step(sid, s) for sid, s in list(self.streams.items()) if sid in self.streams]
                    if not any(sent):
                        break
                    busy = True
                with contextlib.suppress(ConnectionError):
                    await self.writer.drain()
                await asyncio.sleep(0)


class BuggyRsioServer:
    def __init__(self, bug: str | None = None, explains: bool = False) -> None:
        assert bug is None or bug in BUGS, bug
        self.bug = bug
        self.explains = explains
        self.explained = 0  # connections ended with onError and goodbye
        self.server: asyncio.base_events.Server | None = None
        self.url = ""
        self._tasks: set[asyncio.Task] = set()

    async def start(self) -> "BuggyRsioServer":
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.url = f"tcp://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"
        return self

    async def close(self) -> None:
        self.server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._tasks.add(asyncio.current_task())
        conn = _Connection(self.bug, writer)
        pump = asyncio.create_task(conn.pump())
        try:
            while not conn.closed:
                data = await asyncio.wait_for(reader.read(65536), 30)
                if not data:
                    open_streams = [sid for sid, s in conn.streams.items() if not s.done]
                    if self.bug == "completes-on-eof":
                        for sid in open_streams:
                            conn.send(OnComplete(sid))
                    elif self.explains:
                        for sid in open_streams:
                            conn.send(OnError(sid, "transport closed"))
                        conn.send(Goodbye("transport closed"))
                        self.explained += 1
                    break
                conn.receive(data)
                await writer.drain()
        except (ConnectionError, asyncio.TimeoutError):
            pass
        finally:
            pump.cancel()
            await asyncio.gather(pump, return_exceptions=True)
            conn.closed = True
            writer.close()
            self._tasks.discard(asyncio.current_task())
