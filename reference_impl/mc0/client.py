"""A thin asyncio mc0 connector: a ZMTP DEALER (:mod:`reference_impl.zmtp.sockets`) speaking mc0.

    client = await Mc0Client.connect(url)                 # CURVE, the test key pairs
    await client.hello(ttl_ms=10000)                      # CONNECT VERSION 0.3 ..., waits for OK
    await client.subscribe(b"topic")
    await client.put(b"topic", [b"body"], extensions=[(b"X-Trace", b"1")])
    msg = await client.recv()                             # the next mc0 message (NOOPs included)
    await client.close()

``request`` adds a fresh ``ID`` and waits for the OK or ERROR that carries
it; messages that arrive meanwhile are kept for :meth:`recv`.  Every wait is
bounded by ``timeout``.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from collections.abc import Iterable, Sequence

from reference_impl.mc0 import codec, testkeys
from reference_impl.mc0.codec import ID, Mc0Message
from reference_impl.zmtp.curve import CurveClientConfig, KeyPair
from reference_impl.zmtp.mechanism import MechanismConfig
from reference_impl.zmtp.null import NullConfig
from reference_impl.zmtp.sockets import Dealer, connect_dealer


class RequestFailed(Exception):
    """The broker answered a request with ERROR."""

    def __init__(self, reply: Mc0Message) -> None:
        super().__init__((reply.header(codec.DESCRIPTION) or b"").decode("utf-8", "replace"))
        self.reply = reply


class Mc0Client:
    def __init__(self, dealer: Dealer, timeout: float) -> None:
        self.dealer = dealer
        self.timeout = timeout
        self._ids = itertools.count(1)
        self._kept: deque[Mc0Message] = deque()

    @classmethod
    async def connect(cls, url: str, *, mechanism: str = "CURVE", server_key: bytes | None = None,
                      keypair: KeyPair | None = None, timeout: float = 5.0) -> Mc0Client:
        config: MechanismConfig = NullConfig()
        if mechanism == "CURVE":
            config = CurveClientConfig(server_key or testkeys.SERVER.public, keypair or testkeys.CLIENT)
        dealer = await connect_dealer(url, mechanism=config, timeout=timeout, poll_interval=0.2)
        return cls(dealer, timeout)

    async def close(self) -> None:
        await self.dealer.close()

    async def __aenter__(self) -> Mc0Client:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def send(self, msg: Mc0Message) -> None:
        await self.dealer.send(codec.encode_message(msg))

    async def send_frames(self, frames: Sequence[bytes]) -> None:
        """Raw ZMTP message frames, for broken input."""
        await self.dealer.send(list(frames))

    async def recv(self, timeout: float | None = None) -> Mc0Message:
        if self._kept:
            return self._kept.popleft()
        async with asyncio.timeout(timeout or self.timeout):
            return codec.decode_message(await self.dealer.recv())

    async def request(self, verb: bytes, headers: Iterable[tuple[bytes, bytes]] = (),
                      positional: Sequence[bytes] | None = None) -> Mc0Message:
        """Send with a fresh ID; return the OK carrying it, raise RequestFailed on its ERROR."""
        request_id = str(next(self._ids)).encode()
        await self.send(codec.message(verb, [(ID, request_id), *headers], positional))
        async with asyncio.timeout(self.timeout):
            while True:
                reply = codec.decode_message(await self.dealer.recv())
                if reply.verb in (codec.OK, codec.ERROR) and reply.id == request_id:
                    if reply.verb == codec.ERROR:
                        raise RequestFailed(reply)
                    return reply
                self._kept.append(reply)

    async def hello(self, version: bytes = codec.CURRENT_VERSION, ttl_ms: int | None = None) -> Mc0Message:
        headers = [(codec.VERSION, version)] + ([(codec.TTL, str(ttl_ms).encode())] if ttl_ms else [])
        return await self.request(codec.CONNECT, headers)

    async def subscribe(self, *topics: bytes) -> Mc0Message:
        return await self.request(codec.SUB, (), topics)

    async def unsubscribe(self, *topics: bytes) -> Mc0Message:
        return await self.request(codec.UNSUB, (), topics)

    async def put(self, topic: bytes, body: Sequence[bytes], extensions: Iterable[tuple[bytes, bytes]] = ()) -> Mc0Message:
        return await self.request(codec.PUT, [(codec.TOPIC, topic), *extensions], body)
