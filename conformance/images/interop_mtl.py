"""MTL's data connections in `conformance interop`, through the proxy and a monitor of their own.

A 202 reply on the control connection names the data port the client connects to next
(11/MTL "Connection.Reader", "Connection.Writer").  :class:`LeasePortRewriter` reads the
server's control stream as it crosses the proxy (ZMTP 3.x, NULL or PLAIN: both carry messages in
clear) and holds each 202 reply's port for :class:`MtlWireMonitor`, which opens a proxy on
127.0.0.1 port 0 in front of that data port, and forwards the reply with the proxy's port in
place of the server's: the port's digits are replaced in the JSON text and the frame's size
rewritten (short or long form as the new size needs); every other byte is forwarded as the
server sent it.  The control monitor is fed the server's original bytes (the rewrite is the
suite's, not the server's behaviour) and the wire log says each rewrite.  Every data connection
gets its own :class:`reference_impl.mtl.monitor.DataMonitor`; its violations name the data
connection.  A 202 naming its port in two "port" members (one nested) is forwarded as it is, and
the notes say that its data connection is not monitored.  Under CURVE the reply is encrypted: nothing is rewritten, the data connections go
to the server directly and are not monitored, and the case's notes say so.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from conformance.faultproxy import FaultProxy
from conformance.images.interop_protocol import ConnectionMonitors
from conformance.wirelog import WireLog
from reference_impl.common.errors import CodecError, IncompleteFrame
from reference_impl.mtl import control
from reference_impl.mtl.monitor import ControlMonitor, DataMonitor, Side, Violation
from reference_impl.zmtp.codec import COMMAND, DEFAULT_MAX_FRAME, LONG, MORE, Frame, encode_frame, frame_header
from reference_impl.zmtp.greeting import GreetingDecoder

CLEAR_MECHANISMS = ("NULL", "PLAIN")
_PORT = re.compile(rb'"port"\s*:\s*(\d+)')


@dataclass(frozen=True)
class LeasePort:
    """The last frame of a 202 reply, whose JSON names the data port ``port``."""
    flags: int
    body: bytes
    port: int
    digits: tuple[int, int]  # where the port's digits are in body

    def with_port(self, port: int) -> bytes:
        """The frame with ``port`` in place of the server's, its size (and size form) to match."""
        start, end = self.digits
        body = self.body[:start] + str(port).encode() + self.body[end:]
        frame = Frame(body, more=bool(self.flags & MORE), command=bool(self.flags & COMMAND))
        return encode_frame(frame, long=True if self.flags & LONG else None)


class LeasePortRewriter:
    """The server's side of a control connection, split into the bytes to forward as they are and the
    :class:`LeasePort` frames of 202 replies (sans-IO).  Only whole frames leave: a frame cut across
    reads waits for its end.  Octets it cannot read are forwarded untouched from then on (the
    monitor judges them)."""

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        self.max_frame = max_frame
        self.greeting = GreetingDecoder()
        self.passing = False  # forward everything as it is from now on
        self.note = ""  # why it stopped rewriting
        self.skipped: list[str] = []  # 202 replies it forwarded as they were, and why
        self._buffer = bytearray()
        self._parts: list[bytes] = []  # the current message's frames so far

    def feed(self, data: bytes) -> list[bytes | LeasePort]:
        if self.passing:
            return [data] if data else []
        out: list[bytes | LeasePort] = []
        if self.greeting.greeting is None:
            try:
                rest = self.greeting.feed(data)
            except CodecError as exc:
                return self._pass(f"the server's greeting is not ZMTP ({exc})", data)
            out.append(data[:len(data) - len(rest)])
            data = rest
            if self.greeting.greeting is None:
                return out
            mechanism = self.greeting.greeting.mechanism
            if mechanism not in CLEAR_MECHANISMS:
                out += self._pass(f"{mechanism}: the 202 replies are encrypted, so their data ports cannot be "
                                  "rewritten; the data connections go to the server directly, not monitored", data)
                return out
        self._buffer += data
        at = 0
        while True:
            try:
                # a copy of the header's octets, not a view: a view kept alive by the error's traceback
                # would forbid resizing the buffer (BufferError) in the handler below
                flags, header, size = frame_header(bytes(self._buffer[at:at + 9]), self.max_frame)
            except IncompleteFrame:
                break
            except CodecError as exc:
                out += self._pass(f"the server's frames cannot be read ({exc})", bytes(self._buffer[at:]))
                self._buffer.clear()
                return out
            if len(self._buffer) - at < header + size:
                break
            raw = bytes(self._buffer[at:at + header + size])
            at += header + size
            out.append(self._frame(flags, raw, raw[header:]))
        del self._buffer[:at]
        return [piece for piece in out if not isinstance(piece, bytes) or piece]

    def flush(self) -> bytes:
        """At the end of the server's stream: the octets of a frame it never finished, as they came."""
        rest, self._buffer = bytes(self._buffer), bytearray()
        return rest

    def _pass(self, why: str, data: bytes) -> list[bytes]:
        self.passing, self.note = True, why
        return [data] if data else []

    def _frame(self, flags: int, raw: bytes, body: bytes) -> bytes | LeasePort:
        if flags & COMMAND:
            return raw
        self._parts.append(body)
        if flags & MORE:
            return raw
        parts, self._parts = self._parts, []
        port = _lease_port(parts)
        if isinstance(port, str):
            self.skipped.append(port)
        if not isinstance(port, tuple):
            return raw
        return LeasePort(flags, body, *port)


