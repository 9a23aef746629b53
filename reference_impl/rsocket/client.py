"""RSocket client on TCP or WebSocket, over the sans-IO Connection.

    client = await connect("tcp://127.0.0.1:PORT")     # or ws://HOST:PORT/
    payload = await client.request_response(b"echo:hi")
    items = await client.request_stream(b"range:5", batch=2)
    await client.close()

A stream ERROR raises :class:`StreamError`; a closed connection raises
:class:`ConnectionLost`.  The client sends KEEPALIVE every ``keepalive_ms``
and closes a silent server after ``lifetime_ms``.

``connect(url, resume_token=b"...")`` asks for resumption (SETUP with R): when the transport
drops, the client opens a new one to the same URL, sends RESUME with its positions, and the
streams go on after RESUME_OK (the frames the server missed are sent again); a refused
RESUME, or no new transport within ``RECONNECT_TIMEOUT``, ends the connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from urllib.parse import urlsplit

from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed as WsClosed, WebSocketException

from reference_impl.rsocket.codec import MAX_FRAME
from reference_impl.rsocket.connection import (
    ConnectionClosed, Connection, CreditReceived, Event, PayloadReceived, Role, StreamErrorReceived, Transport,
)

READ_SIZE = 64 << 10
RECONNECT_TIMEOUT = 5.0


class StreamError(Exception):
    def __init__(self, code: int, data: bytes) -> None:
        super().__init__(f"ERROR 0x{code:08x}: {data.decode('utf-8', 'replace')}")
        self.code = code
        self.data = data


class ConnectionLost(Exception):
    pass


class RSocketClient:
    def __init__(self, conn: Connection, reader=None, writer=None, websocket=None,
                 tick_interval: float = 0.1, url: str | None = None) -> None:
        self.conn = conn
        self._reader, self._writer, self._ws = reader, writer, websocket
        self._url = url  # where a resumable session reconnects
        self._queues: dict[int, asyncio.Queue] = {}
        self._closed: ConnectionClosed | None = None
        self._tick_interval = tick_interval
        # between a lost transport and the RESUME on the next one nothing is written: a request
        # made meanwhile stays with the session (its frames are retained and replayed after RESUME_OK)
        self._down = False
        self._task = asyncio.create_task(self._run())

    async def _flush(self) -> None:
        if self._down:
            return
        if self._ws is not None:
            for frame in self.conn.messages_to_send():
                await self._ws.send(frame)
        else:
            self._writer.write(self.conn.data_to_send())
            await self._writer.drain()

    def _dispatch(self, events: list[Event]) -> None:
        for event in events:
            if isinstance(event, ConnectionClosed):
                self._closed = event
                for queue in self._queues.values():
                    queue.put_nowait(event)
            elif isinstance(event, (PayloadReceived, StreamErrorReceived, CreditReceived)):
                queue = self._queues.get(event.stream_id)
                if queue is not None:
                    queue.put_nowait(event)

    async def _receive(self):
        if self._ws is not None:
            return await self._ws.recv()
        return await self._reader.read(READ_SIZE)

    async def _run(self) -> None:
        task = asyncio.current_task()
        while not self.conn.should_close:
            # a cancel that lands as wait_for times out can be taken for the timeout (3.11):
            # without this check the loop would go on, and close() would wait for it forever
            if task is not None and task.cancelling():
                raise asyncio.CancelledError
            lost = False
            try:
                data = await asyncio.wait_for(self._receive(), self._tick_interval)
                lost = self._ws is None and not data  # TCP: end of stream
            except TimeoutError:
                data = None
                self._dispatch(self.conn.tick(time.monotonic()))
            except (WsClosed, ConnectionError):
                data, lost = None, True
            if lost:
                self._down = True
                self._dispatch(self.conn.connection_lost())
                if self.conn.should_close:
                    return
                # a resumable session outlives its transport ("Resuming Operation")
                if not await self._reconnect():
                    self._dispatch([ConnectionClosed("transport closed; resuming failed", by_peer=True)])
                    return
            elif data is not None and self._ws is not None:
                self._dispatch(self.conn.receive_message(data, time.monotonic()))
            elif data is not None:
                self._dispatch(self.conn.receive_data(data, time.monotonic()))
            try:
                await self._flush()
            except (WsClosed, ConnectionError):
                pass  # the next read sees the transport gone

    async def _reconnect(self) -> bool:
        """A new transport to the same URL, and the RESUME on it: False when none could be had."""
        await self._close_transport()
        try:
            transport = await asyncio.wait_for(self._open_transport(), RECONNECT_TIMEOUT)
        except (OSError, TimeoutError, ValueError, WebSocketException):  # a refused handshake too (HTTP 503)
            return False
        # no await from here to the RESUME being queued: a request's flush cannot get ahead of it
        if isinstance(transport, tuple):
            self._reader, self._writer = transport
        else:
            self._ws = transport
        self.conn.start_resume(time.monotonic())
        self._down = False
        try:
            await self._flush()
        except (WsClosed, ConnectionError):
            return False
        return True

    async def _open_transport(self):
        if self._url is None:
            raise ValueError("no URL to reconnect to")
        return await open_transport(self._url)

    async def _close_transport(self) -> None:
        if self._ws is not None:
            with contextlib.suppress(Exception):
                await self._ws.close()
        elif self._writer is not None:
            self._writer.close()
            with contextlib.suppress(Exception):
                await self._writer.wait_closed()

    async def _next(self, sid: int):
        event = await self._queues[sid].get()
        if isinstance(event, StreamErrorReceived):
            raise StreamError(event.code, event.data)
        if isinstance(event, ConnectionClosed):
            raise ConnectionLost(event.reason)
        return event

    def _open_here(self, sid: int) -> bool:
        # The connection runs ahead of this stream's queue: the stream may have ended already.
        return sid in self.conn.open_streams()

    def _open(self, sid: int) -> None:
        self._queues[sid] = asyncio.Queue()

    async def request_response(self, data: bytes, metadata: bytes | None = None) -> PayloadReceived:
        sid = self.conn.request_response(data, metadata)
        self._open(sid)
        await self._flush()
        try:
            return await self._next(sid)
        finally:
            del self._queues[sid]

    async def request_stream(self, data: bytes, batch: int = 0x7FFFFFFF,
                             metadata: bytes | None = None) -> list[bytes]:
        """All items of the stream, asking for ``batch`` more each time a batch arrived."""
        sid = self.conn.request_stream(data, batch, metadata)
        self._open(sid)
        await self._flush()
        items: list[bytes] = []
        try:
            while True:
                event = await self._next(sid)
                if event.next:
                    items.append(event.data)
                if event.complete:
                    return items
                if event.next and len(items) % batch == 0 and self._open_here(sid):
                    self.conn.request_n(sid, batch)
                    await self._flush()
        finally:
            del self._queues[sid]

    async def request_channel(self, items: list[bytes], batch: int = 0x7FFFFFFF,
                              metadata: bytes | None = None) -> list[bytes]:
        """Sends ``items`` on one channel (the first in REQUEST_CHANNEL, the others as the
        responder's credit allows, the last with C) and returns every item received until the
        responder completes, asking for ``batch`` more each time a batch arrived."""
        sid = self.conn.request_channel(items[0], batch, metadata, complete=len(items) == 1)
        self._open(sid)
        await self._flush()
        pending, received = list(items[1:]), []
        try:
            while True:
                event = await self._next(sid)
                if isinstance(event, CreditReceived):
                    while pending and self.conn.credit(sid):
                        self.conn.send_payload(sid, pending.pop(0), complete=not pending)
                    await self._flush()
                    continue
                if event.next:
                    received.append(event.data)
                if event.complete:
                    return received
                if event.next and len(received) % batch == 0 and self._open_here(sid):
                    self.conn.request_n(sid, batch)
                    await self._flush()
        finally:
            del self._queues[sid]

    async def fire_and_forget(self, data: bytes, metadata: bytes | None = None) -> None:
        self.conn.fire_and_forget(data, metadata)
        await self._flush()

    async def metadata_push(self, metadata: bytes) -> None:
        self.conn.metadata_push(metadata)
        await self._flush()

    async def close(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._task
        await self._close_transport()


async def open_transport(url: str):
    """(reader, writer) of a new TCP connection, or a new WebSocket, to the URL."""
    parts = urlsplit(url)
    if parts.scheme == "tcp":
        return await asyncio.open_connection(parts.hostname, parts.port)
    return await ws_connect(url, max_size=MAX_FRAME, proxy=None)  # the server named, no env proxy


async def connect(url: str, *, metadata_mime: str = "text/plain", data_mime: str = "text/plain",
                  keepalive_ms: int = 20_000, lifetime_ms: int = 90_000, resume_token: bytes | None = None,
                  **options) -> RSocketClient:
    """``options`` are Connection keywords (fragment_size, max_frame, max_reassembly);
    ``resume_token`` asks for resumption."""
    transport = Transport.TCP if urlsplit(url).scheme == "tcp" else Transport.WEBSOCKET
    conn = Connection(Role.CLIENT, transport, now=time.monotonic(), keepalive_ms=keepalive_ms,
                      lifetime_ms=lifetime_ms, **options)
    conn.setup(metadata_mime, data_mime, resume_token=resume_token)
    opened = await open_transport(url)
    if transport is Transport.TCP:
        reader, writer = opened
        client = RSocketClient(conn, reader=reader, writer=writer, url=url)
    else:
        client = RSocketClient(conn, websocket=opened, url=url)
    await client._flush()
    return client


#: the client test cases of docs/profiles/rsocket.md this client runs (the image contract's TESTCASE);
#: any other name exits 127, "unsupported"
CLIENT_TESTCASES = ("request-response", "stream", "fnf", "metadata-push", "resume")
RESUME_TOKEN = b"conformance-client-resume"
CASE_TIMEOUT = 10.0


async def run_client_testcase(url: str, testcase: str) -> int:
    """Connect, run one test case against the profile's test service, close: 0 when the server
    answered as the profile says, 1 otherwise, 127 for a test case this client does not run."""
    if testcase not in CLIENT_TESTCASES:
        return 127
    token = RESUME_TOKEN if testcase == "resume" else None
    try:
        client = await asyncio.wait_for(connect(url, resume_token=token), CASE_TIMEOUT)
    except (OSError, asyncio.TimeoutError):
        return 1
    try:
        async with asyncio.timeout(CASE_TIMEOUT):
            if testcase == "request-response":
                ok = (await client.request_response(b"echo:hello")).data == b"hello"
            elif testcase in ("stream", "resume"):  # resume: the same stream, over a dropped transport
                ok = await client.request_stream(b"range:5", batch=2) == [b"0", b"1", b"2", b"3", b"4"]
            elif testcase == "fnf":
                await client.fire_and_forget(b"fnf:client")
                ok = True
            else:
                await client.metadata_push(b"client-metadata")
                ok = True
        return 0 if ok else 1
    except (StreamError, ConnectionLost, TimeoutError):
        return 1
    finally:
        await client.close()
