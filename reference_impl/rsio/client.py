"""rsio/0 asyncio TCP client, and the client-role test cases.

    client = await connect("tcp://127.0.0.1:PORT")
    sid = client.subscribe("test/range/10", initial_demand=3)
    elements = await client.elements(sid, 3)
    client.request(sid, 7)
    ...
    await client.goodbye()

Every wait is bounded (``timeout``, default 5 s) and raises TimeoutError, or
:class:`SessionClosed` when the connection ends first.  The client also runs
the test service, so a peer may subscribe to it (both roles on one
connection).  Events wait in a queue until a wait takes them, so a caller
consumes or cancels what it subscribes to.  Subscriber Ids are never reused (1, 2, 3, ...): reusing one
after cancel would let elements still in flight land on the new stream.

``run_client_testcase(url, name)`` plays one client-role case against a
suite acting as server; it returns 0 when the peer behaved, 1 when it did not
(wrong elements, a timeout, no orderly close) and 127 for an unknown case.
Every case sends clientHello at once and, loose handshake, its first
subscribe without waiting for serverHello; every case ends with goodbye,
waiting for the peer's goodbye.  Subscriber Id is 1 in every case.

``hello``   wait for serverHello; goodbye.
``demand``  subscribe test/range/10 with initialDemand 3; after the 3rd element
            request(2); after the 5th request(5); then expect onComplete;
            elements must be 0..9 as 8-byte big-endian.
``cancel``  subscribe test/range/10 with initialDemand 2; after 2 elements
            cancel (later elements in flight are dropped); goodbye.
``fixed``   subscribe test/fixed/8/4 with initialDemand 8; expect subscribed
            with elementSize 4, 8 elements (byte i of element k = (k+i) mod
            256), onComplete.
``large``   subscribe test/large/100000 with initialDemand 1; expect one element
            of 100000 bytes (byte i = i mod 256), however split; onComplete.
``error``   subscribe test/error with initialDemand 0; expect onError.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Awaitable, Callable
from urllib.parse import urlsplit

from reference_impl.common.errors import ProtocolViolation
from reference_impl.rsio.codec import (
    Cancel,
    OnComplete,
    OnError,
    Request,
    ServerHello,
    Subscribe,
    Subscribed,
)
from reference_impl.rsio.connection import (
    ConnectionClosed,
    Element,
    Event,
    Role,
    Side,
    StreamReleased,
)
from reference_impl.rsio.service import pattern
from reference_impl.rsio.session import Session, SessionClosed, SessionOptions

DEFAULT_TIMEOUT = 5.0
UNSUPPORTED = 127


class UnexpectedEvent(Exception):
    """The peer sent something other than what the exchange needed."""


def _ends(sid: int, event: Event) -> bool:
    if isinstance(event, (OnComplete, OnError)):
        return event.subscriber == sid
    if isinstance(event, StreamReleased):
        return event.side is Side.SUBSCRIBER and event.subscriber == sid
    return isinstance(event, ConnectionClosed)


class Client:
    def __init__(self, session: Session, task: asyncio.Task, timeout: float) -> None:
        self.session = session
        self.conn = session.conn
        self.timeout = timeout
        self._task = task
        self._ids = itertools.count(1)

    async def next_event(self, match: Callable[[Event], bool] = lambda e: True,
                         timeout: float | None = None) -> Event:
        return await self.session.wait_for(match, self.timeout if timeout is None else timeout)

    async def hello(self, timeout: float | None = None) -> ServerHello:
        return await self.next_event(lambda e: isinstance(e, ServerHello), timeout)

    def subscribe(self, publisher: str, initial_demand: int = 0) -> int:
        sid = next(self._ids)
        self.session.send(Subscribe(publisher, sid, initial_demand))
        return sid

    def request(self, sid: int, n: int) -> None:
        self.session.send(Request(sid, n))

    def cancel(self, sid: int) -> None:
        self.session.send(Cancel(sid))

    async def subscribed(self, sid: int, timeout: float | None = None) -> Subscribed:
        event = await self.next_event(
            lambda e: (isinstance(e, Subscribed) and e.subscriber == sid) or _ends(sid, e), timeout)
        if not isinstance(event, Subscribed):
            raise UnexpectedEvent(f"stream {sid} ended before subscribed: {event}")
        return event

    async def elements(self, sid: int, count: int, timeout: float | None = None) -> list[bytes]:
        """The next ``count`` elements of stream ``sid`` (one timeout for all of them)."""
        received: list[bytes] = []
        async with asyncio.timeout(self.timeout if timeout is None else timeout):
            while len(received) < count:
                event = await self.session.wait_for(
                    lambda e: (isinstance(e, Element) and e.subscriber == sid) or _ends(sid, e), None)
                if not isinstance(event, Element):
                    raise UnexpectedEvent(f"stream {sid} ended after {len(received)} elements: {event}")
                received.append(event.data)
        return received

    async def end(self, sid: int, timeout: float | None = None) -> Event:
        """onComplete, onError or the release of stream ``sid``; its elements are skipped."""
        while True:
            event = await self.next_event(
                lambda e: (isinstance(e, Element) and e.subscriber == sid) or _ends(sid, e), timeout)
            if not isinstance(event, Element):
                return event

    async def goodbye(self, reason: str = "") -> bool:
        """Orderly close; True when the peer answered with its goodbye."""
        orderly = await self.session.goodbye(reason)
        await self._stopped()
        return orderly

    async def close(self) -> None:
        await self.session.abort()
        await self._stopped()

    async def _stopped(self) -> None:
        try:
            async with asyncio.timeout(self.session.options.close_timeout):
                await self._task
        except TimeoutError:
            self._task.cancel()


async def connect(url: str, *, timeout: float = DEFAULT_TIMEOUT, **options) -> Client:
    """Open ``tcp://HOST:PORT``; ``options`` are the fields of SessionOptions."""
    parts = urlsplit(url)
    if parts.scheme != "tcp" or parts.hostname is None or parts.port is None:
        raise ValueError(f"not a tcp://HOST:PORT url: {url!r}")
    async with asyncio.timeout(timeout):
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    session = Session(Role.CLIENT, reader, writer, SessionOptions(**options), keep_events=True)
    return Client(session, asyncio.create_task(session.run()), timeout)


