"""A ZMTP client spoken by hand over TCP, from the sans-IO pieces of reference_impl/zmtp.

The security tests need a client that does what no well-behaved one would: box a vouch
under the wrong key, present a cookie from another handshake, skip the handshake.  A
:class:`RawPeer` sends the octets a test builds and reads the server's answer with a
deadline on every read; :func:`curve_client` runs a CURVE client handshake step by step
with hooks for each forgery.  Only 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from nacl import bindings as sodium

from reference_impl.mc0.broker import Broker
from reference_impl.zmtp import curve
from reference_impl.zmtp.codec import Frame, StreamDecoder, encode_frame
from reference_impl.zmtp.commands import Metadata, command_body, decode_error, split_command
from reference_impl.zmtp.curve import KeyPair
from reference_impl.zmtp.greeting import GREETING_SIZE, Greeting, decode_greeting, encode_greeting

READ_TIMEOUT = 3.0


@dataclass
class Answer:
    """What the server did after the last thing we sent."""

    kind: str  # "command", "message", "closed" (EOF or reset) or "silent" (nothing within the deadline)
    name: str = ""
    body: bytes = b""

    @property
    def error_reason(self) -> bytes | None:
        return decode_error(split_command(self.body)[1]).reason if self.name == "ERROR" else None


class RawPeer:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.frames = StreamDecoder()
        self.queue: list[Frame] = []
        self.greeting: Greeting | None = None

    @classmethod
    async def open(cls, url: str) -> "RawPeer":
        parts = urlsplit(url)
        assert parts.hostname == "127.0.0.1", url
        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", parts.port), READ_TIMEOUT)
        return cls(reader, writer)

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        try:
            async with asyncio.timeout(READ_TIMEOUT):
                await self.writer.drain()
        except (ConnectionError, OSError):
            pass

    async def send_command(self, body: bytes) -> None:
        await self.send(encode_frame(Frame(body, command=True)))

    async def _fill(self, needed: int, buffer: bytearray) -> bool:
        try:
            async with asyncio.timeout(READ_TIMEOUT):
                while len(buffer) < needed:
                    chunk = await self.reader.read(65536)
                    if not chunk:
                        return False
                    buffer += chunk
        except (ConnectionError, OSError):
            return False
        return True

    async def read_greeting(self) -> Greeting | None:
        buffer = bytearray()
        try:
            if not await self._fill(GREETING_SIZE, buffer):
                return None
        except TimeoutError:
            return None
        self.greeting = decode_greeting(bytes(buffer[:GREETING_SIZE]))
        self.queue += self.frames.feed(bytes(buffer[GREETING_SIZE:]))
        return self.greeting

    async def answer(self, timeout: float = READ_TIMEOUT) -> Answer:
        """The server's next frame, or how it ended."""
        try:
            async with asyncio.timeout(timeout):
                while not self.queue:
                    try:
                        chunk = await self.reader.read(65536)
                    except (ConnectionError, OSError):
                        chunk = b""
                    if not chunk:
                        return Answer("closed")
                    self.queue += self.frames.feed(chunk)
        except TimeoutError:
            return Answer("silent")
        frame = self.queue.pop(0)
        if frame.command:
            return Answer("command", split_command(frame.body)[0], frame.body)
        return Answer("message", body=frame.body)

    async def until_closed(self, timeout: float = READ_TIMEOUT) -> Answer:
        """Read (and drop) raw octets until the server closes: "closed", or "silent" at the deadline."""
        try:
            async with asyncio.timeout(timeout):
                while True:
                    try:
                        chunk = await self.reader.read(65536)
                    except (ConnectionError, OSError):
                        chunk = b""
                    if not chunk:
                        return Answer("closed")
        except TimeoutError:
            return Answer("silent")

    async def close(self) -> None:
        self.writer.close()
        try:
            async with asyncio.timeout(2):
                await self.writer.wait_closed()
        except (ConnectionError, OSError, TimeoutError):
            pass


