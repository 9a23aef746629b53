"""asyncio STMP client (tcp:// or ws:// URL) and the client-role test cases.

``connect`` negotiates before returning.  Every wait is bounded: connect and
negotiation by ``timeout``, a request by the connection's own request timeout
(it completes locally with 0x25), close by ``CLOSE_TIMEOUT``.  Notifies from the
server land in ``StmpClient.notifications`` (at most ``NOTIFY_BACKLOG``; later
ones are dropped).  Requests from the server are answered NotFound: this client
serves no actions.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import WebSocketException

from reference_impl.stmp.codec import Encoding, Notify, Response, Status
from reference_impl.stmp.connection import (
    Closed,
    Event,
    Negotiated,
    NotifyReceived,
    RequestReceived,
    ResponseReceived,
    Version,
)
from reference_impl.stmp.service import ACTION_ECHO
from reference_impl.stmp.transport import (
    CLOSE_TIMEOUT,
    FRAME_OVERHEAD,
    Carrier,
    Link,
    Options,
    StreamCarrier,
    WebSocketCarrier,
)

NOTIFY_BACKLOG = 256
# A local 0x25 arrives after request_timeout; this margin only guards against a stuck loop.
REQUEST_MARGIN = 1.0


class StmpClosed(ConnectionError):
    def __init__(self, reason: str, error_code: str | None = None) -> None:
        super().__init__(f"STMP connection closed: {reason}" + (f" ({error_code})" if error_code else ""))
        self.reason = reason
        self.error_code = error_code


class StmpClient:
    def __init__(self, link: Link, options: Options) -> None:
        self._link = link
        self._options = options
        loop = asyncio.get_running_loop()
        self._negotiated: asyncio.Future[Version] = loop.create_future()
        self._waiters: dict[int, asyncio.Future[Response]] = {}
        self.notifications: asyncio.Queue[Notify] = asyncio.Queue(NOTIFY_BACKLOG)
        self.closed: Closed | None = None
        self._pump = asyncio.create_task(link.run(self._on_events))

    @property
    def version(self) -> Version | None:
        return self._link.connection.version

    async def _negotiate(self, timeout: float) -> None:
        self._link.connection.start(self._link.now())
        await self._link.flush()
        try:
            await asyncio.wait_for(asyncio.shield(self._negotiated), timeout)
        except BaseException:
            await self.close()
            raise

    def _on_events(self, events: list[Event], now: float) -> None:
        connection = self._link.connection
        for event in events:
            if isinstance(event, Negotiated):
                self._negotiated.set_result(event.version)
            elif isinstance(event, ResponseReceived):
                waiter = self._waiters.pop(event.response.id, None)
                if waiter is not None and not waiter.done():
                    waiter.set_result(event.response)
            elif isinstance(event, NotifyReceived):
                if not self.notifications.full():
                    self.notifications.put_nowait(event.notify)
            elif isinstance(event, RequestReceived) and connection.is_open:
                connection.send_response(event.request.id, Status.NOT_FOUND, Encoding.NONE, b"")
            elif isinstance(event, Closed):
                self._closed(event)

    def _closed(self, event: Closed) -> None:
        self.closed = event
        error = StmpClosed(event.reason, event.error_code)
        for future in [self._negotiated, *self._waiters.values()]:
            if not future.done():
                future.set_exception(error)
        self._waiters.clear()
        self._negotiated.exception()  # retrieved: a failed negotiation is reported by connect()

    def _check_open(self) -> None:
        if self.closed is not None:
            raise StmpClosed(self.closed.reason, self.closed.error_code)

    async def request(self, action: int, encoding: int, payload: bytes) -> Response:
        """Send a request; its Response, or the local 0x25 after request_timeout."""
        self._check_open()
        request_id = self._link.connection.send_request(action, encoding, payload, self._link.now())
        loop = asyncio.get_running_loop()
        waiter = loop.create_future()
        self._waiters[request_id] = waiter
        self._link.flush_soon()  # with the requests other tasks make in this turn of the loop
        # a plain timer, not asyncio.timeout or wait_for: one handle per request (65,537 of them in id-wrap)
        guard = loop.call_later(self._options.request_timeout + REQUEST_MARGIN, _expire, waiter)
        try:
            return await waiter
        finally:
            guard.cancel()
            self._waiters.pop(request_id, None)

    async def notify(self, action: int, encoding: int, payload: bytes) -> None:
        self._check_open()
        self._link.connection.send_notify(action, encoding, payload)
        await self._link.flush()

    async def close(self) -> None:
        self._link.connection.close()
        try:
            await asyncio.wait_for(self._pump, CLOSE_TIMEOUT)
        except TimeoutError:
            self._pump.cancel()


def _expire(waiter: asyncio.Future) -> None:
    if not waiter.done():
        waiter.set_exception(TimeoutError("no response, not even the local 0x25, within the request timeout"))


async def connect(url: str, *, timeout: float, **options: Any) -> StmpClient:
    """Connect to tcp://HOST:PORT or ws://HOST:PORT/PATH and negotiate."""
    opts = Options(**options)
    parts = urlsplit(url)
    carrier: Carrier
    if parts.scheme == "tcp":
        reader, writer = await asyncio.wait_for(asyncio.open_connection(parts.hostname, parts.port), timeout)
        carrier, framing = StreamCarrier(reader, writer), "stream"
    elif parts.scheme == "ws":
        websocket = await ws_connect(
            url,
            open_timeout=timeout,
            max_size=opts.max_payload + FRAME_OVERHEAD,
            compression=None,
            proxy=None,  # the server named, never an HTTP(S)_PROXY the environment names
            ping_interval=None,  # STMP has its own heartbeat
            close_timeout=CLOSE_TIMEOUT,
        )
        carrier, framing = WebSocketCarrier(websocket), "message"
    else:
        raise ValueError(f"unsupported URL scheme in {url!r}; use tcp:// or ws://")
    client = StmpClient(Link(opts.connection("client", framing), carrier), opts)
    await client._negotiate(timeout)
    return client


