"""A TCP proxy between the suite and a target that re-chunks, delays and cuts.

Split-message and framing cases are only convincing when the target really
receives its input in pieces: the proxy writes each piece separately (with
TCP_NODELAY and an optional pause) so the target's reads see them apart.

Usable by any case (``fault:`` in a scenario) and on its own:
``conformance proxy --to tcp://127.0.0.1:9000 --chunk 1``.

``delay_ms`` with ``chunk`` pauses between the pieces; without ``chunk`` it is latency: every
read is forwarded delay_ms after it arrived, so ``--direction from-target --delay-ms 300`` is a
target that answers 300 ms late (a megabyte reply is late by 300 ms, not by 300 ms per read).
"""

from __future__ import annotations

import asyncio
import random
import socket
import time
from typing import Any, Awaitable, Callable
from urllib.parse import urlsplit, urlunsplit

from conformance.wirelog import WireLog

_READ = 65536


class FaultProxy:
    def __init__(self, target_host: str, target_port: int, options: dict[str, Any], log: WireLog | None) -> None:
        self.target = (target_host, target_port)
        self.options = options
        self.log = log
        self.rng = random.Random(options.get("seed", 0))
        self.server: asyncio.base_events.Server | None = None
        self.port = 0
        self._tasks: set[asyncio.Task] = set()
        #: set when the proxy could not reach the target: the case is ERROR, whatever the suite saw
        self.upstream_error: str | None = None
        #: called with ("to-target" | "from-target", bytes) for every read it forwards, before any fault:
        #: what each side really sent (the interop matrix checks it frame by frame); b"" when that side
        #: closed its end
        self.tap: Callable[[str, bytes], None] | None = None
        #: when set, called once per accepted connection for that connection's tap (one monitor each)
        self.tap_for_connection: Callable[[], Callable[[str, bytes], None]] | None = None
        #: when set, called once per accepted connection for that connection's rewrite: what is forwarded
        #: in place of each read (after the tap saw the original), and at the end of a direction (b"")
        #: what it still holds (a rewrite that holds back part of a frame must not join it to another
        #: connection's bytes).  The interop matrix points MTL's 202 replies at a proxy of their own
        #: (conformance/images/interop_mtl.py)
        self.rewrite_for_connection: Callable[[], Callable[[str, bytes], Awaitable[bytes]]] | None = None

    @classmethod
    async def start(cls, target_url: str, options: dict[str, Any], log: WireLog | None = None,
                    listen_port: int = 0) -> "FaultProxy":
        parts = urlsplit(target_url)
        if parts.hostname not in ("127.0.0.1", "localhost"):
            raise ValueError("the fault proxy only forwards to 127.0.0.1")
        proxy = cls("127.0.0.1", parts.port, options, log)
        proxy.server = await asyncio.start_server(proxy._accept, "127.0.0.1", listen_port)
        proxy.port = proxy.server.sockets[0].getsockname()[1]
        if log:
            log.note(f"fault proxy 127.0.0.1:{proxy.port} -> {target_url} {options}")
        return proxy

    def url_for(self, target_url: str) -> str:
        parts = urlsplit(target_url)
        return urlunsplit((parts.scheme, f"127.0.0.1:{self.port}", parts.path, parts.query, ""))

    async def close(self) -> None:
        if self.server:
            self.server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _applies(self, direction: str) -> bool:
        chosen = self.options.get("direction", "to-target")
        return chosen == "both" or chosen == direction

    async def _accept(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            target_r, target_w = await asyncio.wait_for(asyncio.open_connection(*self.target), 5)
        except (OSError, asyncio.TimeoutError) as exc:
            self.upstream_error = (f"the fault proxy could not connect to the target at "
                                   f"{self.target[0]}:{self.target[1]}: {exc or 'no answer within 5 s'}")
            if self.log:
                self.log.note(self.upstream_error)
            client_w.close()
            return
        for w in (client_w, target_w):
            sock = w.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        tap = self.tap_for_connection() if self.tap_for_connection is not None else self.tap
        rewrite = self.rewrite_for_connection() if self.rewrite_for_connection is not None else None
        up = asyncio.ensure_future(self._pump(client_r, target_w, "to-target", client_w, tap, rewrite))
        down = asyncio.ensure_future(self._pump(target_r, client_w, "from-target", target_w, tap, rewrite))
        self._tasks.update((up, down))
        await asyncio.gather(up, down, return_exceptions=True)
        self._tasks.difference_update((up, down))

    def _pieces(self, data: bytes):
        chunk = self.options.get("chunk")
        if chunk is None:
            yield data
            return
        offset = 0
        while offset < len(data):
            size = chunk if isinstance(chunk, int) else self.rng.randint(1, self.options.get("max_chunk", 16))
            yield data[offset:offset + size]
            offset += size

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, direction: str,
                    other: asyncio.StreamWriter, tap: Callable[[str, bytes], None] | None,
                    rewrite: Callable[[str, bytes], Awaitable[bytes]] | None) -> None:
        faulty = self._applies(direction)
        cut = self.options.get("cut_after_bytes") if faulty else None
        delay = self.options.get("delay_ms", 0) / 1000 if faulty else 0
        chunked = faulty and bool(self.options.get("chunk"))
        reads = _late_reads(reader, delay) if delay and not chunked else _reads(reader)
        forwarded = 0
        try:
            async for data in reads:
                if tap is not None:
                    tap(direction, data)
                if rewrite is not None:
                    data = await rewrite(direction, data)
                for piece in (self._pieces(data) if faulty else (data,)):
                    if cut is not None and forwarded + len(piece) >= cut:
                        writer.write(piece[:cut - forwarded])
                        await writer.drain()
                        if self.log:
                            self.log.note(f"fault proxy cut the connection after {cut} bytes {direction}")
                        other.close()
                        return
                    writer.write(piece)
                    await writer.drain()
                    forwarded += len(piece)
                    if chunked:
                        # a pause, even a tiny one, lets each piece leave as its own segment
                        await asyncio.sleep(delay or 0.0005)
            if tap is not None:
                tap(direction, b"")
            if rewrite is not None and (rest := await rewrite(direction, b"")):
                writer.write(rest)  # what the rewrite held back, waiting for a frame's end that never came
                await writer.drain()
            if writer.can_write_eof():
                writer.write_eof()
        except asyncio.CancelledError:
            pass
        except OSError:
            # a reset (or a broken socket) ends this direction: the side it forwards to must learn
            # the connection is gone, or the suite waits out its deadline for a close the target
            # made.  The source's own peer is left to the other direction, which still forwards
            # what that side sent before its reset (a goodbye before the close, say).
            writer.close()
        except Exception as exc:  # noqa: BLE001  a tap or rewrite (a monitor) broke on what it was fed
            # both sides are closed, so neither end waits for bytes this direction will never forward
            if self.log:
                self.log.note(f"fault proxy stopped forwarding {direction}: its monitor failed on the data "
                              f"({type(exc).__name__}: {exc}); both sides closed")
            writer.close()
            other.close()
        finally:
            await reads.aclose()
            if cut is not None:
                writer.close()


async def _reads(reader: asyncio.StreamReader):
    while data := await reader.read(_READ):
        yield data


async def _late_reads(reader: asyncio.StreamReader, delay: float):
    """What the reader delivers, each read held until ``delay`` after it arrived (latency, not a
    throttle: reading goes on meanwhile).  The end of the stream comes as late."""
    queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

    async def read() -> None:
        try:
            while data := await reader.read(_READ):
                queue.put_nowait((time.monotonic() + delay, data))
        except OSError:
            pass
        finally:
            queue.put_nowait((time.monotonic() + delay, b""))

    task = asyncio.ensure_future(read())
    try:
        while True:
            due, data = await queue.get()
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            if not data:
                return
            yield data
    finally:
        task.cancel()
