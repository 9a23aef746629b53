"""MTL asyncio client over the reference ZMTP sockets (REQ for control, DEALER for data).

    client = await MtlClient.connect("tcp://127.0.0.1:PORT")
    await client.login("alice", "wonderland", mechanism="SCRAM-SHA-256")   # Open (+ Authorize ...) -> 201
    await client.select_profile("test")
    writer = await client.writer(["resource"])                            # 202 -> DataFlow, Lease sent, 200 awaited
    reader = await client.reader(["resource"])
    await reader.summon("resource")
    await writer.send_content(b"hello", resource="resource")
    content = await reader.next_content()
    await client.close()

Every wait is bounded by ``timeout`` (default 5 s; TimeoutError).  A control
request answered 401 is retried once after authenticating again with the
credentials of the last login: the client "MUST be able to re-authenticate
at any time".  A data flow answers the server's Ping with Pong while it waits
and keeps Content and Responses that arrive before they are asked for.

``run_client_testcase(url, name)`` plays a client test case against an MTL
server: ``test-profile`` (open, authenticate with PLAIN, profile "test", a
writer and a reader lease, one Content written arrives at the reader) and
``scram`` (the same with SCRAM-SHA-256).  It returns 0 on success, 1 on a
failure and 127 for an unknown case.
"""

from __future__ import annotations

import asyncio
import itertools
import sys
from collections import deque
from typing import Any
from urllib.parse import urlsplit

from reference_impl.common.errors import CodecError
from reference_impl.mtl import control
from reference_impl.mtl.codec import (
    Confirm, Content, DataCommand, Dismiss, Lease, Ping, Pong, Reject, Response, Summon, decode_data, encode_data,
    properties_from,
)
from reference_impl.mtl.control import Reply
from reference_impl.mtl.sasl import PLAIN, SCRAM_SHA_256, ScramClientExchange, b64decode, b64encode, plain_response
from reference_impl.zmtp.sockets import Dealer, Req, connect_dealer, connect_req

OPEN_BODY = {"protocol": {"name": "MTL", "version": 1}, "virtual-host": "test-env"}


class MtlError(Exception):
    """The server answered something the client cannot go on with."""

    def __init__(self, message: str, reply: Reply | None = None) -> None:
        super().__init__(message)
        self.reply = reply


class MtlClient:
    def __init__(self, url: str, req: Req, timeout: float) -> None:
        self.url = url
        self.req = req
        self.timeout = timeout
        self.profiles: list[str] = []
        self.flows: list[DataFlow] = []
        self._credentials: tuple[str, str, str] | None = None

    @classmethod
    async def connect(cls, url: str, *, timeout: float = 5.0) -> "MtlClient":
        return cls(url, await connect_req(url, timeout=timeout), timeout)

    # -- control ----------------------------------------------------------------------

    async def request(self, command: str, body: Any) -> Reply:
        """One request, one reply (no re-authentication)."""
        await self.req.send(control.encode_request(command, body))
        return control.decode_reply(await self.req.recv())

    async def call(self, command: str, body: Any) -> Reply:
        """A request; a 401 answer makes the client authenticate again and retry once."""
        reply = await self.request(command, body)
        if reply.code == 401 and self._credentials is not None and control.command_key(command) not in (
                control.OPEN, control.AUTHORIZE):
            user, password, mechanism = self._credentials
            await self.authenticate(user, password, mechanism)
            reply = await self.request(command, body)
        return reply

    async def open(self, body: Any = None) -> Reply:
        reply = await self.request("Connection.Open", OPEN_BODY if body is None else body)
        if reply.code == 201:
            self.profiles = list(reply.body.get("profiles", []))
        return reply

    async def authenticate(self, user: str, password: str, mechanism: str = PLAIN) -> Reply:
        """The whole SASL exchange; 201 or MtlError."""
        if mechanism == PLAIN:
            reply = await self.request("Connection.Authorize",
                                       {"mechanism": PLAIN, "response": b64encode(plain_response(user, password))})
        elif mechanism == SCRAM_SHA_256:
            reply = await self._scram(user, password)
        else:
            raise ValueError(f"unsupported mechanism {mechanism!r}")
        if reply.code != 201:
            raise MtlError(f"authentication refused: {reply.code} {reply.body}", reply)
        self._credentials = (user, password, mechanism)
        self.profiles = list(reply.body.get("profiles", []))
        return reply

    async def _scram(self, user: str, password: str) -> Reply:
        exchange = ScramClientExchange(user, password)
        reply = await self.request("Connection.Authorize",
                                   {"mechanism": SCRAM_SHA_256, "response": b64encode(exchange.client_first())})
        if reply.code != 402:
            return reply
        final = exchange.client_final(b64decode(reply.body["challenge"]))
        reply = await self.request("Connection.Authorize", {"mechanism": SCRAM_SHA_256, "response": b64encode(final)})
        if reply.code != 402:
            return reply
        if not exchange.verify_server_final(b64decode(reply.body["challenge"])):
            raise MtlError("the server's SCRAM signature is wrong", reply)
        return await self.request("Connection.Authorize", {"mechanism": SCRAM_SHA_256, "response": ""})

    async def login(self, user: str, password: str, mechanism: str = PLAIN) -> Reply:
        """Connection.Open, then authenticate when the server answers 401."""
        reply = await self.open()
        if reply.code == 401:
            reply = await self.authenticate(user, password, mechanism)
        elif reply.code == 201:
            self._credentials = (user, password, mechanism)
        else:
            raise MtlError(f"Connection.Open refused: {reply.code} {reply.body}", reply)
        return reply

    async def select_profile(self, name: str) -> Reply:
        reply = await self.call("Connection.Profile", {"profile": name})
        if reply.code != 200:
            raise MtlError(f"profile {name!r} refused: {reply.code} {reply.body}", reply)
        return reply

    async def lease(self, kind: str, resources: list[str], confirm: str = "none") -> tuple[int, str]:
        command = "Connection.Reader" if kind == "reader" else "Connection.Writer"
        reply = await self.call(command, {"resources": resources, "confirm": confirm})
        if reply.code != 202:
            raise MtlError(f"{command} refused: {reply.code} {reply.body}", reply)
        return int(reply.body["port"]), str(reply.body["lease"])

    async def reader(self, resources: list[str], confirm: str = "none") -> "DataFlow":
        return await self._flow("reader", resources, confirm)

    async def writer(self, resources: list[str], confirm: str = "none") -> "DataFlow":
        return await self._flow("writer", resources, confirm)

    async def _flow(self, kind: str, resources: list[str], confirm: str) -> "DataFlow":
        port, lease = await self.lease(kind, resources, confirm)
        flow = await DataFlow.connect(urlsplit(self.url).hostname or "127.0.0.1", port, timeout=self.timeout)
        self.flows.append(flow)
        code = await flow.lease(lease)
        if code != 200:
            raise MtlError(f"Lease refused with {code}")
        return flow

    async def close(self) -> None:
        for flow in self.flows:
            await flow.close()
        await self.req.close()