async def _hello(client: Client) -> None:
    await client.hello()


async def _demand(client: Client) -> None:
    sid = client.subscribe("test/range/10", initial_demand=3)
    received = await client.elements(sid, 3)
    client.request(sid, 2)
    received += await client.elements(sid, 2)
    client.request(sid, 5)
    received += await client.elements(sid, 5)
    _expect_complete(await client.end(sid))
    if received != [k.to_bytes(8, "big") for k in range(10)]:
        raise UnexpectedEvent(f"test/range/10 elements: {received}")


async def _cancel(client: Client) -> None:
    sid = client.subscribe("test/range/10", initial_demand=2)
    received = await client.elements(sid, 2)
    client.cancel(sid)
    if received != [k.to_bytes(8, "big") for k in range(2)]:
        raise UnexpectedEvent(f"test/range/10 elements: {received}")


async def _fixed(client: Client) -> None:
    sid = client.subscribe("test/fixed/8/4", initial_demand=8)
    subscribed = await client.subscribed(sid)
    if subscribed.element_size != 4:
        raise UnexpectedEvent(f"elementSize {subscribed.element_size}, expected 4")
    received = await client.elements(sid, 8)
    _expect_complete(await client.end(sid))
    if received != [pattern(k, 4) for k in range(8)]:
        raise UnexpectedEvent(f"test/fixed/8/4 elements: {received}")


async def _large(client: Client) -> None:
    sid = client.subscribe("test/large/100000", initial_demand=1)
    (element,) = await client.elements(sid, 1)
    _expect_complete(await client.end(sid))
    if element != pattern(0, 100000):
        raise UnexpectedEvent(f"test/large/100000: {len(element)} bytes, wrong content")


async def _error(client: Client) -> None:
    sid = client.subscribe("test/error")
    end = await client.end(sid)
    if not isinstance(end, OnError):
        raise UnexpectedEvent(f"expected onError, got {end}")


def _expect_complete(event: Event) -> None:
    if not isinstance(event, OnComplete):
        raise UnexpectedEvent(f"expected onComplete, got {event}")


TESTCASES: dict[str, Callable[[Client], Awaitable[None]]] = {
    "hello": _hello,
    "demand": _demand,
    "cancel": _cancel,
    "fixed": _fixed,
    "large": _large,
    "error": _error,
}


async def run_client_testcase(url: str, testcase: str, *, timeout: float = DEFAULT_TIMEOUT) -> int:
    case = TESTCASES.get(testcase)
    if case is None:
        return UNSUPPORTED
    try:
        client = await connect(url, timeout=timeout)
    except (OSError, TimeoutError):
        return 1
    try:
        await case(client)
    except (UnexpectedEvent, SessionClosed, ProtocolViolation, TimeoutError):
        await client.close()
        return 1
    return 0 if await client.goodbye() else 1
