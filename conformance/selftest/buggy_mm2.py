"""A small Micromessage2 server over TCP with one switchable bug, for proving the suite can fail.

Correct behaviour follows docs/profiles/micromessage2.md (its rules and its test service); each bug name turns
one rule off.  ``explains=True`` is a correct variant that takes the profile's other allowed path
wherever it may just close: it sends an ERROR saying why first.  Built on the codec and the extension-list grammar only, not on the reference
connection state machine, so its behaviour (and its bugs) are its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections import deque
from dataclasses import dataclass, field

from reference_impl.common.errors import CodecError
from reference_impl.micromessage2 import codec
from reference_impl.micromessage2.codec import (
    CommandFrame, ErrorFrame, ExtensionFrame, Handshake, MessageFrame, StreamDecoder,
)
from reference_impl.micromessage2.extensions import parse_command, parse_extension_list, parse_properties

BUGS = {
    "zero-based-ids",          # extension IDs counted from 0 instead of 1
    "no-error-missing-required",  # accepts a required extension it lacks, no ERROR
    "window-overrun",          # pushes one message more than the ack window
    "ack-not-cumulative-across-wrap",  # an ack only covers unacked numbers <= it (65001..65535 stay unacked after ack 465)
    "no-split",                # sends a payload over 1 MiB as one frame
    "large-threshold-512",     # sets LARGE_PAYLOAD only above 512 bytes; lengths 256..512 go out in one byte (orig code)
    "fan-out-to-one",          # a published message reaches only the first subscriber
    "hello-before-check",      # sends its hello as soon as bytes arrive, before it checks the client's major
    "ignores-error",           # keeps serving after the peer's ERROR
    "open-after-eof-mid-frame",  # never closes when the stream ends inside a frame
    "command-ignores-large",   # reads a COMMAND's length as one byte even when LARGE_PAYLOAD is set
    "extension-large-unset",   # EXTENSION frames (dotnet type names) over 255 bytes go out with a one-byte length
    "unsubscribe-removes-everyone",  # unsubscribe drops every subscriber of the destination, not just the sender
    "final-required-unchecked",  # checks required extensions in the client hello only, not in the final message
    "no-handshake-read-timeout",  # a handshake frame stalled mid-way is waited for forever (timeout after it only)
    "ack-check-ignores-wrap",  # "ack > last sent" is refused even after the wrap (a pre-wrap unacked number)
    "reserved-bits-only-on-send",  # reserved flag bits 32/64/128 refused on SEND but masked off COMMAND/EXTENSION
    "final-major-unchecked",   # the major version is checked on the client hello, not on the final message
    "field-check-required-only",  # the required list is checked against the grammar; bad optional items are dropped
    "props-len-high-byte-dropped",  # a MESSAGE's u16 properties length goes out with its high byte zeroed
    "continued-joined-only-for-send",  # CONTINUED fragments are joined for SEND frames only
    "echo-bypasses-window",    # echoes are not counted against the ack window (test/push is)
    "server-no-ack-under-batch-ack",  # acks the client's SENDs under ack but never under batch-ack
    "dotnet-type-once",        # the dotnet type frame goes out only when the type changes
}
SUPPORTED = {"json", "dotnet", "ack", "batch-ack", "pubsub"}
MIB = 1024 * 1024


class Fail(Exception):
    """The peer broke a rule: send ERROR with this reason and close."""


@dataclass
class Broker:
    subscribers: dict[str, dict] = field(default_factory=dict)  # destination -> connections, in subscribe order


def encode(frame: codec.Frame, bug: str | None) -> bytes:
    if isinstance(frame, ExtensionFrame) and frame.ext_id == 0:  # zero-based-ids: the codec refuses ID 0
        data = codec.encode_frame(ExtensionFrame(1, frame.payload, frame.continued))
        return data[:1] + b"\x00" + data[2:]
    data = codec.encode_frame(frame)
    n = len(frame.payload)
    if bug == "props-len-high-byte-dropped" and isinstance(frame, MessageFrame) and len(frame.properties.encode()) > 255:
        at = 1 + 2 + 1 + len(frame.destination.encode())  # the high byte of the u16 properties length
        data = data[:at] + b"\x00" + data[at + 1:]
    if bug == "extension-large-unset" and isinstance(frame, ExtensionFrame) and n > 255:
        # the EXTENSION writer knows only the one-byte length: n & 0xFF, no LARGE_PAYLOAD
        return bytes([data[0] & ~codec.Flags.LARGE_PAYLOAD, data[1], n & 0xFF]) + frame.payload
    if bug == "large-threshold-512" and 255 < n <= 512:
        # orig: a one-byte length below 513 bytes, so 256..512 are truncated to n & 0xFF
        head_len = len(data) - n - 4
        data = bytes([data[0] & ~codec.Flags.LARGE_PAYLOAD]) + data[1:head_len] + bytes([n & 0xFF]) + frame.payload
    return data


class Conn:
    def __init__(self, server: "BuggyMm2Server", reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.server = server
        self.bug = server.bug
        self.reader = reader
        self.writer = writer
        self.decoder = StreamDecoder(8 * MIB)
        self.extensions: list[str] = []
        self.window: int | None = None
        self.unacked: deque[int] = deque()
        self.last_seq = 0
        self.wrapped = False
        self.fragments: dict[type, list] = {}
        self.type_name: str | None = None
        self.outbox: deque[tuple[str, bytes, str, str | None]] = deque()
        self.subscriptions: set[str] = set()
        self.last_type_sent: str | None = None

    # --- output -------------------------------------------------------------------

    def write(self, frame: codec.Frame) -> None:
        self.writer.write(encode(frame, self.bug))

    def ext_id(self, name: str) -> int | None:
        if name not in self.extensions:
            return None
        return self.extensions.index(name) + (0 if self.bug == "zero-based-ids" else 1)

    def ext_by_id(self, ext_id: int) -> str | None:
        index = ext_id - (0 if self.bug == "zero-based-ids" else 1)
        return self.extensions[index] if 0 <= index < len(self.extensions) else None

    def credit(self) -> bool:
        if self.window is None:
            return True
        limit = self.window + (1 if self.bug == "window-overrun" else 0)
        return len(self.unacked) < limit

    def pump(self) -> None:
        while self.outbox and self.credit():
            destination, payload, properties, type_name = self.outbox.popleft()
            seq = 1 if self.last_seq == 65535 else self.last_seq + 1
            self.wrapped = self.wrapped or seq < self.last_seq
            self.last_seq = seq
            if self.window is not None and not (self.bug == "echo-bypasses-window" and destination == "test/echo"):
                self.unacked.append(seq)
            dotnet = self.ext_id("dotnet")
            if dotnet is not None and type_name:
                if not (self.bug == "dotnet-type-once" and type_name == self.last_type_sent):
                    self.write(ExtensionFrame(dotnet, type_name.encode()))
                self.last_type_sent = type_name
            frame = MessageFrame(seq, destination, properties, payload)
            fragments = [frame] if self.bug == "no-split" else codec.split(frame, MIB)
            for fragment in fragments:
                self.write(fragment)

    # --- input --------------------------------------------------------------------

    async def read_item(self, handshake: bool):
        while True:
            if self.bug == "command-ignores-large" and not handshake and self.decoder.buffered:
                first = self.decoder.peek()
                if first & codec.Flags.COMMAND and first & codec.Flags.LARGE_PAYLOAD:
                    # the COMMAND reader takes one length byte whatever the flags say
                    self.decoder._buf[self.decoder._pos] = first & ~codec.Flags.LARGE_PAYLOAD
            if self.bug == "reserved-bits-only-on-send" and not handshake and self.decoder.buffered:
                first = self.decoder.peek()
                if first & 0x07 and first & 0xE0:
                    # the reserved bits are looked at on SEND frames only (none of 1/2/4 set)
                    self.decoder._buf[self.decoder._pos] = first & 0x1F
            item = self.decoder.next_handshake() if handshake else self.decoder.next_frame()
            if item is not None:
                return item
            timeout = self.server.read_timeout if self.decoder.buffered else None
            if handshake and self.bug == "no-handshake-read-timeout":
                timeout = None
            try:
                data = await asyncio.wait_for(self.reader.read(65536), timeout)
            except asyncio.TimeoutError:
                raise Fail("read-timeout: a frame stayed incomplete") from None
            if not data:
                if self.decoder.buffered and self.bug == "open-after-eof-mid-frame":
                    await asyncio.Event().wait()  # until the server shuts down
                if self.decoder.buffered and self.server.explains:
                    raise Fail("truncated: the stream ended inside a frame")
                return None
            self.decoder.feed(data)

    async def handshake(self) -> bool:
        if self.decoder.peek() is None:
            data = await self.reader.read(65536)
            if not data:
                return False
            self.decoder.feed(data)
        if self.bug == "hello-before-check":
            self.writer.write(codec.encode_handshake(Handshake(1, 0, "buggy-mm2", "", "")))
        first = self.decoder.peek()
        if self.server.explains and first != 1:
            # handshake frames have no flags byte: an ERROR's first byte is a hello's major
            raise Fail(f"version-mismatch: major {first}")
        if first not in (1, 4, 12, 20, 28):
            raise Fail(f"version-mismatch: first byte {first}")
        hello = await self.read_item(handshake=True)
        if hello is None or isinstance(hello, ErrorFrame):
            return False
        if hello.major != 1:
            raise Fail(f"version-mismatch: major {hello.major}")
        required = parse_extension_list(hello.required)
        if self.bug == "field-check-required-only":
            # the optional list is read leniently: an item that breaks the grammar is dropped
            optional = []
            for part in hello.optional.split(";"):
                with contextlib.suppress(CodecError, ValueError):
                    optional += parse_extension_list(part) if part else []
        else:
            optional = parse_extension_list(hello.optional)
        lacking = [e.name for e in required if e.name not in SUPPORTED]
        if lacking and self.bug != "no-error-missing-required":
            raise Fail("missing-required-extension: " + ",".join(lacking))
        echoed = ";".join(e.name for e in optional if e.name in SUPPORTED and e.name not in {r.name for r in required})
        if self.bug != "hello-before-check":
            self.writer.write(codec.encode_handshake(Handshake(1, 0, "buggy-mm2", "", echoed)))
        await self.writer.drain()
        if self.decoder.peek() is None:
            data = await self.reader.read(65536)
            if not data:
                return False
            self.decoder.feed(data)
        if self.decoder.peek() not in (1, 4, 12, 20, 28):
            if not (self.bug == "final-major-unchecked" and self.decoder.peek() in (0, 2, 3)):
                raise Fail("version-mismatch: a frame where the final handshake belongs")
        final = await self.read_item(handshake=True)
        if final is None or isinstance(final, ErrorFrame):
            return False
        final_lacking = [e.name for e in parse_extension_list(final.required) if e.name not in SUPPORTED]
        if final_lacking and self.bug != "final-required-unchecked":
            raise Fail("unsupported-extension: " + ",".join(final_lacking))
        extensions = parse_extension_list(final.required) + parse_extension_list(final.optional)
        self.extensions = [e.name for e in extensions]
        by_name = {e.name: e for e in extensions}
        if "ack" in by_name:
            self.window = 1
        elif "batch-ack" in by_name:
            raw = by_name["batch-ack"].properties.get("max-count", "10")
            self.window = int(raw)
        return True

    def join(self, frame: codec.Frame) -> codec.Frame | None:
        if self.bug == "continued-joined-only-for-send" and not isinstance(frame, MessageFrame):
            return dataclasses.replace(frame, continued=False)  # each fragment taken as a whole frame
        kind = type(frame)
        if kind not in self.fragments and not frame.continued:
            return frame
        self.fragments.setdefault(kind, []).append(frame)
        if frame.continued:
            return None
        return codec.join(self.fragments.pop(kind))

    def on_frame(self, frame: codec.Frame) -> bool:
        """Handle one whole frame; False when the connection ends."""
        if isinstance(frame, ErrorFrame):
            if self.server.explains:
                raise Fail("closing: the peer sent ERROR")
            return self.bug == "ignores-error"
        if isinstance(frame, ExtensionFrame):
            name = self.ext_by_id(frame.ext_id)
            if name is None:
                raise Fail(f"unknown-extension-id: {frame.ext_id}")
            if name in ("ack", "batch-ack"):
                self.on_ack(int.from_bytes(frame.payload, "big"))
            elif name == "dotnet":
                self.type_name = frame.payload.decode("utf-8", errors="replace")
            return True
        if isinstance(frame, CommandFrame):
            command = parse_command(frame.payload.decode("ascii"))
            if command.name not in ("subscribe", "unsubscribe"):
                raise Fail(f"unknown-command: {command.name}")
            if "pubsub" not in self.extensions:
                raise Fail("pubsub-not-active")
            destination = command.arguments.get("destination")
            if not destination:
                raise Fail("missing-destination")
            subscribers = self.server.broker.subscribers.setdefault(destination, {})
            if command.name == "subscribe":
                subscribers[self] = None
            elif self.bug == "unsubscribe-removes-everyone":
                subscribers.clear()
            else:
                subscribers.pop(self, None)
            return True
        self.on_send(frame)
        return True

    def on_ack(self, seq: int) -> None:
        if self.bug == "ack-not-cumulative-across-wrap":
            if seq == 0 or (not self.wrapped and seq > self.last_seq):
                raise Fail(f"ack-not-sent: {seq}")
            self.unacked = deque(s for s in self.unacked if s > seq)
            return
        if self.bug == "ack-check-ignores-wrap" and (seq == 0 or seq > self.last_seq):
            raise Fail(f"ack-not-sent: {seq}")  # as if numbers never wrapped
        if seq in self.unacked:
            while self.unacked.popleft() != seq:
                pass
        elif seq == 0 or (not self.wrapped and seq > self.last_seq):
            raise Fail(f"ack-not-sent: {seq}")

    def on_send(self, frame: MessageFrame) -> None:
        ack_name = "ack" if "ack" in self.extensions else "batch-ack" if "batch-ack" in self.extensions else None
        if self.bug == "server-no-ack-under-batch-ack" and ack_name == "batch-ack":
            ack_name = None
        if ack_name is not None:
            self.write(ExtensionFrame(self.ext_id(ack_name), frame.seq.to_bytes(2, "big")))
        type_name = self.type_name
        if frame.destination == "test/echo":
            self.outbox.append(("test/echo", frame.payload, frame.properties, type_name))
        elif frame.destination == "test/push":
            props = parse_properties(frame.properties)
            count, size = int(props["count"].lstrip("N")), int(props["size"].lstrip("N"))
            for k in range(count):
                block = bytes((k + i) % 256 for i in range(min(size, 256)))
                self.outbox.append(("test/push", (block * (size // 256 + 1))[:size], "", "System.Byte[]"))
        else:
            subscribers = list(self.server.broker.subscribers.get(frame.destination, ()))
            for conn in subscribers[:1] if self.bug == "fan-out-to-one" else subscribers:
                conn.outbox.append((frame.destination, frame.payload, frame.properties, type_name))
                if conn is not self:
                    conn.pump()  # its own loop is waiting for input: send its share now

    async def run(self) -> None:
        error: str | None = None
        try:
            if not await self.handshake():
                return
            while True:
                self.pump()
                await self.writer.drain()
                frame = await self.read_item(handshake=False)
                if frame is None:
                    return
                whole = self.join(frame)
                if whole is not None and not self.on_frame(whole):
                    return
        except (Fail, CodecError, ValueError, KeyError) as exc:
            error = str(exc) or type(exc).__name__
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            for subscribers in self.server.broker.subscribers.values():
                subscribers.pop(self, None)
            with contextlib.suppress(Exception):
                if error is not None:
                    self.server.errors_sent += 1
                    self.writer.write(encode(ErrorFrame(error.encode()), None))
                    await self.writer.drain()
                    self.writer.write_eof()
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(self.reader.read(65536), 0.3)
                self.writer.close()


class BuggyMm2Server:
    def __init__(self, bug: str | None, read_timeout: float = 1.0, explains: bool = False) -> None:
        assert bug is None or bug in BUGS, bug
        self.bug = bug
        self.explains = explains
        self.errors_sent = 0
        self.read_timeout = read_timeout
        self.broker = Broker()
        self.server: asyncio.base_events.Server | None = None
        self.url = ""
        self._tasks: set[asyncio.Task] = set()

    async def start(self) -> "BuggyMm2Server":
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.url = f"tcp://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"
        return self

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self._tasks.add(task)
        try:
            await Conn(self, reader, writer).run()
        except asyncio.CancelledError:
            pass
        finally:
            self._tasks.discard(task)

    async def close(self) -> None:
        self.server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
