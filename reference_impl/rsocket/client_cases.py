"""The client test cases the reference client runs in the interop matrix (`conformance interop rsocket`),
against any server that runs the test service (docs/profiles/rsocket.md, "Test service").

The profile's client test cases (request-response, stream, fnf, metadata-push) are run exactly as
the profile says, by :func:`reference_impl.rsocket.client.run_client_testcase`. Two names the
profile reserves and no suite case uses yet get the interop matrix's own reading, which the
third-party peers (thirdparty/rsocket_*_peer.*) share:

channel     ``a``, an empty payload, ``c``, ``d`` sent as the server's credit allows come back in
            order (an empty PAYLOAD still carries N: "0 length data can be considered a valid
            PAYLOAD", Protocol.md, PAYLOAD Frame)
fragmented  ``echo:`` + 40,000 bytes with 3,000 bytes of metadata, sent in 1,024-byte fragments,
            comes back whole, metadata included

fnf and metadata-push end once the frame is written; :data:`SERVER_KEPT` says what a server of the
test service then keeps, which the interop matrix reads back itself (``last-fnf``,
``last-metadata-push``).

    code = asyncio.run(run_case("stream", "tcp://127.0.0.1:PORT"))   # 0 passed, 1 failed, 127 unknown
"""

from __future__ import annotations

import asyncio

from reference_impl.rsocket.client import CLIENT_TESTCASES, RSocketClient, StreamError, connect, run_client_testcase

UNSUPPORTED = 127
FRAGMENT_SIZE = 1024
FRAGMENTED_SIZE = 40_000
CONNECT_TIMEOUT = 10.0
CASE_TIMEOUT = 20.0
#: case -> (the request-response route that reads the value back, what the server must have kept)
SERVER_KEPT = {"fnf": (b"last-fnf", b"client"), "metadata-push": (b"last-metadata-push", b"client-metadata")}


class CaseFailed(Exception):
    pass


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise CaseFailed(message)


async def channel(client: RSocketClient) -> None:
    sent = [b"a", b"", b"c", b"d"]
    items = await client.request_channel(sent, batch=2)
    _check(items == sent, f"the channel echoed {items} for {sent}")


async def fragmented(client: RSocketClient) -> None:
    body, metadata = b"x" * FRAGMENTED_SIZE, b"m" * 3000
    answer = await client.request_response(b"echo:" + body, metadata)
    _check(answer.data == body, f"a {FRAGMENTED_SIZE}-byte echo came back as {len(answer.data)} bytes")
    _check(answer.metadata == metadata, f"the fragmented echo's metadata came back as "
                                        f"{len(answer.metadata or b'')} bytes, not {len(metadata)}")


EXTENDED = {"channel": channel, "fragmented": fragmented}
#: `resume` is left out: it needs a server that drops the transport mid-stream (the suite's
#: rsocket/handshake/client-resume), and against a server that never does it is `stream` again
CASES = (*(name for name in CLIENT_TESTCASES if name != "resume"), *EXTENDED)


async def run_case(name: str, url: str, log=print) -> int:
    """Runs case NAME against the server at URL; the image contract's exit code."""
    if name in CLIENT_TESTCASES:
        code = await run_client_testcase(url, name)
        log(f"reference rsocket client: {name}: {'OK' if code == 0 else f'FAILED (exit {code})'}")
        return code
    case = EXTENDED.get(name)
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
    except Exception as exc:  # the case's verdict, whatever went wrong: CaseFailed, StreamError, a lost connection
        log(f"reference rsocket client: {name}: FAILED: {type(exc).__name__}: {exc}")
        return 1
    log(f"reference rsocket client: {name}: OK")
    return 0


async def server_kept(name: str, url: str) -> str | None:
    """After case NAME ran against the server at URL: None when the server kept what the case sent
    (or the case keeps nothing), else what is wrong."""
    if name not in SERVER_KEPT:
        return None
    route, expected = SERVER_KEPT[name]
    try:
        client = await asyncio.wait_for(connect(url), CONNECT_TIMEOUT)
        try:
            seen = b""
            for _ in range(10):  # nothing acknowledges fnf or METADATA_PUSH: give it a moment
                seen = (await asyncio.wait_for(client.request_response(route), CASE_TIMEOUT)).data
                if seen == expected:
                    return None
                await asyncio.sleep(0.1)
        finally:
            await client.close()
    except (StreamError, Exception) as exc:
        return f"reading {route.decode()} back failed: {type(exc).__name__}: {exc}"
    return f"the server did not keep what the client sent: {route.decode()} answered {seen!r}, not {expected!r}"
