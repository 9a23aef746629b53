"""Byte and message channels to a target, every operation under a deadline.

A channel is what a case talks through: a TCP stream (chunks of bytes) or a
WebSocket (whole text or binary messages).  ``recv`` returns ``None`` once
the peer has closed (EOF, reset or a WebSocket close), raises CodecError when
the suite's WebSocket side failed the connection over what the target sent (that
is no close by the target), never blocks past its timeout, and logs everything
to the case's wire log.
"""

from __future__ import annotations

import asyncio
import socket
import struct
from typing import Protocol
from urllib.parse import urlsplit

from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI

from conformance.trace import capture
from conformance.wirelog import WireLog
from reference_impl.common.errors import CodecError

READ_CHUNK = 65536


class ChannelError(Exception):
    """The channel could not be opened or used (not a grade: the target is unreachable)."""


class Deadline(Exception):
    """Nothing arrived before the deadline."""


class Channel(Protocol):
    transport: str
    closed: bool

    async def send(self, data: bytes | str) -> None: ...
    async def recv(self, timeout: float) -> bytes | str | None: ...
    async def arrived(self) -> bool: ...
    async def close(self) -> None: ...


def _loopback_only(host: str | None) -> str:
    # The suite never sends test traffic off this machine.
    if host not in ("127.0.0.1", "localhost", "::1"):
        raise ChannelError(f"refusing to connect to {host!r}: targets must be on 127.0.0.1")
    return "127.0.0.1" if host == "localhost" else host