class DataFlow:
    """One data connection (DEALER)."""

    def __init__(self, dealer: Dealer, timeout: float) -> None:
        self.dealer = dealer
        self.timeout = timeout
        self._seq = itertools.count(1)
        self._content_seq = itertools.count(1)
        self._inbox: deque[DataCommand] = deque()

    @classmethod
    async def connect(cls, host: str, port: int, *, timeout: float = 5.0) -> "DataFlow":
        return cls(await connect_dealer(f"tcp://{host}:{port}", timeout=timeout), timeout)

    async def send(self, command: DataCommand) -> None:
        await self.dealer.send(encode_data(command))

    async def _receive(self) -> DataCommand:
        while True:
            frames = await self.dealer.recv()
            try:
                command = decode_data(frames)
            except CodecError:
                continue  # ill-formed: dropped
            if isinstance(command, Ping):
                await self.send(Pong())
                continue
            return command

    async def wait_for(self, predicate, timeout: float | None = None) -> DataCommand:
        """The first received command (kept ones first) that satisfies ``predicate``; others are kept."""
        for i, command in enumerate(self._inbox):
            if predicate(command):
                del self._inbox[i]
                return command
        async with asyncio.timeout(self.timeout if timeout is None else timeout):
            while True:
                command = await self._receive()
                if predicate(command):
                    return command
                self._inbox.append(command)

    async def command(self, command: DataCommand) -> int:
        """Send a command with a sequence and return the code of its Response."""
        await self.send(command)
        seq = command.seq  # type: ignore[union-attr]
        response = await self.wait_for(lambda c: isinstance(c, Response) and c.seq == seq)
        return response.code  # type: ignore[union-attr]

    async def lease(self, lease: str) -> int:
        return await self.command(Lease(next(self._seq), lease))

    async def summon(self, resource: str) -> int:
        return await self.command(Summon(next(self._seq), resource))

    async def dismiss(self, resource: str) -> int:
        return await self.command(Dismiss(next(self._seq), resource))

    async def send_content(self, body: bytes, *, resource: str = "", properties: dict[str, str] | None = None) -> int:
        seq = next(self._content_seq)
        await self.send(Content(seq, resource, properties_from(properties or {}), body))
        return seq

    async def next_content(self, timeout: float | None = None) -> Content:
        return await self.wait_for(lambda c: isinstance(c, Content), timeout)  # type: ignore[return-value]

    async def confirm(self, seq: int, multiple: bool = False) -> None:
        await self.send(Confirm(seq, multiple))

    async def reject(self, seq: int, multiple: bool = False, recycle: bool = False) -> None:
        await self.send(Reject(seq, multiple, recycle))

    async def close(self) -> None:
        await self.dealer.close()


# -- client test cases --------------------------------------------------------------

async def _test_profile(url: str, mechanism: str) -> None:
    client = await MtlClient.connect(url)
    try:
        await client.login("alice", "wonderland", mechanism)
        await client.select_profile("test")
        writer = await client.writer(["resource"])
        reader = await client.reader(["resource"])
        if await reader.summon("resource") != 200:
            raise MtlError("Summon refused")
        await writer.send_content(b"hello", resource="resource", properties={"k": "v"})
        content = await reader.next_content()
        if content.body != b"hello" or dict(content.properties) != {"k": "v"}:
            raise MtlError(f"wrong content {content!r}")
        if await reader.dismiss("resource") != 200:
            raise MtlError("Dismiss refused")
    finally:
        await client.close()


CLIENT_TESTCASES = {
    "test-profile": lambda url: _test_profile(url, PLAIN),
    "scram": lambda url: _test_profile(url, SCRAM_SHA_256),
}


async def run_client_testcase(url: str, testcase: str) -> int:
    case = CLIENT_TESTCASES.get(testcase)
    if case is None:
        return 127
    try:
        async with asyncio.timeout(30):
            await case(url)
    except (MtlError, CodecError, TimeoutError, ConnectionError, OSError, KeyError, ValueError) as exc:
        print(f"mtl client {testcase}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0
