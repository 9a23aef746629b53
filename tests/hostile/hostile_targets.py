"""Hostile targets for every protocol: tests/harness/hostile.py's behaviours, with per-protocol bytes.

A :class:`HostileTarget` accepts TCP connections on 127.0.0.1 and runs one behaviour on each:

    silent        accepts and never speaks (it reads and drops what the suite sends)
    drip          sends the protocol's valid first bytes one byte a second
    partial-greeting  (ZMTP) the greeting's first 11 octets, then nothing: it never completes
    endless       a valid opening, then an endless stream that never settles into an answer:
                  mm2 CONTINUED fragments of one MESSAGE, rsio onNextPart parts of one element,
                  mc0 NOOPs after a real CURVE handshake, MTL PINGs after a NULL handshake
    garbage       endless 0xff octets
    announce-max  the largest length the protocol allows, then a trickle of bytes:
                  mm2 LARGE_PAYLOAD 0xFFFFFFFF, rsio a varint of 2^63-1, ZMTP a long frame of 2^63-1
    announce-over one past it where the encoding can say so: rsio a 10-byte varint of 2^63,
                  ZMTP a long frame of 2^63
    reset-mid-frame  a valid opening, half a frame, then a TCP reset
    http          an HTTP/1.1 response, the connection left open
    foreign       another protocol's bytes: STMP to mm2 and mc0 clients, an mm2 handshake to rsio, MTL
                  and RSocket
    announce-short  (RSocket) a frame length shorter than a frame header

``bytes_sent`` counts what the target wrote, so a test can tell a flood really happened.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from conformance.protocols import adapter_for
from conformance.scenario.runner import CaseResult
from reference_impl.mc0 import testkeys
from reference_impl.micromessage2 import codec as mm2
from reference_impl.rsio import codec as rsio
from reference_impl.zmtp.codec import Frame as ZFrame, encode_frame
from reference_impl.zmtp.commands import Ping, Ready, Metadata, encode_command
from reference_impl.zmtp.connection import Connection, HandshakeComplete, Message, Phase
from reference_impl.zmtp.curve import CurveServerConfig
from reference_impl.zmtp.greeting import Greeting, encode_greeting
from suite_helpers import all_cases, run_case

HTTP_RESPONSE = (b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: 11\r\n"
                 b"Connection: keep-alive\r\n\r\nBad Request")
STMP_RESPONSE = bytes.fromhex("e8 0000 00 00000004") + b"\x01\x02\x03\x04"  # Response, raw, ID 0, Ok, 4 bytes
TRICKLE = b"\x01" * 1024
BLOCK = 65536

Script = Callable[["HostileTarget", asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class HostileTarget:
    def __init__(self, script: Script, name: str = "") -> None:
        self.script = script
        self.name = name
        self.bytes_sent = 0
        self.connections = 0
        self.url = ""
        self._tasks: set[asyncio.Task] = set()

    async def start(self) -> "HostileTarget":
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.url = f"tcp://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"
        return self

    async def close(self) -> None:
        self.server.close()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=5)

    async def write(self, writer: asyncio.StreamWriter, data: bytes) -> None:
        writer.write(data)
        self.bytes_sent += len(data)
        await writer.drain()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self._tasks.add(task)
        self.connections += 1
        try:
            await self.script(self, reader, writer)
        except (ConnectionError, OSError, asyncio.CancelledError):
            pass
        finally:
            writer.close()
            self._tasks.discard(task)


# -- building blocks -------------------------------------------------------------------------

async def _swallow(reader: asyncio.StreamReader) -> None:
    while await reader.read(BLOCK):
        pass


def _with_swallow(body: Callable[["HostileTarget", asyncio.StreamWriter], Awaitable[None]]) -> Script:
    """Run ``body`` while reading and dropping whatever the suite sends."""
    async def script(target: HostileTarget, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        drain = asyncio.ensure_future(_swallow(reader))
        try:
            await body(target, writer)
        finally:
            drain.cancel()
    return script


def silent() -> Script:
    async def body(target, writer):
        await asyncio.sleep(3600)
    return _with_swallow(body)


def drip(data: bytes, interval: float = 1.0) -> Script:
    async def body(target, writer):
        for byte in data:
            await target.write(writer, bytes([byte]))
            await asyncio.sleep(interval)
        await asyncio.sleep(3600)
    return _with_swallow(body)


def stall(data: bytes) -> Script:
    async def body(target, writer):
        await target.write(writer, data)
        await asyncio.sleep(3600)
    return _with_swallow(body)


def flood(opening: bytes, block: Callable[[], bytes]) -> Script:
    async def body(target, writer):
        await target.write(writer, opening)
        while True:
            await target.write(writer, block())
    return _with_swallow(body)


def announce(opening: bytes, header: bytes) -> Script:
    """The opening, a header announcing a huge length, then a trickle of the bytes it announced."""
    async def body(target, writer):
        await target.write(writer, opening + header)
        while True:
            await target.write(writer, TRICKLE)
            await asyncio.sleep(0.01)
    return _with_swallow(body)


def reset(data: bytes) -> Script:
    async def body(target, writer):
        await target.write(writer, data)
        await asyncio.sleep(0.05)
        writer.transport.abort()
    return _with_swallow(body)


def answer(data: bytes) -> Script:
    """Send ``data`` (another protocol's answer) and keep the connection open."""
    return stall(data)


# -- micromessage2 -------------------------------------------------------------------------------

MM2_HELLO = mm2.encode_handshake(mm2.Handshake(1, 0, "hostile", "", ""))


def _mm2_fragment() -> bytes:
    return mm2.encode_frame(mm2.MessageFrame(1, "test/echo", "", b"\x00" * BLOCK, continued=True))


_MM2_FRAGMENT = _mm2_fragment()
_MM2_MESSAGE_HEAD = bytes.fromhex("08 0001 09") + b"test/echo" + bytes.fromhex("0000")  # LARGE, seq 1, no props

MICROMESSAGE2: dict[str, Script] = {
    "silent": silent(),
    "drip": drip(MM2_HELLO),
    "endless": flood(MM2_HELLO, lambda: _MM2_FRAGMENT),
    "garbage": flood(b"", lambda: b"\xff" * BLOCK),
    "announce-max": announce(MM2_HELLO, _MM2_MESSAGE_HEAD + b"\xff\xff\xff\xff"),
    "reset-mid-frame": reset(MM2_HELLO + _MM2_MESSAGE_HEAD + bytes.fromhex("00000010 0102")),
    "http": answer(HTTP_RESPONSE),
    "foreign": answer(STMP_RESPONSE),
}

# -- rsio ------------------------------------------------------------------------------------------

RSIO_HELLO = rsio.encode_message(rsio.ServerHello(0, ()))
RSIO_SUBSCRIBED = rsio.encode_message(rsio.Subscribed(1, 0))
_RSIO_PART = rsio.encode_message(rsio.OnNextPart(1, 0, b"\x00" * BLOCK))
VARINT_LONG_MAX = bytes.fromhex("ff ff ff ff ff ff ff ff 7f")     # 2^63-1: 9 bytes, the largest value allowed
VARINT_10_BYTES = bytes.fromhex("80 80 80 80 80 80 80 80 80 01")  # 2^63: 10 bytes, one past it

RSIO: dict[str, Script] = {
    "silent": silent(),
    "drip": drip(RSIO_HELLO + RSIO_SUBSCRIBED),
    "endless": flood(RSIO_HELLO + RSIO_SUBSCRIBED, lambda: _RSIO_PART),
    "garbage": flood(b"", lambda: b"\xff" * BLOCK),
    # onNext, subscriber 1 (variable size), element of 2^63-1 bytes
    "announce-max": announce(RSIO_HELLO + RSIO_SUBSCRIBED, b"\x08\x01" + VARINT_LONG_MAX),
    "announce-over": announce(RSIO_HELLO + RSIO_SUBSCRIBED, b"\x08\x01" + VARINT_10_BYTES),
    "reset-mid-frame": reset(RSIO_HELLO + RSIO_SUBSCRIBED + b"\x08\x01\x10\x00\x01"),
    "http": answer(HTTP_RESPONSE),
    "foreign": answer(MM2_HELLO),
}

# -- RSocket -------------------------------------------------------------------------------------
# An RSocket server speaks only when spoken to, so each script writes its bytes as soon as the suite
# connects; the cases expect a PAYLOAD on stream 1.  Frames laid out by hand (Protocol.md): 24-bit
# length, 31-bit stream id, type << 10 | flags.

RSOCKET_PAYLOAD = bytes.fromhex("00000b 00000001 2860") + b"hello"     # PAYLOAD C|N, stream 1
# PAYLOAD F|N (0x28a0) on stream 1 carrying BLOCK bytes: one fragment of a message that never ends
_RSOCKET_FRAGMENT = (6 + BLOCK).to_bytes(3, "big") + bytes.fromhex("00000001 28a0") + b"\x00" * BLOCK

RSOCKET: dict[str, Script] = {
    "silent": silent(),
    "drip": drip(RSOCKET_PAYLOAD),
    "endless": flood(b"", lambda: _RSOCKET_FRAGMENT),
    "garbage": flood(b"", lambda: b"\xff" * BLOCK),
    # the largest frame length there is, 16,777,215, then a trickle: legal, so the suite waits
    "announce-max": announce(b"", b"\xff\xff\xff"),
    # a frame length of 3, shorter than a frame header: refused from the length alone
    "announce-short": announce(b"", b"\x00\x00\x03"),
    "reset-mid-frame": reset(RSOCKET_PAYLOAD[:8]),
    "http": answer(HTTP_RESPONSE),
    "foreign": answer(MM2_HELLO),
}

# -- ZMTP (mc0: a CURVE server; MTL: a NULL server) --------------------------------------------

LONG_COMMAND = 0x06  # LONG | COMMAND
SIZE_MAX = (2**63 - 1).to_bytes(8, "big")
SIZE_OVER = (2**63).to_bytes(8, "big")


def zmtp_greeting(mechanism: str) -> bytes:
    return encode_greeting(Greeting(mechanism, as_server=True))


def _null_ready() -> bytes:
    return encode_frame(ZFrame(encode_command(Ready(Metadata.of([("Socket-Type", b"ROUTER")]))), command=True))


def curve_then_noops() -> Script:
    """A real CURVE server (the test key) that completes the handshake, then sends NOOP after NOOP."""
    async def script(target: HostileTarget, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        loop = asyncio.get_running_loop()
        connection = Connection("ROUTER", CurveServerConfig(testkeys.SERVER), handshake_timeout=None)
        await target.write(writer, connection.start(loop.time()).data)
        while True:
            data = await reader.read(BLOCK)
            if not data:
                return
            out = connection.receive_data(data, loop.time())
            if out.data:
                await target.write(writer, out.data)
            if any(isinstance(e, HandshakeComplete) for e in out.events):
                break
            if connection.phase is Phase.CLOSED:
                return
        drain = asyncio.ensure_future(_swallow(reader))
        try:
            # ~1 MB/s of NOOPs: each costs the suite a decryption, and encrypting them costs this
            # target, in the same process, as much: faster would only measure who gets the CPU
            while True:
                block = b"".join(connection.send(Message([b"", b"NOOP"])).data for _ in range(64))
                await target.write(writer, block)
                await asyncio.sleep(0.005)
        finally:
            drain.cancel()
    return script


def _zmtp(mechanism: str, endless: Script, foreign: bytes) -> dict[str, Script]:
    greeting = zmtp_greeting(mechanism)
    return {
        "silent": silent(),
        "drip": drip(greeting),
        "partial-greeting": stall(greeting[:11]),
        "endless": endless,
        "garbage": flood(b"", lambda: b"\xff" * BLOCK),
        "announce-max": announce(greeting, bytes([LONG_COMMAND]) + SIZE_MAX),
        "announce-over": announce(greeting, bytes([LONG_COMMAND]) + SIZE_OVER),
        "reset-mid-frame": reset(greeting + bytes([LONG_COMMAND]) + (4096).to_bytes(8, "big") + b"\x05READY"),
        "http": answer(HTTP_RESPONSE),
        "foreign": answer(foreign),
    }


_PING = encode_frame(ZFrame(encode_command(Ping(0, b"")), command=True))

MC0 = _zmtp("CURVE", curve_then_noops(), STMP_RESPONSE)
MTL = _zmtp("NULL", flood(zmtp_greeting("NULL") + _null_ready(), lambda: _PING * 4096), MM2_HELLO)

SCRIPTS: dict[str, dict[str, Script]] = {"micromessage2": MICROMESSAGE2, "rsio": RSIO, "mc0": MC0, "mtl": MTL,
                                         "rsocket": RSOCKET}


async def start(protocol: str, behaviour: str) -> HostileTarget:
    return await HostileTarget(SCRIPTS[protocol][behaviour], f"{protocol}/{behaviour}").start()


# -- running cases against them ----------------------------------------------------------------

@dataclass
class Outcome:
    case_id: str
    result: CaseResult
    elapsed: float
    bytes_sent: int


@functools.cache
def cases_of(protocol: str) -> dict:
    return all_cases(protocol)


async def run_against(protocol: str, behaviour: str, case_ids: list[str], deadline_ms: int) -> list[Outcome]:
    """Each case against its own hostile target, all at once; every target closed afterwards."""
    cases = cases_of(protocol)

    async def one(case_id: str) -> Outcome:
        target = await start(protocol, behaviour)
        try:
            started = time.monotonic()
            result = await run_case(dataclasses.replace(cases[case_id], timeout_ms=deadline_ms), target.url)
            return Outcome(case_id, result, time.monotonic() - started, target.bytes_sent)
        finally:
            await target.close()

    return list(await asyncio.gather(*(one(case_id) for case_id in case_ids)))


async def run_behaviours(protocol: str, behaviours: tuple[str, ...], case_ids: list[str],
                         deadline_ms: int) -> dict[str, list[Outcome]]:
    """Several behaviours at once (those that can only end at the deadline share it)."""
    runs = await asyncio.gather(*(run_against(protocol, b, case_ids, deadline_ms) for b in behaviours))
    return dict(zip(behaviours, runs))


async def run_against_reference(protocol: str, case_id: str) -> CaseResult:
    """The same harness, right after: a case against the reference implementation."""
    adapter = adapter_for(protocol)
    server = await adapter.start_reference("tcp", {**adapter.params, **adapter.ref_params})
    try:
        return await run_case(cases_of(protocol)[case_id], server.url)
    finally:
        await server.close()


def check(outcomes: list[Outcome], grade, message: str, deadline_ms: int, slack_s: float) -> None:
    """Every case got ``grade``, a message matching ``message`` (a regex), within its deadline."""
    for o in outcomes:
        r = o.result
        assert r.grade is grade, (o.case_id, r.grade, r.message)
        assert re.search(message, r.message), (o.case_id, r.message)
        assert o.elapsed < deadline_ms / 1000 + slack_s, (o.case_id, o.elapsed, r.message)
        # the wire log is bounded whatever the target sent
        assert len(r.log.entries) <= 1000, (o.case_id, len(r.log.entries))


def grade_behaviours(protocol: str, behaviours: tuple[str, ...], case_ids: list[str], expected: dict[str, str], *,
                     deadline_ms: int, slack_s: float, endless_min_bytes: int,
                     refused_at_once: Callable[[str], bool]) -> None:
    """Every behaviour FAILS each case within the deadline, saying why; a reference case then passes."""
    from conformance.grading import Grade

    async def run():
        outcomes = await run_behaviours(protocol, behaviours, case_ids, deadline_ms)
        return outcomes, await run_against_reference(protocol, case_ids[0])

    runs, after = asyncio.run(run())
    assert after.grade is Grade.PASSED, after.message  # the harness goes on to the next case unharmed
    for behaviour, outcomes in runs.items():
        check(outcomes, Grade.FAILED, expected[behaviour], deadline_ms, slack_s)
        if behaviour == "endless":
            # the target really flooded, and the suite kept reading it
            assert all(o.bytes_sent > endless_min_bytes for o in outcomes), [o.bytes_sent for o in outcomes]
        if refused_at_once(behaviour):
            # refused from the length field alone: at once, without waiting for (or buffering) the payload
            assert all(o.elapsed < 2 and o.bytes_sent < 1024 * 1024 for o in outcomes)


def gone_target_grade(protocol: str, case_id: str) -> CaseResult:
    """A target whose port was just closed: the case cannot run at all."""
    from suite_helpers import run_case

    async def run():
        server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        url = f"tcp://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        server.close()
        await server.wait_closed()
        return await run_case(cases_of(protocol)[case_id], url)

    return asyncio.run(run())
