"""The asyncio mc0 broker: a ZMTP ROUTER over TCP running the sans-IO :class:`Broker`.

    server = await start_server("127.0.0.1", 0)            # CURVE with the test server key pair
    server = await start_server("127.0.0.1", 0, allow_null=True)
    ... server.url ...
    await server.close()

Each TCP connection runs a server-role :class:`reference_impl.zmtp.Connection`
(socket type ROUTER); each completed handshake attaches a peer to the broker,
each message goes to :meth:`Broker.receive`, and the broker's sends are
written to the peers they name.  One ticker task drives NOOPs and TTL absence.

Mechanisms: CURVE always (the spec's SHALL; the key pair is the test server
pair unless given).  ``allow_null`` also accepts NULL clients on the same
port: like libzmq, the server sends its greeting up to the major version
(11 octets), reads the client's mechanism and answers with the matching one.
Without it a NULL client is refused at the greeting (mechanism mismatch).

Bounds: reads wait at most ``POLL`` seconds (handshake timeouts tick), a
write to the sender is drained within ``timeout`` seconds, and a peer whose
unsent output exceeds ``max_backlog`` octets is disconnected rather than
buffered without end.  A connection that ends with output still unsent gets
``CLOSE_TIMEOUT`` seconds to flush it, then is aborted: a plain close waits
for the peer to read, which a peer that stopped reading never does.
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass
from pathlib import Path

from reference_impl.common.serving import serve_until_stopped
from reference_impl.mc0 import testkeys
from reference_impl.mc0.broker import Broker, Send
from reference_impl.zmtp.codec import DEFAULT_MAX_FRAME
from reference_impl.zmtp.connection import ConnectionClosed, Connection, HandshakeComplete, Message, Output, Phase
from reference_impl.zmtp.curve import CurveServerConfig, KeyPair
from reference_impl.zmtp.greeting import Greeting, encode_greeting
from reference_impl.zmtp.mechanism import MechanismConfig
from reference_impl.zmtp.null import NullConfig

POLL = 0.5
CLOSE_TIMEOUT = 2.0
READ_CHUNK = 256 * 1024
#: Signature and major version: the greeting octets that do not depend on the mechanism.
GREETING_PREFIX = encode_greeting(Greeting("CURVE", True, 3, 1))[:11]
_MECHANISM = slice(12, 32)


@dataclass
class _Peer:
    connection: Connection
    writer: asyncio.StreamWriter


class Mc0Server:
    def __init__(self, *, keypair: KeyPair | None = None, allow_null: bool = False,
                 broker: Broker | None = None, max_frame: int = DEFAULT_MAX_FRAME,
                 handshake_timeout: float = 10.0, timeout: float = 10.0,
                 max_backlog: int = 256 * 1024 * 1024) -> None:
        self.curve = CurveServerConfig(keypair or testkeys.SERVER)
        self.allow_null = allow_null
        self.broker = broker or Broker()
        self.max_frame = max_frame
        self.handshake_timeout = handshake_timeout
        self.timeout = timeout
        self.max_backlog = max_backlog
        self.url = ""
        self.port = 0
        self._server: asyncio.Server | None = None
        self._peers: dict[int, _Peer] = {}
        self._ids = itertools.count(1)
        self._tasks: set[asyncio.Task[None]] = set()
        self._wake = asyncio.Event()

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> Mc0Server:
        self._server = await asyncio.start_server(self._accept, host, port)
        self.port = self._server.sockets[0].getsockname()[1]
        self.url = f"tcp://{host}:{self.port}"
        self._spawn(self._ticker())
        return self

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for peer in list(self._peers.values()):
            peer.writer.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=self.timeout)
        if self._server is not None:
            await asyncio.wait_for(self._server.wait_closed(), self.timeout)

    def _spawn(self, coro) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- one connection -----------------------------------------------------------

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        peer = next(self._ids)
        try:
            await self._serve(peer, reader, writer)
        except (ConnectionError, OSError, TimeoutError):
            pass
        except asyncio.CancelledError:
            pass  # close() cancels handlers; ending normally keeps asyncio's stream callback quiet
        finally:
            self._peers.pop(peer, None)
            self.broker.detach(peer)
            await _close(writer)

    async def _serve(self, peer: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        loop = asyncio.get_running_loop()
        pending = b""
        mechanism: MechanismConfig = self.curve
        if self.allow_null:
            pending = await self._sniff(reader, writer)
            if pending[_MECHANISM].rstrip(b"\0") == b"NULL":
                mechanism = NullConfig()
        connection = Connection("ROUTER", mechanism, max_frame=self.max_frame,
                                handshake_timeout=self.handshake_timeout)
        greeting = connection.start(loop.time())
        if self.allow_null:
            assert greeting.data[:len(GREETING_PREFIX)] == GREETING_PREFIX
            greeting.data = greeting.data[len(GREETING_PREFIX):]
        await self._apply(peer, connection, writer, greeting)
        while connection.phase is not Phase.CLOSED:
            if pending:
                data, pending = pending, b""
            else:
                try:
                    async with asyncio.timeout(POLL):  # not wait_for: no task per read
                        data = await reader.read(READ_CHUNK)
                except TimeoutError:
                    await self._apply(peer, connection, writer, connection.tick(loop.time()))
                    continue
            await self._apply(peer, connection, writer, connection.receive_data(data, loop.time()))

    async def _sniff(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bytes:
        """Send the mechanism-free greeting prefix and read the client's greeting up to its mechanism."""
        writer.write(GREETING_PREFIX)
        data = b""
        async with asyncio.timeout(self.handshake_timeout):
            while len(data) < _MECHANISM.stop:
                # a peer that is not ZMTP 3 is judged by the connection at once, not waited for
                if data[:1] not in (b"", b"\xff") or (len(data) > 9 and not data[9] & 1) or (len(data) > 10 and data[10] < 3):
                    break
                chunk = await reader.read(READ_CHUNK)
                if not chunk:
                    break
                data += chunk
        return data

    async def _apply(self, peer: int, connection: Connection, writer: asyncio.StreamWriter, out: Output) -> None:
        if out.data:
            writer.write(out.data)
            async with asyncio.timeout(self.timeout):
                await writer.drain()
        for event in out.events:
            if isinstance(event, HandshakeComplete):
                self._peers[peer] = _Peer(connection, writer)
                self.broker.attach(peer, asyncio.get_running_loop().time())
                self._wake.set()
            elif isinstance(event, Message):
                self._deliver(self.broker.receive(peer, event.frames, asyncio.get_running_loop().time()))
                self._wake.set()
            elif isinstance(event, ConnectionClosed):
                return
        if writer.transport.get_write_buffer_size():
            async with asyncio.timeout(self.timeout):
                await writer.drain()

    def _deliver(self, sends: list[Send]) -> None:
        for send in sends:
            target = self._peers.get(send.peer)
            if target is None or target.connection.phase is not Phase.TRAFFIC or target.writer.is_closing():
                continue
            target.writer.write(target.connection.send(Message(send.frames)).data)
            if target.writer.transport.get_write_buffer_size() > self.max_backlog:
                # a peer that does not read is dropped, not buffered without end; close() would wait for it to read
                target.writer.transport.abort()

    async def _ticker(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            deadline = self.broker.next_deadline()
            wait = POLL if deadline is None else min(POLL, max(0.0, deadline - loop.time()) + 0.001)
            self._wake.clear()
            try:
                # not wait_for: on 3.11 it swallows a cancel that comes as the wake-up does, and close()
                # would wait its whole timeout for a ticker that never ends
                async with asyncio.timeout(wait):
                    await self._wake.wait()
            except TimeoutError:
                pass
            self._deliver(self.broker.tick(loop.time()))


async def _close(writer: asyncio.StreamWriter) -> None:
    """Close, flushing what is unsent for at most CLOSE_TIMEOUT seconds, then abort.

    ``StreamWriter.close`` keeps the socket (and its unsent octets) until the
    peer has read them all: a peer that stopped reading would hold both forever.
    """
    writer.close()
    try:
        await asyncio.wait_for(writer.wait_closed(), CLOSE_TIMEOUT)
    except TimeoutError:
        writer.transport.abort()
    except asyncio.CancelledError:  # the server closing: no more waiting
        writer.transport.abort()
        raise
    except (ConnectionError, OSError):
        pass


async def start_server(host: str = "127.0.0.1", port: int = 0, **options) -> Mc0Server:
    return await Mc0Server(**options).start(host, port)


def run_server(host: str, port: int, *, curve_secret_file: str | Path | None = None, allow_null: bool = False) -> None:
    """Serve until SIGINT/SIGTERM; print one ``listening on tcp://HOST:PORT`` line once accepting."""
    keypair = testkeys.load_secret_file(curve_secret_file) if curve_secret_file else testkeys.SERVER
    serve_until_stopped(lambda: start_server(host, port, keypair=keypair, allow_null=allow_null))