# -- client-role test cases (QUIC-interop-runner style: 127 = unsupported) ------

CONNECT_TIMEOUT = 5.0
ID_WRAP_REQUESTS = 0xFFFF + 2  # IDs 1..0xFFFF, then 1 and 2 again
ID_WRAP_WINDOW = 128
HEARTBEAT_IDLE = 10.0
HEARTBEAT_INTERVAL = 2.0
# The request-timeout case's own request timeout: a suite grading it against this client must
# assume the same (its request_timeout_ms parameter), as it times the 0x25 from both sides.
CASE_REQUEST_TIMEOUT = 2.0


async def _case_negotiate(url: str) -> bool:
    client = await connect(url, timeout=CONNECT_TIMEOUT)
    await client.close()
    return client.closed == Closed("local")


async def _case_echo(url: str) -> bool:
    client = await connect(url, timeout=CONNECT_TIMEOUT)
    try:
        payload = b"stmp echo"
        response = await client.request(ACTION_ECHO, Encoding.RAW, payload)
        return response == Response(response.id, Status.OK, Encoding.RAW, payload)
    finally:
        await client.close()


async def _case_id_wrap(url: str) -> bool:
    client = await connect(url, timeout=CONNECT_TIMEOUT)
    numbers = iter(range(ID_WRAP_REQUESTS))

    async def requester() -> bool:
        # Only the status counts: the suite acting as server answers the IDs,
        # not the echo service, so payloads are not compared here.
        for n in numbers:
            response = await client.request(ACTION_ECHO, Encoding.RAW, n.to_bytes(4, "big"))
            if response.status != Status.OK:
                return False
        return True

    try:
        # ID_WRAP_WINDOW requests outstanding at a time (IDs stay unique: far fewer than 0xFFFF are
        # in flight), still sent in ID order: a round trip each, one after another, took seconds; 128
        # rather than 32: a batch of replies wakes more requesters per turn of the loop (12 % less CPU)
        return all(await asyncio.gather(*(requester() for _ in range(ID_WRAP_WINDOW))))
    finally:
        await client.close()


async def _case_heartbeat(url: str) -> bool:
    client = await connect(url, timeout=CONNECT_TIMEOUT, heartbeat_interval=HEARTBEAT_INTERVAL)
    await asyncio.sleep(HEARTBEAT_IDLE)
    alive = client.closed is None
    await client.close()
    return alive


async def _case_request_timeout(url: str) -> bool:
    client = await connect(url, timeout=CONNECT_TIMEOUT, request_timeout=CASE_REQUEST_TIMEOUT)
    try:
        response = await client.request(ACTION_ECHO, Encoding.RAW, b"no answer expected")
        return response.status == Status.REQUEST_TIMEOUT
    finally:
        await client.close()


_TESTCASES: dict[str, Callable[[str], Awaitable[bool]]] = {
    "negotiate": _case_negotiate,
    "echo": _case_echo,
    "id-wrap": _case_id_wrap,
    "heartbeat": _case_heartbeat,
    "request-timeout": _case_request_timeout,
}


async def run_client_testcase(url: str, testcase: str) -> int:
    """Exit code: 0 passed, 1 failed, 127 unknown test case."""
    case = _TESTCASES.get(testcase)
    if case is None:
        return 127
    try:
        return 0 if await case(url) else 1
    except (OSError, TimeoutError, WebSocketException) as exc:  # OSError covers StmpClosed
        print(f"stmp client {testcase}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
