"""Minimal asyncio DEALER, REQ and ROUTER sockets over TCP, on top of :class:`Connection`.

    router = await bind_router("127.0.0.1", 0, mechanism=CurveServerConfig(server_keys))
    dealer = await connect_dealer(f"tcp://127.0.0.1:{router.port}",
                                  mechanism=CurveClientConfig(server_keys.public, client_keys))
    await dealer.send([b"hello"])
    identity, *frames = await router.recv()
    await router.send([identity, b"world"])
    assert await dealer.recv() == [b"world"]
    await dealer.close(); await router.close()

Any socket can ``bind`` (it then serves every peer that connects) and
``connect`` (one peer per call, waiting for the handshake; no reconnection).

- DEALER sends round-robin to its ready peers and receives from all of them.
- REQ adds the empty delimiter frame, allows one request at a time and takes
  the reply only from the peer it asked, delimiter stripped.
- ROUTER prefixes each received message with the peer's routing id: the
  peer's Identity property when it sent a non-empty one not in use, else a
  fresh 5-octet id (00 + u32), as libzmq does.  ``send`` returns False for an
  unknown id (libzmq drops such messages silently).

Bounds: every TCP read waits at most ``poll_interval`` seconds (the wake-ups
drive heartbeats and the handshake timeout); ``connect``, ``send``, ``recv``
and ``close`` give up after ``timeout`` seconds (``TimeoutError``); inboxes
hold at most ``queue_size`` messages, after which reading from the peers
pauses.  ``monitor`` receives ``(peer, event)`` for each completed handshake
and closed connection, keeping the latest ``queue_size``.
"""

from __future__ import annotations

import asyncio
import itertools
import random
from collections.abc import Mapping
from typing import Any, ClassVar, Self
from urllib.parse import urlsplit

from reference_impl.zmtp.codec import DEFAULT_MAX_FRAME
from reference_impl.zmtp.connection import ConnectionClosed, Connection, HandshakeComplete, Message, Output
from reference_impl.zmtp.mechanism import MechanismConfig
from reference_impl.zmtp.null import NullConfig

_CHUNK = 256 * 1024
Peer = tuple[str, int]


class HandshakeFailed(ConnectionError):
    """``connect`` could not complete the ZMTP handshake; ``closed`` says why."""

    def __init__(self, closed: ConnectionClosed) -> None:
        super().__init__(f"{closed.code}: {closed.detail}")
        self.closed = closed


