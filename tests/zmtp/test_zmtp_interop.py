"""Our asyncio DEALER/REQ/ROUTER against libzmq (pyzmq), both directions, NULL, PLAIN and CURVE.

libzmq is the independent third party: a message crossing intact, with
multipart, empty, >255-octet and >1 MiB frames, means both sides framed,
boxed and routed it the same way.  Every wait is bounded (asyncio timeouts,
socket timeouts); everything binds 127.0.0.1 port 0 and is closed by the
handle that opened it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager

import pytest
import zmq
import zmq.asyncio
from zmq.auth.thread import ThreadAuthenticator
from zmq.utils import z85
from zmq.utils.monitor import recv_monitor_message

from reference_impl.zmtp.connection import ConnectionClosed
from reference_impl.zmtp.curve import CurveClientConfig, CurveServerConfig, KeyPair
from reference_impl.zmtp.mechanism import MechanismConfig
from reference_impl.zmtp.null import NullConfig
from reference_impl.zmtp.plain import PlainClientConfig, PlainServerConfig
from reference_impl.zmtp.sockets import HandshakeFailed, bind_router, connect_dealer, connect_req

MECHANISMS = ["NULL", "PLAIN", "CURVE"]
SERVER_KEYS = KeyPair.generate()
CLIENT_KEYS = KeyPair.generate()
BIG = bytes(range(256)) * 4097 + b"tail"  # 1 MiB + 260 octets
MESSAGE = [b"first", b"", b"m" * 300, BIG, b"last"]
TIMEOUT = 5.0


def our_client(mechanism: str, server_key: bytes = SERVER_KEYS.public, password: bytes = b"wonderland") -> MechanismConfig:
    if mechanism == "PLAIN":
        return PlainClientConfig(b"alice", password)
    if mechanism == "CURVE":
        return CurveClientConfig(server_key, CLIENT_KEYS)
    return NullConfig()


def our_server(mechanism: str, allow: bool = True) -> MechanismConfig:
    if mechanism == "PLAIN":
        return PlainServerConfig(lambda user, password: allow and (user, password) == (b"alice", b"wonderland"))
    if mechanism == "CURVE":
        return CurveServerConfig(SERVER_KEYS, lambda key: allow and key == CLIENT_KEYS.public)
    return NullConfig()


def libzmq_server(sock: zmq.Socket, mechanism: str) -> None:
    if mechanism == "PLAIN":
        sock.plain_server = True
    elif mechanism == "CURVE":
        sock.curve_server = True
        sock.curve_secretkey = z85.encode(SERVER_KEYS.secret)


def libzmq_client(sock: zmq.Socket, mechanism: str, server_key: bytes = SERVER_KEYS.public,
                  password: bytes = b"wonderland") -> None:
    if mechanism == "PLAIN":
        sock.plain_username, sock.plain_password = b"alice", password
    elif mechanism == "CURVE":
        sock.curve_serverkey = z85.encode(server_key)
        sock.curve_publickey = z85.encode(CLIENT_KEYS.public)
        sock.curve_secretkey = z85.encode(CLIENT_KEYS.secret)


@contextmanager
def contexts() -> Iterator[zmq.asyncio.Context]:
    """An asyncio context whose ZAP handler (libzmq 4.3 wants one for PLAIN servers) knows alice, any CURVE key."""
    sync = zmq.Context()
    auth = ThreadAuthenticator(sync)
    auth.start()
    auth.configure_plain(domain="*", passwords={"alice": "wonderland"})
    auth.configure_curve(domain="*", location=zmq.auth.CURVE_ALLOW_ANY)
    ctx = zmq.asyncio.Context.shadow(sync.underlying)
    try:
        yield ctx
    finally:
        auth.stop()
        sync.destroy(linger=0)  # also closes sockets a failed scenario left open, so this cannot hang


def run(scenario: Callable[[zmq.asyncio.Context], Awaitable[None]]) -> None:
    async def bounded() -> None:
        with contexts() as ctx:
            async with asyncio.timeout(30):
                await scenario(ctx)

    asyncio.run(bounded())


def zsocket(ctx: zmq.asyncio.Context, kind: int) -> zmq.asyncio.Socket:
    sock = ctx.socket(kind)
    sock.linger = 0
    return sock


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_our_dealer_to_libzmq_router(mechanism: str) -> None:
    async def scenario(ctx: zmq.asyncio.Context) -> None:
        router = zsocket(ctx, zmq.ROUTER)
        libzmq_server(router, mechanism)
        port = router.bind_to_random_port("tcp://127.0.0.1")
        try:
            dealer = await connect_dealer(f"tcp://127.0.0.1:{port}", mechanism=our_client(mechanism), identity=b"ours")
            await dealer.send(MESSAGE)
            routing_id, *frames = await asyncio.wait_for(router.recv_multipart(), TIMEOUT)
            assert routing_id == b"ours" and frames == MESSAGE
            await router.send_multipart([routing_id, *reversed(MESSAGE)])
            assert await dealer.recv() == list(reversed(MESSAGE))
            await dealer.close()
        finally:
            router.close()

    run(scenario)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_our_req_to_libzmq_router(mechanism: str) -> None:
    async def scenario(ctx: zmq.asyncio.Context) -> None:
        router = zsocket(ctx, zmq.ROUTER)
        libzmq_server(router, mechanism)
        port = router.bind_to_random_port("tcp://127.0.0.1")
        try:
            req = await connect_req(f"tcp://127.0.0.1:{port}", mechanism=our_client(mechanism))
            for round_trip in range(2):
                await req.send([b"ask", BIG])
                routing_id, delimiter, *frames = await asyncio.wait_for(router.recv_multipart(), TIMEOUT)
                assert delimiter == b"" and frames == [b"ask", BIG]
                await router.send_multipart([routing_id, b"", b"answer", bytes([round_trip])])
                assert await req.recv() == [b"answer", bytes([round_trip])]
            await req.close()
        finally:
            router.close()

    run(scenario)


@pytest.mark.parametrize("kind", [zmq.DEALER, zmq.REQ])
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_libzmq_client_to_our_router(mechanism: str, kind: int) -> None:
    async def scenario(ctx: zmq.asyncio.Context) -> None:
        router = await bind_router(mechanism=our_server(mechanism), timeout=TIMEOUT)
        client = zsocket(ctx, kind)
        client.routing_id = b"theirs"
        libzmq_client(client, mechanism)
        client.connect(f"tcp://127.0.0.1:{router.port}")
        try:
            await client.send_multipart(MESSAGE)
            routing_id, *frames = await router.recv()
            envelope = [b""] if kind == zmq.REQ else []
            assert routing_id == b"theirs" and frames == envelope + MESSAGE
            assert await router.send([routing_id, *envelope, b"reply", BIG])
            assert await asyncio.wait_for(client.recv_multipart(), TIMEOUT) == [b"reply", BIG]
        finally:
            client.close()
            await router.close()

    run(scenario)


def test_libzmq_routing_ids_for_anonymous_peers() -> None:
    async def scenario(ctx: zmq.asyncio.Context) -> None:
        router = await bind_router(timeout=TIMEOUT)
        dealers = [zsocket(ctx, zmq.DEALER) for _ in range(2)]
        try:
            for dealer in dealers:
                dealer.connect(f"tcp://127.0.0.1:{router.port}")
                await dealer.send(b"hi")
            ids = {(await router.recv())[0] for _ in dealers}
            assert len(ids) == 2 and all(len(i) == 5 and i[0] == 0 for i in ids)
            for i in ids:
                assert await router.send([i, i])
            assert {await asyncio.wait_for(d.recv(), TIMEOUT) for d in dealers} == ids
        finally:
            for dealer in dealers:
                dealer.close()
            await router.close()

    run(scenario)


def test_curve_wrong_server_key_fails_cleanly_from_our_side() -> None:
    async def scenario(ctx: zmq.asyncio.Context) -> None:
        router = zsocket(ctx, zmq.ROUTER)
        libzmq_server(router, "CURVE")
        port = router.bind_to_random_port("tcp://127.0.0.1")
        try:
            with pytest.raises(HandshakeFailed) as info:
                await connect_dealer(f"tcp://127.0.0.1:{port}", timeout=TIMEOUT,
                                     mechanism=our_client("CURVE", server_key=KeyPair.generate().public))
            assert info.value.closed.code == "peer-closed"  # libzmq drops a HELLO it cannot open
        finally:
            router.close()

    run(scenario)


def test_curve_wrong_server_key_fails_cleanly_from_libzmq_side() -> None:
    async def scenario(ctx: zmq.asyncio.Context) -> None:
        router = await bind_router(mechanism=our_server("CURVE"), timeout=TIMEOUT)
        dealer = zsocket(ctx, zmq.DEALER)
        libzmq_client(dealer, "CURVE", server_key=KeyPair.generate().public)
        dealer.connect(f"tcp://127.0.0.1:{router.port}")
        try:
            await dealer.send(b"let me in")
            _, event = await asyncio.wait_for(router.monitor.get(), TIMEOUT)
            assert event == ConnectionClosed("bad-box", "the HELLO signature box does not open")
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(router.recv(), 0.3)
        finally:
            dealer.close()
            await router.close()

    run(scenario)


@pytest.mark.parametrize("mechanism, expected", [
    # libzmq 4.3.5's PLAIN client looks for its own broken ERROR name (plain.json tcId 7),
    # so our well-formed ERROR reaches it as an unexpected command: still a refusal.
    ("PLAIN", (zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL, zmq.PROTOCOL_ERROR_ZMTP_UNEXPECTED_COMMAND)),
    ("CURVE", (zmq.EVENT_HANDSHAKE_FAILED_AUTH, 400)),
])
def test_our_refusal_reaches_libzmq(mechanism: str, expected: tuple[int, int]) -> None:
    async def scenario(ctx: zmq.asyncio.Context) -> None:
        router = await bind_router(mechanism=our_server(mechanism, allow=False), timeout=TIMEOUT)
        dealer = zsocket(ctx, zmq.DEALER)
        libzmq_client(dealer, mechanism)
        monitor = dealer.get_monitor_socket(zmq.EVENT_HANDSHAKE_FAILED_AUTH | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
                                            | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL)
        dealer.connect(f"tcp://127.0.0.1:{router.port}")
        try:
            event = await asyncio.wait_for(recv_monitor_message(monitor), TIMEOUT)
            assert (event["event"], event["value"]) == expected
            _, closed = await asyncio.wait_for(router.monitor.get(), TIMEOUT)
            assert closed.code in {"authentication-failed", "unauthorized"}
        finally:
            dealer.disable_monitor()
            monitor.close()
            dealer.close()
            await router.close()

    run(scenario)


def test_plain_wrong_password_against_libzmq_fails_cleanly() -> None:
    async def scenario(ctx: zmq.asyncio.Context) -> None:
        router = zsocket(ctx, zmq.ROUTER)
        libzmq_server(router, "PLAIN")
        port = router.bind_to_random_port("tcp://127.0.0.1")
        try:
            with pytest.raises(HandshakeFailed) as info:
                await connect_dealer(f"tcp://127.0.0.1:{port}", timeout=TIMEOUT,
                                     mechanism=our_client("PLAIN", password=b"nope"))
            # libzmq 4.3.5 sends a malformed ERROR (plain.json tcId 7).
            assert info.value.closed.code == "bad-command-name"
        finally:
            router.close()

    run(scenario)


def test_we_answer_libzmq_heartbeats() -> None:
    """A libzmq DEALER with a 150 ms heartbeat timeout stays connected only if our ROUTER answers its PINGs."""
    async def scenario(ctx: zmq.asyncio.Context) -> None:
        router = await bind_router(timeout=TIMEOUT, poll_interval=0.05)
        dealer = zsocket(ctx, zmq.DEALER)
        dealer.heartbeat_ivl, dealer.heartbeat_timeout = 50, 150
        monitor = dealer.get_monitor_socket(zmq.EVENT_DISCONNECTED | zmq.EVENT_HANDSHAKE_SUCCEEDED)
        dealer.connect(f"tcp://127.0.0.1:{router.port}")
        try:
            event = await asyncio.wait_for(recv_monitor_message(monitor), TIMEOUT)
            assert event["event"] == zmq.EVENT_HANDSHAKE_SUCCEEDED
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(recv_monitor_message(monitor), 0.6)
        finally:
            dealer.disable_monitor()
            monitor.close()
            dealer.close()
            await router.close()

    run(scenario)


def test_libzmq_answers_our_heartbeats() -> None:
    """Our DEALER pings every 50 ms and gives up after 150 ms of silence: libzmq's PONGs keep it open."""
    async def scenario(ctx: zmq.asyncio.Context) -> None:
        router = zsocket(ctx, zmq.ROUTER)
        port = router.bind_to_random_port("tcp://127.0.0.1")
        try:
            dealer = await connect_dealer(f"tcp://127.0.0.1:{port}", timeout=TIMEOUT, poll_interval=0.05,
                                          heartbeat_interval=0.05, heartbeat_timeout=0.15)
            await asyncio.sleep(0.6)
            assert dealer.monitor.qsize() == 1  # the handshake, and no close
            await dealer.send([b"still here"])
            assert (await asyncio.wait_for(router.recv_multipart(), TIMEOUT))[1:] == [b"still here"]
            await dealer.close()
        finally:
            router.close()

    run(scenario)
