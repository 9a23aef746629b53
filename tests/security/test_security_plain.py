"""ZMTP PLAIN (RFC 24) refusals by our ZMTP server (a ROUTER with an authenticate callback).

A wrong password or an unknown user gets ERROR "400" and a close; a client that skips the
handshake (data before HELLO, INITIATE without HELLO, data before the greeting) is closed.
None of them reaches READY: the ROUTER's monitor sees no completed handshake and its inbox
no message.  PLAIN has no nonces, so there is nothing to replay here (SCRAM is MTL's).
"""

from __future__ import annotations

import asyncio

import pytest

from reference_impl.zmtp import plain
from reference_impl.zmtp.codec import Frame, encode_frame
from reference_impl.zmtp.commands import Metadata
from reference_impl.zmtp.connection import ConnectionClosed, HandshakeComplete
from reference_impl.zmtp.greeting import Greeting, encode_greeting
from reference_impl.zmtp.plain import PlainServerConfig
from reference_impl.zmtp.sockets import bind_router
from zmtp_probe import RawPeer

USERS = {b"alice": b"correct horse battery"}
DEALER = Metadata.of([("Socket-Type", b"DEALER"), ("Identity", b"")])
GREETING = encode_greeting(Greeting("PLAIN", False))


def _authenticate(user: bytes, password: bytes) -> bool:
    return USERS.get(user) == password


async def _against_router(steps):
    """Run ``steps(peer)`` against a PLAIN ROUTER; return (its result, the router's monitor events, its inbox size)."""
    router = await bind_router("127.0.0.1", 0, mechanism=PlainServerConfig(_authenticate), timeout=3.0)
    try:
        peer = await RawPeer.open(f"tcp://127.0.0.1:{router.port}")
        try:
            result = await steps(peer)
        finally:
            await peer.close()
        await asyncio.sleep(0.1)
        events = []
        while not router.monitor.empty():
            events.append(router.monitor.get_nowait()[1])
        return result, events, router._inbox.qsize()
    finally:
        await router.close()


async def _login(peer: RawPeer, user: bytes, password: bytes):
    await peer.send(GREETING)
    await peer.send_command(plain.encode_hello(user, password))
    assert (await peer.read_greeting()).mechanism == "PLAIN"
    first = await peer.answer()
    if first.name != "WELCOME":
        return first, await peer.answer()
    await peer.send_command(plain.encode_initiate(DEALER))
    ready = await peer.answer()
    await peer.send(encode_frame(Frame(b"after login")))
    return first, ready


def test_the_right_password_is_served() -> None:
    (first, ready), events, inbox = asyncio.run(_against_router(lambda p: _login(p, b"alice", b"correct horse battery")))
    assert first.name == "WELCOME" and ready.name == "READY", (first, ready)
    assert any(isinstance(e, HandshakeComplete) for e in events) and inbox == 1


@pytest.mark.parametrize("user,password", [(b"alice", b"wrong password"), (b"mallory", b"correct horse battery"),
                                           (b"alice", b"")])
def test_wrong_credentials_get_error_400_and_a_close(user: bytes, password: bytes) -> None:
    (error, after), events, inbox = asyncio.run(_against_router(lambda p: _login(p, user, password)))
    assert error.name == "ERROR" and error.error_reason == plain.AUTH_FAILED_REASON, error
    assert after.kind == "closed", after
    assert not any(isinstance(e, HandshakeComplete) for e in events), events
    assert any(isinstance(e, ConnectionClosed) and e.code == "authentication-failed" for e in events), events
    assert inbox == 0


async def _data_before_hello(peer: RawPeer):
    await peer.send(GREETING)
    await peer.read_greeting()
    await peer.send(encode_frame(Frame(b"", more=True)) + encode_frame(Frame(b"skipped the handshake")))
    return await peer.answer()


async def _initiate_without_hello(peer: RawPeer):
    await peer.send(GREETING)
    await peer.read_greeting()
    await peer.send_command(plain.encode_initiate(DEALER))
    return await peer.answer()


async def _data_before_greeting(peer: RawPeer):
    await peer.send(encode_frame(Frame(b"no greeting, no handshake")))
    return await peer.until_closed()


@pytest.mark.parametrize("skip", [_data_before_hello, _initiate_without_hello, _data_before_greeting],
                         ids=["data-before-hello", "initiate-without-hello", "data-before-greeting"])
def test_a_client_that_skips_the_handshake_is_closed(skip) -> None:
    answer, events, inbox = asyncio.run(_against_router(skip))
    assert answer.kind == "closed", answer
    assert not any(isinstance(e, HandshakeComplete) for e in events), events
    assert inbox == 0  # the skipped-in data never reached the application