class TcpChannel:
    transport = "tcp"

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, log: WireLog,
                 suite_role: str = "client") -> None:
        self._reader = reader
        self._writer = writer
        self._log = log
        self.closed = False
        self._tap = capture.tap(writer, suite_role)  # `conformance run --pcap`: None otherwise
        self._kept: list[bytes] = []  # what the close drained that a recv without --pcap would still get
        self._half_closed = False  # the suite's FIN went before its close

    @classmethod
    async def open(cls, url: str, log: WireLog, timeout: float) -> "TcpChannel":
        parts = urlsplit(url)
        host = _loopback_only(parts.hostname)
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(host, parts.port, limit=READ_CHUNK * 4), timeout)
        except (OSError, asyncio.TimeoutError) as exc:
            raise ChannelError(f"cannot connect to {url} within {timeout}s: {exc or 'timeout'}") from exc
        log.note(f"connected to {url}")
        return cls(reader, writer, log)

    @classmethod
    def accepted(cls, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, log: WireLog) -> "TcpChannel":
        log.note("accepted a connection")
        return cls(reader, writer, log, suite_role="server")

    async def send(self, data: bytes | str) -> None:
        if isinstance(data, str):
            raise ChannelError("a TCP channel carries bytes, not text")
        self._log.sent(data)
        if self._tap:
            self._tap.sent(data)
        try:
            self._writer.write(data)
            if self._writer.transport.get_write_buffer_size():  # the peer is not reading: bounded wait
                async with asyncio.timeout(10):  # not wait_for: see recv
                    await self._writer.drain()
            else:
                await self._writer.drain()  # returns at once; raises if the connection was lost
        except (OSError, TimeoutError) as exc:
            self._log.note(f"send failed: {exc!r}")
            self.closed = True

    async def arrived(self) -> bool:
        """Bytes or the peer's close are here, not yet handed over by recv (no wait)."""
        return bool(self._kept or self._reader._buffer or self._reader.at_eof() or self._reader.exception())

    async def recv(self, timeout: float) -> bytes | None:
        if self._kept:
            return _hand_over(self._kept, self._log)
        if self.closed:
            return None
        try:
            # asyncio.timeout, not wait_for: on 3.11 wait_for swallows the case deadline's
            # cancellation when the read completes in the same loop step (a flooding target).
            # read() does not suspend while bytes are buffered: yield once per chunk so the
            # case deadline lands between chunks, not after the whole backlog.
            async with asyncio.timeout(timeout):
                if self._reader._buffer:  # read() will not suspend (a round trip's reply does not need this)
                    await asyncio.sleep(0)
                data = await self._reader.read(READ_CHUNK)
        except TimeoutError:
            raise Deadline() from None
        except OSError as exc:
            self._log.note(f"connection reset: {exc!r}")
            self.closed = True
            if self._tap:
                self._tap.ended(by_suite=False, how="RST")
            return None
        if not data:
            self._log.note("peer closed (EOF)")
            self.closed = True
            if self._tap:
                self._tap.ended(by_suite=False)
            return None
        self._log.received(data)
        if self._tap:
            self._tap.received(data)
        return data

    async def half_close(self) -> None:
        if self._tap:
            self._tap.ended(by_suite=True)
        self._half_closed = self._write_eof() or self._half_closed

    def _write_eof(self) -> bool:
        if self._writer.can_write_eof():
            try:
                self._writer.write_eof()
                return True
            except OSError:
                pass
        return False

    async def _drain(self) -> None:
        """`run --pcap`: before closing, the capture gets what the peer still sends, as tcpdump
        would show it.  What has already arrived came before the suite's FIN; then a half-close
        lets the peer answer and end, and the capture reads until its FIN or RST (most peers
        close on EOF at once), capture.DRAIN_S or capture.DRAIN_BYTES.  Not the case's: it has
        been graded; a recv after the close still gets what had arrived, then the end, as it
        would without --pcap."""
        reader, budget, ended = self._reader, capture.DRAIN_BYTES, False
        try:
            async with asyncio.timeout(capture.DRAIN_S):
                await asyncio.sleep(0)  # bytes the loop has already taken from the socket
                # reader.read() does not suspend while any of these hold: only what has arrived
                while not ended and budget > 0 and (reader._buffer or reader._eof or reader.exception()):
                    data = await self._read_for_capture()
                    ended = data is None
                    if data:
                        self._kept.append(data)
                        budget -= len(data)
                self._tap.ended(by_suite=True)
                if not ended and self._write_eof():
                    while budget > 0 and (data := await self._read_for_capture()) is not None:
                        budget -= len(data)
        except TimeoutError:
            pass
        reader._buffer.clear()  # bytes the drain left unread: without --pcap none of them is read either
        self._tap.ended(by_suite=True)  # a peer still sending after the deadline: the suite closes anyway

    def _peer_ended(self) -> bool:
        return self.closed or self._reader._eof or self._reader.exception() is not None

    def _reset(self) -> None:
        """Makes the close that follows abortive (RST: SO_LINGER 0): the suite gives up on a peer
        that kept its side open after the suite's FIN.  A close after that FIN would put nothing
        more on the wire, so a capture could not tell 'never closed' from 'closed later'; the RST
        stamps when the suite gave up, and frees the peer's side at once."""
        self._log.note("the peer kept its side open after the suite's FIN: closing with RST")
        sock = self._writer.get_extra_info("socket")
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except (OSError, AttributeError):
            pass

    async def _read_for_capture(self) -> bytes | None:
        """One read recorded in the capture alone; None once the peer has ended (FIN or RST)."""
        try:
            data = await self._reader.read(READ_CHUNK)
        except OSError:
            self._tap.ended(by_suite=False, how="RST")
            return None
        if not data:
            self._tap.ended(by_suite=False)
            return None
        self._tap.received(data)
        return data

    async def close(self) -> None:
        if self._tap:
            await self._drain()
        abort = self._half_closed and not self._peer_ended()
        if abort:
            self._reset()
            self._half_closed = False  # a second close has nothing left to reset
        if self._tap:
            if abort:
                self._tap.aborted()
            self._tap = None  # the capture of this connection ends here (a later EOF is the suite's own close)
        self._writer.close()
        try:
            await asyncio.wait_for(self._writer.wait_closed(), 2)
        except (OSError, asyncio.TimeoutError):
            pass


# close codes the suite's own WebSocket side sends when it fails a connection (RFC 6455 7.4.1):
# protocol error, data not matching the message type (bad UTF-8), message too big
_FAILURE_CODES = frozenset({1002, 1007, 1009})


def _suite_failed(exc: ConnectionClosed) -> bool:
    """Whether the suite closed first, with a failure code: the target's close came later or never."""
    return exc.sent is not None and exc.sent.code in _FAILURE_CODES and not exc.rcvd_then_sent


