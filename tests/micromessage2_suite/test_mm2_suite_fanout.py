"""Fan-out to several subscribers: a scenario case holds one connection, so this check opens several.

docs/profiles/micromessage2.md, test service: "COMMAND `subscribe;destination=test%2Ftopic` then a SEND to `test/topic` =
that MESSAGE fanned out to every subscriber."  Spec: "TOPIC: A queue where messages are enqueued to
*all subscribers."  The check speaks through the suite's own adapter (frames by field, its reader).
"""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

import pytest

from conformance.selftest.buggy_mm2 import BuggyMm2Server
from conformance.protocols import adapter_for

MM2 = adapter_for("micromessage2")
WAIT = 2.0


class Peer:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.frames = MM2.new_reader("tcp")
        self.queue: list = []
        self.seq = 0

    @classmethod
    async def connect(cls, url: str) -> "Peer":
        parts = urlsplit(url)
        assert parts.hostname == "127.0.0.1"
        peer = cls(*await asyncio.wait_for(asyncio.open_connection("127.0.0.1", parts.port), WAIT))
        hello = {"frame": "handshake", "identity": "fan-out", "required": "pubsub", "optional": ""}
        await peer.send(hello)
        assert (await peer.next())["frame"] == "handshake"
        await peer.send(hello)
        return peer

    async def send(self, spec: dict) -> None:
        for data in MM2.encode(spec, "tcp"):
            self.writer.write(data)
        await asyncio.wait_for(self.writer.drain(), WAIT)

    async def publish(self, destination: str, payload: str) -> None:
        self.seq += 1
        await self.send({"frame": "send", "seq": self.seq, "destination": destination, "payload": payload})

    async def next(self, timeout: float = WAIT) -> dict | None:
        """The next frame's fields; None when nothing arrives in time (or the peer closed)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not self.queue:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return None
            try:
                data = await asyncio.wait_for(self.reader.read(65536), remaining)
            except asyncio.TimeoutError:
                return None
            if not data:
                return None
            self.queue.extend(f.fields for f in self.frames.feed(data))
        return self.queue.pop(0)

    async def subscribe(self, name: str, destination: str) -> None:
        await self.send({"frame": "command", "name": name, "args": {"destination": destination}})
        # a round trip on the same connection proves the server has taken the command in
        await self.publish("test/echo", f"synced {name}")
        echo = await self.next()
        assert echo and echo["payload"] == f"synced {name}".encode(), echo

    async def close(self) -> None:
        self.writer.close()


async def fan_out_problems(url: str, subscribers: int = 3) -> list[str]:
    """Everything that went wrong when one publisher sends to several subscribers; [] when all is well."""
    subs = [await Peer.connect(url) for _ in range(subscribers)]
    publisher = await Peer.connect(url)
    problems = []
    try:
        for peer in subs:
            await peer.subscribe("subscribe", "test/topic")
        await publisher.publish("test/topic", "to everyone")
        for i, got in enumerate(await asyncio.gather(*(peer.next() for peer in subs))):
            if not got or got.get("destination") != "test/topic" or got.get("payload") != b"to everyone":
                problems.append(f"subscriber {i} got {got}")
        if (extra := await publisher.next(0.3)) is not None:
            problems.append(f"the publisher, not subscribed, got {extra}")
        await subs[0].subscribe("unsubscribe", "test/topic")
        await publisher.publish("test/topic", "to the rest")
        if (late := await subs[0].next(0.3)) is not None:
            problems.append(f"the unsubscribed peer got {late}")
        for i, got in enumerate(await asyncio.gather(*(peer.next() for peer in subs[1:])), start=1):
            if not got or got.get("payload") != b"to the rest":
                problems.append(f"subscriber {i} got {got} after another one left")
    finally:
        for peer in [*subs, publisher]:
            await peer.close()
    return problems


async def _against_reference() -> list[str]:
    from reference_impl.micromessage2.server import start_server
    server = await start_server("127.0.0.1", 0)
    try:
        return await fan_out_problems(server.url)
    finally:
        await server.close()


async def _against_buggy(bug: str | None) -> list[str]:
    server = await BuggyMm2Server(bug).start()
    try:
        return await fan_out_problems(server.url)
    finally:
        await server.close()


def test_reference_fans_out_to_every_subscriber() -> None:
    assert asyncio.run(_against_reference()) == []


@pytest.mark.parametrize("bug", [None, "fan-out-to-one"])
def test_fan_out_check_tells_a_one_subscriber_server_apart(bug: str | None) -> None:
    problems = asyncio.run(_against_buggy(bug))
    if bug is None:
        assert problems == []
    else:
        assert problems and all("subscriber" in p for p in problems), problems
