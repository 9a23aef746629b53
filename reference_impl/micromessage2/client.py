"""asyncio Micromessage2 TCP client, and the client-role test cases a suite drives as server.

``connect`` completes the three-message handshake and returns a ``Client``; a
background task feeds the connection and queues its events (acks only wake
senders waiting for window credit).  When the connection ends, every waiting
call raises ``ConnectionEnded`` naming the event that ended it.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, Mapping
from urllib.parse import urlsplit

from .connection import Connection, ExtensionSpec, Role, State
from .events import (
    AckReceived, ConnectionClosed, ErrorReceived, ErrorSent, Event, HandshakeComplete, LocalProtocolError,
    MessageReceived,
)
from .negotiation import Negotiated
from .transport import Link

DEFAULT_IDENTITY = "mm2-reference-client"
EVENT_QUEUE_SIZE = 1024
_ENDINGS = (ErrorReceived, ErrorSent, ConnectionClosed)


class ConnectionEnded(ConnectionError):
    def __init__(self, event: Event | None) -> None:
        self.event = event
        super().__init__(f"connection ended: {event!r}")


class Client:
    def __init__(self, link: Link, timeout: float) -> None:
        self.link = link
        self.conn = link.conn
        self.timeout = timeout
        self._events: asyncio.Queue[Event] = asyncio.Queue(EVENT_QUEUE_SIZE)
        self._credit = asyncio.Event()
        self._ended: Event | None = None
        self._task = asyncio.create_task(self._run())

    @property
    def negotiated(self) -> Negotiated:
        assert self.conn.negotiated is not None, "handshake not complete"
        return self.conn.negotiated

    async def _run(self) -> None:
        try:
            while self.conn.state in (State.HANDSHAKE, State.OPEN):
                events = await self.link.step()
                await self.link.flush()
                for event in events:
                    if isinstance(event, _ENDINGS):
                        self._ended = event
                    if isinstance(event, AckReceived):
                        self._credit.set()
                    else:
                        await self._events.put(event)
        except (ConnectionError, TimeoutError):
            self._ended = self._ended or ConnectionClosed(mid_frame=False)
        finally:
            self._credit.set()
            await self.link.finish()

    async def next_event(self, timeout: float | None = None) -> Event:
        """The next event other than AckReceived; ConnectionEnded once none are left and the connection is over."""
        if not self._events.empty():
            return self._events.get_nowait()
        if self._task.done():
            raise ConnectionEnded(self._ended)
        get = asyncio.ensure_future(self._events.get())
        try:
            await asyncio.wait({get, self._task}, timeout=timeout or self.timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            get.cancel()
        if get.done() and not get.cancelled():
            return get.result()
        if self._task.done():
            return await self.next_event(timeout)
        raise TimeoutError("no event in time")

    async def receive(self, timeout: float | None = None) -> MessageReceived:
        """The next whole MESSAGE; ConnectionEnded on ERROR or close."""
        while True:
            event = await self.next_event(timeout)
            if isinstance(event, MessageReceived):
                return event
            if isinstance(event, _ENDINGS):
                raise ConnectionEnded(event)

    async def send(self, destination: str, payload: bytes = b"", properties: str | Mapping[str, str] = "",
                   type_name: str | None = None, timeout: float | None = None) -> int:
        """Send one SEND once the ack window allows; returns its sequence number."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (timeout or self.timeout)
        while self.conn.send_credit == 0:
            if self.conn.state is not State.OPEN:
                raise ConnectionEnded(self._ended)
            self._credit.clear()
            await asyncio.wait_for(self._credit.wait(), max(0.0, deadline - loop.time()))
        seq = self.conn.send_message(destination, payload, properties, type_name)
        await self.link.flush()
        return seq

    async def ack(self, seq: int | None = None) -> int:
        count = self.conn.send_ack(seq)
        await self.link.flush()
        return count

    async def subscribe(self, destination: str) -> None:
        self.conn.send_command("subscribe", {"destination": destination})
        await self.link.flush()

    async def unsubscribe(self, destination: str) -> None:
        self.conn.send_command("unsubscribe", {"destination": destination})
        await self.link.flush()

    async def close(self) -> None:
        """Clean close: no frame, just the end of the stream."""
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


def _address(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    if parts.scheme != "tcp" or not parts.hostname or parts.port is None:
        raise ValueError(f"expected tcp://HOST:PORT, got {url!r}")
    return parts.hostname, parts.port


async def connect(url: str, *, identity: str = DEFAULT_IDENTITY, required: ExtensionSpec = (),
                  optional: ExtensionSpec = (), timeout: float = 5.0, **connection_options: Any) -> Client:
    """Open a TCP connection and complete the handshake; ConnectionEnded if the server refuses."""
    host, port = _address(url)
    reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
    conn = Connection(Role.CLIENT, identity=identity, required=required, optional=optional, **connection_options)
    link = Link(conn, reader, writer)
    await link.flush()
    client = Client(link, timeout)
    try:
        event = await client.next_event(timeout)
    except BaseException:
        await client.close()
        raise
    if not isinstance(event, HandshakeComplete):
        await client.close()
        raise ConnectionEnded(event)
    return client


# --- client-role test cases ------------------------------------------------------------


async def _case_handshake(url: str) -> bool:
    client = await connect(url, optional=["json"])
    await client.close()
    return True


async def _case_required_missing(url: str) -> bool:
    try:
        client = await connect(url, required=["x-conformance-missing"])
    except ConnectionEnded as exc:
        return isinstance(exc.event, ErrorReceived)
    await client.close()
    return False


async def _case_ack_window(url: str) -> bool:
    client = await connect(url, required=["batch-ack:max-count=3"])
    try:
        if client.negotiated.window != 3:
            return False
        count, size = 10, 16
        await client.send("test/push", properties=f"count:{count};size:{size};")
        seqs = []
        for _ in range(count):
            message = await client.receive()
            if message.destination != "test/push" or len(message.payload) != size:
                return False
            seqs.append(message.seq)
            await client.ack(message.seq)
        return seqs == list(range(1, count + 1))
    finally:
        await client.close()


_CASES = {"handshake": _case_handshake, "required-missing": _case_required_missing, "ack-window": _case_ack_window}


async def run_client_testcase(url: str, testcase: str) -> int:
    """0 passed, 1 failed, 127 unknown test case (QUIC interop runner convention)."""
    case = _CASES.get(testcase)
    if case is None:
        return 127
    try:
        return 0 if await case(url) else 1
    except (ConnectionError, TimeoutError, OSError, LocalProtocolError):
        return 1