def _lease_port(parts: list[bytes]) -> tuple[int, tuple[int, int]] | str | None:
    """(port, where its digits are in the last part) of a 202 reply carrying a JSON number port; why
    not, for a 202 whose port cannot be rewritten; None for any other message."""
    try:
        _, frames = control.split_envelope(parts)
        reply = control.decode_reply(frames)
    except CodecError:
        return None
    port = reply.body.get("port") if isinstance(reply.body, dict) else None
    if reply.code != 202 or isinstance(port, bool) or not isinstance(port, int):
        return None  # a port that is no number (a finding of the control monitor's peers) stays as it is
    # a quote inside a JSON string is escaped, so the pattern finds members only; two "port" members
    # (one nested) leave the reply as it is
    found = list(_PORT.finditer(parts[-1]))
    if len(found) != 1 or int(found[0].group(1)) != port:
        return (f"a 202 reply names port {port} in {len(found)} \"port\" members, so which to rewrite is not "
                "certain: forwarded as it is; that data connection goes to the server directly, not monitored")
    return port, found[0].span(1)


class MtlWireMonitor:
    """The monitor of one MTL interop case: each control connection (``connection``, a
    :class:`ControlMonitor` each, "control connection N" when there are several), and every data
    connection a 202 leads to, each through a proxy of its own (``follow`` gives the control proxy
    its rewrite), numbered across the case in the order they were accepted."""

    def __init__(self) -> None:
        self.control = ConnectionMonitors(ControlMonitor, "control connection")
        self.label = self.control.label
        self.data: list[DataMonitor] = []
        self.upstream_error: str | None = None
        self._rewriters: list[LeasePortRewriter] = []  # one per control connection, in accept order
        self._proxies: dict[int, FaultProxy] = {}
        self._log: WireLog | None = None

    def connection(self) -> ControlMonitor:
        return self.control.connection()

    @property
    def connections(self) -> list[ControlMonitor]:
        return self.control.connections

    @property
    def violations(self) -> list[Violation]:
        return self.control.violations + [
            dataclasses.replace(v, detail=f"data connection {i}" + (f": {v.detail}" if v.detail else ""))
            for i, monitor in enumerate(self.data, 1) for v in monitor.violations]

    @property
    def notes(self) -> list[str]:
        notes = self.control.notes
        several = len(self._rewriters) > 1
        for i, rewriter in enumerate(self._rewriters, 1):
            said = ([rewriter.note] if rewriter.note else []) + rewriter.skipped
            notes += [f"{self.label} {i}: {note}" if several else note for note in said]
        return notes + [f"data connection {i}: {note}" for i, m in enumerate(self.data, 1) for note in m.notes]

    @property
    def frames(self) -> int:
        return self.control.frames + self.data_frames

    @property
    def data_frames(self) -> int:
        return sum(m.frames for m in self.data)

    @property
    def messages(self) -> int:
        return (self.control.messages or 0) + sum(m.messages for m in self.data)

    def follow(self, log: WireLog):
        """The control proxy's rewrite, one per connection: the server's bytes with each 202's port
        pointing at a data proxy."""
        self._log = log

        def for_connection():
            rewriter = LeasePortRewriter()
            self._rewriters.append(rewriter)

            async def rewrite(direction: str, data: bytes) -> bytes:
                if direction != "from-target":
                    return data
                if not data:
                    return rewriter.flush()
                out = bytearray()
                for piece in rewriter.feed(data):
                    out += piece if isinstance(piece, bytes) else piece.with_port(await self._proxy_port(piece.port))
                return bytes(out)
            return rewrite
        return for_connection

    async def _proxy_port(self, port: int) -> int:
        proxy = self._proxies.get(port)
        if proxy is None:
            proxy = await FaultProxy.start(f"tcp://127.0.0.1:{port}", {}, None)
            proxy.tap_for_connection = self._data_tap
            self._proxies[port] = proxy
        if self._log is not None:
            self._log.note(f"the 202 reply's data port {port} was rewritten to {proxy.port}, the suite's proxy in "
                           f"front of it (the monitor judged the server's bytes, with {port})")
        return proxy.port

    def _data_tap(self):
        monitor = DataMonitor()
        self.data.append(monitor)
        number = len(self.data)
        log = self._log

        def tap(direction: str, data: bytes) -> None:
            side = Side.CLIENT if direction == "to-target" else Side.SERVER
            if log is None:
                monitor.feed(side, data)
                return
            if not data:
                log.note(f"data connection {number}: the {side.value} closed its end")
                return
            log.note(f"data connection {number}, {side.value} to {side.other.value}:")
            (log.sent if side is Side.CLIENT else log.received)(data)
            for violation in monitor.feed(side, data):
                log.note(f"VIOLATION data connection {number}: {violation}")
        return tap

    async def aclose(self) -> None:
        for proxy in self._proxies.values():
            await proxy.close()
            self.upstream_error = self.upstream_error or proxy.upstream_error
