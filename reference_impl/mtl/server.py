"""MTL over ZMTP: the asyncio server running the broker (:mod:`reference_impl.mtl.service`).

    server = await start_server("127.0.0.1", 0)     # control ROUTER; the data ROUTER on a port of its own
    server.url, server.data_port
    await server.close()

Two listening TCP sockets, each speaking ZMTP 3.1 as a ROUTER (NULL
mechanism): the control endpoint (``port``) and the data endpoint
(``data_port``, 0 = any free port), which 202 replies announce.  Each TCP
connection runs its own :class:`reference_impl.zmtp.connection.Connection`;
the routing ids a ROUTER would prepend are the connections themselves here.
A control request that is ill-formed is dropped; every other gets exactly one
reply, on the connection it came from, with the request's envelope.

``run_server(host, port, **options)`` is the blocking form for a command
line: it prints ``listening on tcp://HOST:PORT`` once accepting and runs until
SIGINT/SIGTERM.  ``options`` are the fields of
:class:`~reference_impl.mtl.service.BrokerOptions` plus ``data_port``.

Bounds: a peer whose unsent output passes ``max_buffered`` octets is
dropped (a reader that does not read); frames are limited to ``max_frame``.
A peer closed with output still unsent gets ``CLOSE_TIMEOUT`` seconds to
flush it, then is aborted: a plain close waits for the peer to read, which a
peer that stopped reading never does.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from typing import Any

from reference_impl.common.errors import CodecError
from reference_impl.common.serving import serve_until_stopped
from reference_impl.mtl import control
from reference_impl.mtl.service import Broker, BrokerOptions, Output
from reference_impl.zmtp.connection import ConnectionClosed, Connection, HandshakeComplete, Message
from reference_impl.zmtp.null import NullConfig

READ_CHUNK = 256 * 1024
DEFAULT_MAX_FRAME = 64 * 1024 * 1024
MAX_BUFFERED = 64 * 1024 * 1024
HANDSHAKE_TIMEOUT = 10.0
CLOSE_TIMEOUT = 2.0
TICK = 0.05


class Peer:
    """One TCP connection running ZMTP as a ROUTER."""

    _ids = itertools.count(1)

    def __init__(self, server: "MtlServer", kind: str, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter) -> None:
        self.server = server
        self.kind = kind  # "control" | "data"
        self.reader = reader
        self.writer = writer
        self.id = next(self._ids)
        self.zmtp = Connection("ROUTER", NullConfig(), max_frame=server.max_frame,
                               handshake_timeout=HANDSHAKE_TIMEOUT)
        self.ready = False
        self.closed = False
        self.session = server.broker.control_session() if kind == "control" else None

    def __repr__(self) -> str:
        return f"<{self.kind} peer {self.id}>"

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            self._write(self.zmtp.start(loop.time()).data)
            while not self.closed:
                deadline = self.zmtp.next_deadline()
                wait = 1.0 if deadline is None else max(0.0, min(1.0, deadline - loop.time()))
                try:
                    async with asyncio.timeout(wait):  # not wait_for: no task per read
                        data = await self.reader.read(READ_CHUNK)
                except TimeoutError:
                    out = self.zmtp.tick(loop.time())
                    self._apply(out.events, out.data)
                    continue
                except (ConnectionError, OSError):
                    data = b""
                out = self.zmtp.receive_data(data, loop.time())
                self._write(out.data)
                self._apply(out.events, b"")
                if self.writer.transport.get_write_buffer_size() > self.server.max_buffered:
                    self.close(abort=True)
                with contextlib.suppress(TimeoutError, ConnectionError, OSError):
                    async with asyncio.timeout(5):
                        await self.writer.drain()
        finally:
            self.close()

    def _apply(self, events: list, data: bytes) -> None:
        self._write(data)
        now = asyncio.get_running_loop().time()
        for event in events:
            if isinstance(event, ConnectionClosed):
                self.close()
            elif isinstance(event, Message):
                if self.kind == "control":
                    self._on_request(event.frames, now)
                else:
                    self.server.deliver(self.server.broker.data_message(self, event.frames, now))
            elif isinstance(event, HandshakeComplete) and not self.ready:
                self.ready = True
                if self.kind == "data":
                    self.server.broker.data_open(self, now)

    def _on_request(self, frames: list[bytes], now: float) -> None:
        assert self.session is not None
        try:
            envelope, rest = control.split_envelope(frames)
            request = control.decode_request(rest)
        except CodecError:
            return  # ill-formed: dropped silently
        reply = self.session.handle(request, now)
        self.send(envelope + control.encode_reply(reply.code, reply.body))

    def send(self, frames: list[bytes]) -> None:
        if self.closed or not self.ready:
            return
        self._write(self.zmtp.send(Message(list(frames))).data)
        if self.writer.transport.get_write_buffer_size() > self.server.max_buffered:
            self.close(abort=True)

    def _write(self, data: bytes) -> None:
        if data and not self.closed:
            self.writer.write(data)

    def close(self, *, abort: bool = False) -> None:
        """Close now; unsent output gets CLOSE_TIMEOUT seconds to leave (none with ``abort``), then is dropped.

        ``StreamWriter.close`` alone keeps the socket and its unsent octets until
        the peer has read them all: a peer that stopped reading would hold both forever.
        """
        if self.closed:
            return
        self.closed = True
        if self.kind == "data":
            self.server.broker.data_close(self)
        self.server.peers.discard(self)
        transport = self.writer.transport
        if abort:
            transport.abort()
            return
        self.writer.close()
        if transport.get_write_buffer_size():
            asyncio.get_running_loop().call_later(CLOSE_TIMEOUT, transport.abort)  # a no-op once it has closed


class MtlServer:
    """Both endpoints around one :class:`Broker`; ``peer_class`` runs each connection (tests swap in variants)."""

    peer_class: type[Peer] = Peer

    def __init__(self, broker: Broker, *, max_frame: int = DEFAULT_MAX_FRAME, max_buffered: int = MAX_BUFFERED) -> None:
        self.broker = broker
        self.max_frame = max_frame
        self.max_buffered = max_buffered
        self.peers: set[Peer] = set()
        self._tasks: set[asyncio.Task] = set()
        self._servers: list[asyncio.Server] = []
        self._ticker: asyncio.Task | None = None
        self.port = 0
        self.data_port = 0
        self.url = ""

    async def listen(self, host: str = "127.0.0.1", port: int = 0, data_port: int = 0) -> "MtlServer":
        control_server = await asyncio.start_server(lambda r, w: self._accept("control", r, w), host, port)
        self._servers.append(control_server)
        data_server = await asyncio.start_server(lambda r, w: self._accept("data", r, w), host, data_port)
        self._servers.append(data_server)
        host, self.port = control_server.sockets[0].getsockname()[:2]
        self.data_port = data_server.sockets[0].getsockname()[1]
        self.broker.data_port = self.data_port
        self.url = f"tcp://{host}:{self.port}"
        self._ticker = asyncio.create_task(self._tick())
        return self

    async def _accept(self, kind: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = self.peer_class(self, kind, reader, writer)
        self.peers.add(peer)
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            await peer.run()
        except asyncio.CancelledError:
            pass  # close() cancels handlers; ending normally keeps asyncio's stream callback quiet
        finally:
            if task is not None:
                self._tasks.discard(task)

    def deliver(self, out: Output) -> None:
        for peer, frames in out.sends:
            peer.send(frames)
        for peer in out.closes:
            peer.close()

    async def _tick(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            deadline = self.broker.next_deadline()
            wait = TICK if deadline is None else max(0.0, min(TICK, deadline - loop.time()))
            await asyncio.sleep(wait)
            self.deliver(self.broker.tick(loop.time()))

    async def close(self) -> None:
        for server in self._servers:
            server.close()
        if self._ticker is not None:
            self._ticker.cancel()
        for peer in list(self.peers):
            peer.close()
        tasks = [t for t in self._tasks if not t.done()] + ([self._ticker] if self._ticker else [])
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=5)
        for server in self._servers:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(server.wait_closed(), 5)


async def start_server(host: str = "127.0.0.1", port: int = 0, *, data_port: int = 0,
                       max_frame: int = DEFAULT_MAX_FRAME, **options: Any) -> MtlServer:
    return await MtlServer(Broker(BrokerOptions(**options)), max_frame=max_frame).listen(host, port, data_port)


def run_server(host: str = "127.0.0.1", port: int = 0, **options: Any) -> None:
    """Serve until SIGINT/SIGTERM; print one ``listening on URL`` line once accepting."""
    serve_until_stopped(lambda: start_server(host, port, **options))


def main(argv: list[str] | None = None) -> int:
    """``python -m reference_impl.mtl.server --port N``: every broker timer on the command line."""
    import argparse
    parser = argparse.ArgumentParser(prog="python -m reference_impl.mtl.server", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--data-port", type=int, default=0)
    parser.add_argument("--heartbeat-interval", type=float, default=5.0, help="seconds")
    parser.add_argument("--heartbeat-timeout", type=float, default=15.0, help="seconds")
    parser.add_argument("--redeliver", type=float, default=2.0, help="confirm-test: seconds before an unconfirmed "
                                                                      "Content is sent again")
    parser.add_argument("--anonymous", action="store_true", help="answer Connection.Open with 201 Ready")
    parser.add_argument("--auth-ttl", type=float, default=None, help="seconds an authentication lasts (then 401)")
    args = parser.parse_args(argv)
    try:
        run_server(args.host, args.port, data_port=args.data_port, heartbeat_interval=args.heartbeat_interval,
                   heartbeat_timeout=args.heartbeat_timeout, redeliver_after=args.redeliver,
                   anonymous=args.anonymous, auth_ttl=args.auth_ttl)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
