"""rsocket-py (PyPI ``rsocket``, 0.4.20) as a peer of the suite, through the library's public API
only: RSocketServer with a request handler that runs the profile's test service
(docs/profiles/rsocket.md, "Test service"), RSocketClient for the client-role cases.

    python3 rsocket_py_peer.py server --transport tcp|ws --port PORT
    python3 rsocket_py_peer.py client --url tcp://127.0.0.1:PORT|ws://127.0.0.1:PORT/ --testcase NAME

Written apart from reference_impl: it imports nothing of the project. The client test cases are
the profile's (request-response, stream, fnf, metadata-push) and, for the two names the profile
reserves, the interop matrix's reading (channel, fragmented; reference_impl/rsocket/client_cases.py),
so any client can be paired with any server. Exit codes follow the image contract: 0 done, 127 unsupported, 1 failed.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from datetime import timedelta
from urllib.parse import urlsplit

import websockets
from reactivestreams.publisher import Publisher
from reactivestreams.subscriber import Subscriber
from reactivestreams.subscription import Subscription
from rsocket.awaitable.awaitable_rsocket import AwaitableRSocket
from rsocket.extensions.composite_metadata import CompositeMetadata
from rsocket.extensions.routing import RoutingMetadata
from rsocket.helpers import create_error_future, create_future, single_transport_provider
from rsocket.lease import SingleLeasePublisher
from rsocket.payload import Payload
from rsocket.request_handler import BaseRequestHandler
from rsocket.rsocket_client import RSocketClient
from rsocket.rsocket_server import RSocketServer
from rsocket.streams.stream_from_generator import StreamFromGenerator
from rsocket.transports.tcp import TransportTCP
from rsocket.transports.websockets_transport import WebsocketsTransport

UNSUPPORTED = 127
LABEL = "rsocket-py peer"
COMPOSITE_MIME = b"message/x.rsocket.composite-metadata.v0"
FRAGMENT_SIZE = 1024
FRAGMENTED_SIZE = 40_000
SETTLE = 0.3  # fnf and METADATA_PUSH: let the written frame leave before the connection closes


class Kept:
    """The last fire-and-forget and METADATA_PUSH values, shared by every connection."""
    fnf = b""
    metadata_push = b""


class EchoChannel(Publisher, Subscription, Subscriber):
    """Echoes the initial payload and then every PAYLOAD, asking the requester for as much as it
    asks of us (its credit passes straight through); completes after the requester does."""

    def __init__(self, first: Payload) -> None:
        self.queue = [first]
        self.credit = 0
        self.requester_done = False
        self.out: Subscriber | None = None
        self.inbound: Subscription | None = None
        self.closed = False

    # Publisher: what we send
    def subscribe(self, subscriber: Subscriber) -> None:
        self.out = subscriber
        subscriber.on_subscribe(self)

    def request(self, n: int) -> None:
        if self.closed:  # cancelled or done: the requester's credit no longer passes through
            return
        self.credit += n
        if not self.requester_done and self.inbound is not None:
            self.inbound.request(n)
        self._pump()

    def cancel(self) -> None:
        self.closed = True

    # Subscriber: what the requester sends
    def on_subscribe(self, subscription: Subscription) -> None:
        self.inbound = subscription

    def on_next(self, value: Payload, is_complete: bool = False) -> None:
        self.queue.append(value)
        self.requester_done = self.requester_done or is_complete
        self._pump()

    def on_complete(self) -> None:
        self.requester_done = True
        self._pump()

    def on_error(self, exception: Exception) -> None:
        self.closed = True

    def _pump(self) -> None:
        while not self.closed and self.out is not None and self.credit > 0 and self.queue:
            item = self.queue.pop(0)
            self.credit -= 1
            self.out.on_next(Payload(item.data, item.metadata), False)
        if not self.closed and self.out is not None and self.requester_done and not self.queue:
            self.closed = True
            self.out.on_complete()


class TestService(BaseRequestHandler):
    """One per connection: routing by composite metadata applies when its SETUP negotiated it."""

    composite = False

    async def on_setup(self, data_encoding: bytes, metadata_encoding: bytes, payload: Payload):
        self.composite = metadata_encoding in (COMPOSITE_MIME, COMPOSITE_MIME.decode())

    def source(self, payload: Payload) -> bytes:
        """What the request is routed by: its first routing tag, else its data."""
        if self.composite and payload.metadata:
            try:
                for item in CompositeMetadata().parse(payload.metadata).items:
                    if isinstance(item, RoutingMetadata) and item.tags:
                        tag = item.tags[0]
                        return bytes(tag) if isinstance(tag, (bytes, bytearray)) else tag.encode()
            except Exception:  # malformed composite metadata: no route from it
                pass
        return bytes(payload.data or b"")

    async def request_response(self, payload: Payload):
        source = self.source(payload)
        route = source.decode("utf-8", "replace")
        if route.startswith("echo:"):
            return create_future(Payload(source[len(b"echo:"):], payload.metadata))
        if route.startswith("error:"):
            return create_error_future(RuntimeError(route[len("error:"):]))
        if route == "last-fnf":
            return create_future(Payload(Kept.fnf))
        if route == "last-metadata-push":
            return create_future(Payload(Kept.metadata_push))
        if route == "never":
            return asyncio.get_running_loop().create_future()
        return create_error_future(RuntimeError("unknown route"))

    async def request_stream(self, payload: Payload):
        route = self.source(payload).decode("utf-8", "replace")
        if route.startswith("range:") and route[len("range:"):].isdigit():
            end = int(route[len("range:"):])
            # the library sends what the requester's credit allows; the last one carries C
            return StreamFromGenerator(lambda: ((Payload(str(i).encode()), i == end - 1) for i in range(end)))
        raise RuntimeError(route[len("error:"):] if route.startswith("error:") else "unknown route")

    async def request_channel(self, payload: Payload):
        channel = EchoChannel(payload)
        return channel, channel

    async def request_fire_and_forget(self, payload: Payload):
        source = self.source(payload)
        if source.startswith(b"fnf:"):
            Kept.fnf = source[len(b"fnf:"):]

    async def on_metadata_push(self, payload: Payload):
        Kept.metadata_push = payload.metadata or b""


async def serve(transport: str, port: int) -> None:
    # A SETUP with L gets one LEASE from the library (2^31-1 requests for 2^31-1 ms: the library's
    # defaults); a SETUP without L never subscribes to the publisher and is served as before.
    if transport == "ws":
        async def on_websocket(websocket):
            rsocket_transport = WebsocketsTransport()
            RSocketServer(rsocket_transport, handler_factory=TestService, lease_publisher=SingleLeasePublisher())
            await rsocket_transport.handler(websocket)

        listener = await websockets.serve(on_websocket, "127.0.0.1", port, max_size=None)
    else:
        listener = await asyncio.start_server(
            lambda reader, writer: RSocketServer(TransportTCP(reader, writer), handler_factory=TestService,
                                                 lease_publisher=SingleLeasePublisher()),
            "127.0.0.1", port)
    print(f"{LABEL}: serving the test service on {transport} 127.0.0.1:{port}", flush=True)
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):  # PID 1 of its container: no default handler
        asyncio.get_running_loop().add_signal_handler(signum, stop.set)
    await stop.wait()
    listener.close()


class CaseFailed(Exception):
    pass


def check(condition: bool, message: str) -> None:
    if not condition:
        raise CaseFailed(message)


async def case_request_response(client: AwaitableRSocket) -> None:
    answer = await client.request_response(Payload(b"echo:hello"))
    check(answer.data == b"hello", f"echo:hello answered {answer.data!r}")


async def case_stream(client: AwaitableRSocket) -> None:
    items = [p.data for p in await client.request_stream(Payload(b"range:5"), limit_rate=2)]
    check(items == [str(i).encode() for i in range(5)], f"range:5 in batches of 2 gave {items}")


async def case_channel(client: AwaitableRSocket) -> None:
    sent = [b"a", b"", b"c", b"d"]  # the empty one still carries N
    rest = StreamFromGenerator(lambda: ((Payload(item), i == len(sent) - 2) for i, item in enumerate(sent[1:])))
    items = [p.data for p in await client.request_channel(Payload(sent[0]), rest, limit_rate=2)]
    check(items == sent, f"the channel echoed {items} for {sent}")


async def case_fnf(client: AwaitableRSocket) -> None:
    await client.fire_and_forget(Payload(b"fnf:client"))
    await asyncio.sleep(SETTLE)


async def case_metadata_push(client: AwaitableRSocket) -> None:
    await client.metadata_push(b"client-metadata")
    await asyncio.sleep(SETTLE)


async def case_fragmented(client: AwaitableRSocket) -> None:
    body, metadata = b"x" * FRAGMENTED_SIZE, b"m" * 3000
    answer = await client.request_response(Payload(b"echo:" + body, metadata))
    check(answer.data == body, f"a {FRAGMENTED_SIZE}-byte echo came back as {len(answer.data or b'')} bytes")
    check(answer.metadata == metadata, "the fragmented echo's metadata differs")


CASES = {"request-response": case_request_response, "stream": case_stream, "channel": case_channel,
         "fnf": case_fnf, "metadata-push": case_metadata_push, "fragmented": case_fragmented}


async def open_transport(url: str):
    parts = urlsplit(url)
    if parts.scheme == "ws":
        transport = WebsocketsTransport()
        websocket = await websockets.connect(url, max_size=None)
        handler = asyncio.create_task(transport.handler(websocket))
        return transport, handler
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    return TransportTCP(reader, writer), None


async def run_client(url: str, name: str) -> int:
    case = CASES.get(name)
    if case is None:
        print(f"{LABEL}: unsupported test case {name!r}", flush=True)
        return UNSUPPORTED
    try:
        transport, handler = await asyncio.wait_for(open_transport(url), 10)
        client = RSocketClient(single_transport_provider(transport), data_encoding=b"text/plain",
                               metadata_encoding=b"text/plain", keep_alive_period=timedelta(seconds=10),
                               max_lifetime_period=timedelta(seconds=30),
                               fragment_size_bytes=FRAGMENT_SIZE if name == "fragmented" else None)
        async with AwaitableRSocket(client) as awaitable:
            await asyncio.wait_for(case(awaitable), 20)
        if handler is not None:
            handler.cancel()
    except Exception as exc:
        print(f"{LABEL}: {name}: FAILED: {type(exc).__name__}: {exc}", flush=True)
        return 1
    print(f"{LABEL}: {name}: OK", flush=True)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("role", choices=("server", "client"))
    parser.add_argument("--transport", default="tcp", choices=("tcp", "ws"))
    parser.add_argument("--port", type=int)
    parser.add_argument("--url")
    parser.add_argument("--testcase")
    args = parser.parse_args()
    if args.role == "server":
        asyncio.run(serve(args.transport, args.port))
        return 0
    return asyncio.run(run_client(args.url, args.testcase))


if __name__ == "__main__":
    sys.exit(main())