class _Pipe:
    """One TCP connection and the ZMTP connection running on it."""

    def __init__(self, owner: _Socket, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.owner = owner
        self.reader = reader
        self.writer = writer
        self.peer: Peer = writer.get_extra_info("peername")[:2]
        self.routing_id = b""
        self.connection = owner._new_connection()
        self.handshake: asyncio.Future[HandshakeComplete] = asyncio.get_running_loop().create_future()
        self.closed = False
        self.task: asyncio.Task[None] | None = None

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            await self._apply(self.connection.start(loop.time()))
            while not self.closed:
                deadline = self.connection.next_deadline()
                wait = self.owner.poll_interval
                if deadline is not None:
                    wait = min(wait, max(0.0, deadline - loop.time()))
                try:
                    async with asyncio.timeout(wait):  # not wait_for: no task per read
                        data = await self.reader.read(_CHUNK)
                except TimeoutError:
                    await self._apply(self.connection.tick(loop.time()))
                    continue
                except (ConnectionError, OSError):
                    data = b""
                await self._apply(self.connection.receive_data(data, loop.time()))
        except (TimeoutError, ConnectionError, OSError) as exc:
            self._finish(ConnectionClosed("transport-error", f"{type(exc).__name__}: {exc}"))
        finally:
            self._finish(ConnectionClosed("transport-closed", "the socket was closed"))
            self.writer.close()

    async def send(self, message: Message) -> None:
        if self.closed:
            raise ConnectionError("the peer connection is closed")
        await self._apply(self.connection.send(message))

    async def _apply(self, out: Output) -> None:
        if out.data:
            self.writer.write(out.data)
            async with asyncio.timeout(self.owner.timeout):
                await self.writer.drain()
        for event in out.events:
            if isinstance(event, HandshakeComplete):
                self.owner._on_ready(self, event)
                self.handshake.set_result(event)
            elif isinstance(event, Message):
                await self.owner._inbox.put((self, event.frames))
            elif isinstance(event, ConnectionClosed):
                self._finish(event)

    def _finish(self, closed: ConnectionClosed) -> None:
        if self.closed:
            return
        self.closed = True
        if not self.handshake.done():
            self.handshake.set_exception(HandshakeFailed(closed))
            self.handshake.exception()  # retrieved here: a bound socket has no one awaiting it
        self.owner._on_closed(self, closed)


class _Socket:
    socket_type: ClassVar[str]

    def __init__(
        self,
        *,
        mechanism: MechanismConfig = NullConfig(),
        identity: bytes = b"",
        properties: Mapping[str, bytes] | None = None,
        timeout: float = 5.0,
        poll_interval: float = 1.0,
        queue_size: int = 1000,
        max_frame: int = DEFAULT_MAX_FRAME,
        minor_version: int = 1,
        heartbeat_interval: float | None = None,
        heartbeat_ttl: float = 0.0,
        heartbeat_timeout: float | None = None,
    ) -> None:
        self.mechanism = mechanism
        self.identity = identity
        self.properties = dict(properties or {})
        self.timeout = timeout
        self.poll_interval = poll_interval
        self.max_frame = max_frame
        self.minor_version = minor_version
        self.heartbeat = (heartbeat_interval, heartbeat_ttl, heartbeat_timeout)
        self.port: int | None = None
        self.monitor: asyncio.Queue[tuple[Peer, HandshakeComplete | ConnectionClosed]] = asyncio.Queue(queue_size)
        self._inbox: asyncio.Queue[tuple[_Pipe, list[bytes]]] = asyncio.Queue(queue_size)
        self._ready: list[_Pipe] = []
        self._ready_changed = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self._pipes: set[_Pipe] = set()
        self._servers: list[asyncio.Server] = []

    def _new_connection(self) -> Connection:
        interval, ttl, timeout = self.heartbeat
        return Connection(self.socket_type, self.mechanism, identity=self.identity, properties=self.properties,
                          minor_version=self.minor_version, max_frame=self.max_frame,
                          handshake_timeout=self.timeout, heartbeat_interval=interval, heartbeat_ttl=ttl,
                          heartbeat_timeout=timeout)

    # -- connections ----------------------------------------------------------

    async def bind(self, host: str = "127.0.0.1", port: int = 0) -> int:
        server = await asyncio.start_server(self._accept, host, port)
        self._servers.append(server)
        self.port = server.sockets[0].getsockname()[1]
        return self.port

    async def connect(self, url: str) -> HandshakeComplete:
        parts = urlsplit(url)
        if parts.scheme != "tcp" or parts.hostname is None or parts.port is None:
            raise ValueError(f"expected tcp://host:port, got {url!r}")
        reader, writer = await asyncio.wait_for(asyncio.open_connection(parts.hostname, parts.port), self.timeout)
        pipe = self._start(reader, writer)
        try:
            return await asyncio.wait_for(asyncio.shield(pipe.handshake), self.timeout)
        except BaseException:
            await self._stop(pipe)
            raise

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._start(reader, writer)

    def _start(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> _Pipe:
        pipe = _Pipe(self, reader, writer)
        self._pipes.add(pipe)
        pipe.task = asyncio.create_task(pipe.run())
        self._tasks.add(pipe.task)
        pipe.task.add_done_callback(self._tasks.discard)
        return pipe

    async def _stop(self, pipe: _Pipe) -> None:
        assert pipe.task is not None
        pipe.task.cancel()
        await asyncio.wait([pipe.task], timeout=self.timeout)

    def _on_ready(self, pipe: _Pipe, event: HandshakeComplete) -> None:
        self._ready.append(pipe)
        self._ready_changed.set()
        self._notify(pipe, event)

    def _on_closed(self, pipe: _Pipe, event: ConnectionClosed) -> None:
        if pipe in self._ready:
            self._ready.remove(pipe)
        self._pipes.discard(pipe)
        self._notify(pipe, event)

    def _notify(self, pipe: _Pipe, event: HandshakeComplete | ConnectionClosed) -> None:
        if self.monitor.full():
            self.monitor.get_nowait()
        self.monitor.put_nowait((pipe.peer, event))

    async def close(self) -> None:
        for server in self._servers:
            server.close()
        for task in list(self._tasks):
            task.cancel()
        for pipe in list(self._pipes):
            pipe.writer.close()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=self.timeout)
        for server in self._servers:
            await asyncio.wait_for(server.wait_closed(), self.timeout)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # -- traffic ----------------------------------------------------------------

    async def _ready_pipe(self) -> _Pipe:
        """The next ready peer, round-robin; waits for one to appear."""
        while not self._ready:
            self._ready_changed.clear()
            await self._ready_changed.wait()
        pipe = self._ready.pop(0)
        self._ready.append(pipe)
        return pipe

    async def _receive(self) -> tuple[_Pipe, list[bytes]]:
        return await self._inbox.get()


class Dealer(_Socket):
    socket_type = "DEALER"

    async def send(self, frames: list[bytes]) -> None:
        async with asyncio.timeout(self.timeout):
            pipe = await self._ready_pipe()
            await pipe.send(Message(list(frames)))

    async def recv(self) -> list[bytes]:
        async with asyncio.timeout(self.timeout):
            return (await self._receive())[1]


class Req(_Socket):
    socket_type = "REQ"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._asked: _Pipe | None = None

    async def send(self, frames: list[bytes]) -> None:
        if self._asked is not None:
            raise RuntimeError("REQ: receive the reply before sending another request")
        async with asyncio.timeout(self.timeout):
            pipe = await self._ready_pipe()
            await pipe.send(Message([b"", *frames]))
        self._asked = pipe

    async def recv(self) -> list[bytes]:
        if self._asked is None:
            raise RuntimeError("REQ: send a request before receiving")
        async with asyncio.timeout(self.timeout):
            while True:
                pipe, frames = await self._receive()
                # Like libzmq, drop what is not a reply to our request.
                if pipe is self._asked and len(frames) > 1 and frames[0] == b"":
                    self._asked = None
                    return frames[1:]


class Router(_Socket):
    socket_type = "ROUTER"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._routes: dict[bytes, _Pipe] = {}
        self._generated = itertools.count(random.getrandbits(32))

    def _on_ready(self, pipe: _Pipe, event: HandshakeComplete) -> None:
        routing_id = event.identity
        if not routing_id or routing_id in self._routes:
            routing_id = b"\x00" + (next(self._generated) & 0xFFFFFFFF).to_bytes(4, "big")
        pipe.routing_id = routing_id
        self._routes[routing_id] = pipe
        super()._on_ready(pipe, event)

    def _on_closed(self, pipe: _Pipe, event: ConnectionClosed) -> None:
        if self._routes.get(pipe.routing_id) is pipe:
            del self._routes[pipe.routing_id]
        super()._on_closed(pipe, event)

    async def send(self, frames: list[bytes]) -> bool:
        routing_id, *body = frames
        pipe = self._routes.get(routing_id)
        if pipe is None or not body:
            return False
        async with asyncio.timeout(self.timeout):
            await pipe.send(Message(body))
        return True

    async def recv(self) -> list[bytes]:
        async with asyncio.timeout(self.timeout):
            pipe, frames = await self._receive()
        return [pipe.routing_id, *frames]


async def bind_router(host: str = "127.0.0.1", port: int = 0, **options: Any) -> Router:
    router = Router(**options)
    await router.bind(host, port)
    return router


async def bind_dealer(host: str = "127.0.0.1", port: int = 0, **options: Any) -> Dealer:
    dealer = Dealer(**options)
    await dealer.bind(host, port)
    return dealer


async def connect_dealer(url: str, **options: Any) -> Dealer:
    dealer = Dealer(**options)
    try:
        await dealer.connect(url)
    except BaseException:
        await dealer.close()
        raise
    return dealer


async def connect_req(url: str, **options: Any) -> Req:
    req = Req(**options)
    try:
        await req.connect(url)
    except BaseException:
        await req.close()
        raise
    return req