class WsChannel:
    transport = "ws"

    def __init__(self, ws, log: WireLog, suite_role: str = "client") -> None:
        self._ws = ws
        self._log = log
        self.closed = False
        self._tap = capture.tap_ws(ws, suite_role)  # `conformance run --pcap`: None otherwise
        self._kept: list[bytes | str] = []  # what the close drained that a recv without --pcap would still get

    @classmethod
    async def open(cls, url: str, log: WireLog, timeout: float, max_size: int) -> "WsChannel":
        _loopback_only(urlsplit(url).hostname)
        try:
            ws = await asyncio.wait_for(
                # proxy=None: to 127.0.0.1 itself, never through an HTTP(S)_PROXY the environment names
                # (websockets reads the environment's proxies by default, iterating os.environ in this
                # thread while pytest's thread may be removing PYTEST_CURRENT_TEST from it)
                ws_connect(url, open_timeout=timeout, ping_interval=None, close_timeout=2,
                           max_size=max_size, compression=None, proxy=None),
                timeout)
        except (OSError, asyncio.TimeoutError, InvalidHandshake, InvalidURI) as exc:
            raise ChannelError(f"cannot open WebSocket {url} within {timeout}s: {exc or 'timeout'}") from exc
        log.note(f"connected to {url}")
        return cls(ws, log)

    @classmethod
    def accepted(cls, ws, log: WireLog) -> "WsChannel":
        log.note("accepted a WebSocket connection")
        return cls(ws, log, suite_role="server")

    async def send(self, data: bytes | str) -> None:
        self._log.sent(data)
        if self._tap:
            self._tap.sent(data)
        try:
            async with asyncio.timeout(10):  # not wait_for: see TcpChannel.recv
                await self._ws.send(data)
        except (ConnectionClosed, OSError, TimeoutError) as exc:
            self._log.note(f"send failed: {exc!r}")
            self.closed = True

    async def arrived(self) -> bool:
        """A message or the peer's close is here, not yet handed over by recv (no wait); a message
        taken to see is kept for the next recv."""
        if self._kept:
            return True
        if self.closed:
            return False
        closing = await self._take_queued(self._tap, budget=1)  # the next recv sees the close
        return closing or bool(self._kept)

    async def recv(self, timeout: float) -> bytes | str | None:
        if self._kept:
            return _hand_over(self._kept, self._log)
        if self.closed:
            return None
        try:
            async with asyncio.timeout(timeout):  # not wait_for: see TcpChannel.recv
                data = await self._ws.recv()
        except TimeoutError:
            raise Deadline() from None
        except ConnectionClosed as exc:
            self.closed = True
            if self._tap:
                self._tap.ended(by_suite=_suite_failed(exc))
            if _suite_failed(exc):
                # not the target closing: the suite's WebSocket side refused what the target sent
                self._log.note(f"the suite's WebSocket side failed the connection: {exc.sent}")
                raise CodecError("websocket", f"the target broke the WebSocket protocol ({exc.sent})") from None
            self._log.note(f"peer closed: {exc}")
            return None
        except OSError as exc:
            self._log.note(f"connection reset: {exc!r}")
            self.closed = True
            if self._tap:
                self._tap.ended(by_suite=False, how="RST")
            return None
        self._log.received(data)
        if self._tap:
            self._tap.received(data)
        return data

    async def half_close(self) -> None:
        await self.close()

    async def close(self) -> None:
        tap = self._tap
        if tap:  # `run --pcap`: messages that had arrived came before the suite's close
            await self._take_queued(tap)
            tap.ended(by_suite=True)
        try:
            await asyncio.wait_for(self._ws.close(), 3)
        except (OSError, asyncio.TimeoutError, ConnectionClosed):
            pass
        if tap:  # ... and those that came during the closing handshake after it; then the peer's end
            await self._take_queued(tap)
            if self._ws.protocol.close_rcvd is not None:  # it answered the close (else the suite gave up on it)
                tap.ended(by_suite=False)
            self._tap = None

    async def _take_queued(self, tap: capture.Tap | None, budget: int = capture.DRAIN_BYTES) -> bool:
        """The messages websockets has received and not handed over, up to ``budget`` bytes, kept
        for the next recv and put into the capture (the closing handshake itself waits for the peer,
        up to 3 s); a recv after the close still gets them, then the close, as it would without
        --pcap. True when the peer's close is there behind them."""
        while budget > 0:
            try:
                async with asyncio.timeout(0):  # only what has arrived: a recv that would wait is cancelled
                    data = await self._ws.recv()
            except TimeoutError:
                return False
            except ConnectionClosed:
                return True
            if tap:
                tap.received(data)
            self._kept.append(data)
            budget -= len(data)
        return False


def _hand_over(kept: list, log: WireLog):
    """The first of what a `run --pcap` close drained (captured already), for a recv after it."""
    data = kept.pop(0)
    log.received(data)
    return data
