"""The client-role cases of the RSocket profile, run by the reference client against a server
that runs the test service (docs/profiles/rsocket.md, "Test service").

Each case does what its name says and checks the test service's answers; the third-party peers
(thirdparty/rsocket_*_peer.*) run the same cases through their own libraries, so any client
can be paired with any server:

    code = asyncio.run(run_case("stream", "tcp://127.0.0.1:PORT"))   # 0 passed, 1 failed, 127 unknown

request-response  ``echo:hello`` with metadata ``meta`` comes back as ``hello``/``meta``;
                  ``error:boom`` fails with an ERROR whose data holds ``boom``
stream            ``range:10`` asked for in batches of 3 gives ``0`` .. ``9``
channel           ``a``, an empty payload, ``c``, ``d`` sent as the server's credit allows come back
                  in order (an empty PAYLOAD still carries N: "0 length data can be considered a
                  valid PAYLOAD", Protocol.md, PAYLOAD Frame)
fnf               ``fnf:<token>``, then ``last-fnf`` answers ``<token>``
metadata-push     METADATA_PUSH ``<token>``, then ``last-metadata-push`` answers ``<token>``
fragmented        a 40,000-byte echo with 3,000 bytes of metadata, sent in 1,024-byte fragments
"""

from __future__ import annotations

import asyncio
import os
import time

from reference_impl.rsocket.client import RSocketClient, StreamError, connect

UNSUPPORTED = 127
FRAGMENT_SIZE = 1024
FRAGMENTED_SIZE = 40_000
CONNECT_TIMEOUT = 10.0
CASE_TIMEOUT = 20.0


class CaseFailed(Exception):
    pass


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise CaseFailed(message)


async def _read_back(client: RSocketClient, route: bytes, token: bytes) -> None:
    """Fire-and-forget and METADATA_PUSH have no answer: read the kept value until it shows."""
    seen = b""
    for _ in range(20):
        seen = (await client.request_response(route)).data
        if seen == token:
            return
        await asyncio.sleep(0.1)
    raise CaseFailed(f"{route.decode()} answered {seen!r}, not {token!r}")


def _token(kind: str) -> bytes:
    return f"{kind}-{os.getpid()}-{time.monotonic_ns()}".encode()


async def request_response(client: RSocketClient) -> None:
    answer = await client.request_response(b"echo:hello", b"meta")
    _check(answer.data == b"hello", f"echo:hello answered {answer.data!r}")
    _check(answer.metadata == b"meta", f"the echo's metadata came back as {answer.metadata!r}")
    try:
        answer = await client.request_response(b"error:boom")
    except StreamError as exc:
        _check(b"boom" in exc.data, f"error:boom failed with {exc}")
    else:
        raise CaseFailed(f"error:boom was answered with a PAYLOAD {answer.data!r}, not an ERROR")


async def stream(client: RSocketClient) -> None:
    items = await client.request_stream(b"range:10", batch=3)
    _check(items == [str(i).encode() for i in range(10)], f"range:10 in batches of 3 gave {items}")


async def channel(client: RSocketClient) -> None:
    sent = [b"a", b"", b"c", b"d"]
    items = await client.request_channel(sent, batch=2)
    _check(items == sent, f"the channel echoed {items} for {sent}")


async def fnf(client: RSocketClient) -> None:
    token = _token("token")
    await client.fire_and_forget(b"fnf:" + token)
    await _read_back(client, b"last-fnf", token)


async def metadata_push(client: RSocketClient) -> None:
    token = _token("push")
    await client.metadata_push(token)
    await _read_back(client, b"last-metadata-push", token)


async def fragmented(client: RSocketClient) -> None:
    body, metadata = b"x" * FRAGMENTED_SIZE, b"m" * 3000
    answer = await client.request_response(b"echo:" + body, metadata)
    _check(answer.data == body, f"a {FRAGMENTED_SIZE}-byte echo came back as {len(answer.data)} bytes")
    _check(answer.metadata == metadata, "the fragmented echo's metadata differs")


CASES = {"request-response": request_response, "stream": stream, "channel": channel, "fnf": fnf,
         "metadata-push": metadata_push, "fragmented": fragmented}


async def run_case(name: str, url: str, log=print) -> int:
    """Runs case NAME against the server at URL; the image contract's exit code."""
    case = CASES.get(name)
    if case is None:
        log(f"reference rsocket client: unsupported test case {name!r}")
        return UNSUPPORTED
    options = {"fragment_size": FRAGMENT_SIZE} if name == "fragmented" else {}
    try:
        client = await asyncio.wait_for(connect(url, **options), CONNECT_TIMEOUT)
        try:
            await asyncio.wait_for(case(client), CASE_TIMEOUT)
        finally:
            await client.close()
    except (CaseFailed, StreamError, ConnectionError, OSError, TimeoutError, Exception) as exc:
        log(f"reference rsocket client: {name}: FAILED: {type(exc).__name__}: {exc}")
        return 1
    log(f"reference rsocket client: {name}: OK")
    return 0