# -- CURVE by hand ---------------------------------------------------------------------------

DEALER = Metadata.of([("Socket-Type", b"DEALER"), ("Identity", b"")])


@dataclass
class CurveRun:
    """One CURVE client handshake as it went."""

    welcome: curve.Welcome | None = None
    hello: bytes = b""
    initiate: bytes = b""
    transient: KeyPair = field(default_factory=KeyPair.generate)
    answer: Answer | None = None  # what the server did after our INITIATE (or HELLO, if no WELCOME came)
    closed: bool = False  # the server closed the connection (after its answer, or as its answer)
    ready_metadata: Metadata | None = None

    @property
    def reached_ready(self) -> bool:
        return self.ready_metadata is not None


def initiate_body(cookie: bytes, nonce: int, *, client: KeyPair, transient: KeyPair, server_key: bytes,
                  server_transient: bytes, vouch_signer: bytes | None = None, vouch_plain: bytes | None = None,
                  metadata: Metadata = DEALER) -> bytes:
    """An INITIATE whose vouch may be forged: boxed by ``vouch_signer`` (a secret key) or holding ``vouch_plain``."""
    vouch_nonce = os.urandom(16)
    plain_vouch = vouch_plain if vouch_plain is not None else transient.public + server_key
    vouch = sodium.crypto_box(plain_vouch, b"VOUCH---" + vouch_nonce, server_transient,
                              vouch_signer if vouch_signer is not None else client.secret)
    box_plain = client.public + vouch_nonce + vouch + metadata.encode()
    short = nonce.to_bytes(8, "big")
    box = sodium.crypto_box(box_plain, b"CurveZMQINITIATE" + short, server_transient, transient.secret)
    return command_body("INITIATE", cookie + short + box)


async def curve_client(url: str, server_key: bytes, client: KeyPair, *, transient: KeyPair | None = None,
                       hello: bytes | None = None, make_initiate=None) -> CurveRun:
    """HELLO, WELCOME, INITIATE, then READY or a refusal.

    ``make_initiate(run) -> bytes`` builds the INITIATE body (default: an honest one);
    ``hello`` replaces our HELLO body (a replay).
    """
    run = CurveRun(transient=transient or KeyPair.generate())
    peer = await RawPeer.open(url)
    try:
        run.hello = hello if hello is not None else curve.encode_hello(run.transient, server_key, 1)
        await peer.send(encode_greeting(Greeting("CURVE", False)))
        await peer.send_command(run.hello)
        if await peer.read_greeting() is None:
            run.answer, run.closed = Answer("closed"), True
            return run
        first = await peer.answer()
        if first.name != "WELCOME":
            run.answer = first
            await _settle(peer, run)
            return run
        run.welcome = curve.decode_welcome(first.body, server_key, run.transient.secret)
        if make_initiate is None:
            run.initiate = initiate_body(run.welcome.cookie, 2, client=client, transient=run.transient,
                                         server_key=server_key, server_transient=run.welcome.server_transient)
        else:
            run.initiate = make_initiate(run)
        await peer.send_command(run.initiate)
        run.answer = await peer.answer()
        if run.answer.name == "READY":
            key = curve.shared_key(run.welcome.server_transient, run.transient.secret)
            run.ready_metadata = curve.decode_ready(run.answer.body, key)[1]
        else:
            await _settle(peer, run)
        return run
    finally:
        await peer.close()


async def _settle(peer: RawPeer, run: CurveRun) -> None:
    """After a refusal the server must close: read until it does (or the read deadline passes)."""
    answer = run.answer
    while answer is not None and answer.kind not in ("closed", "silent"):
        answer = await peer.answer()
    run.closed = answer is not None and answer.kind == "closed"


class RecordingBroker(Broker):
    """The reference broker, remembering every peer that completed a handshake."""

    def __init__(self) -> None:
        super().__init__()
        self.attached: list = []

    def attach(self, peer, now: float) -> None:
        self.attached.append(peer)
        super().attach(peer, now)
