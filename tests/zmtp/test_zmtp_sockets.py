"""Our asyncio sockets against each other: REQ/ROUTER, bound DEALERs, routing ids, timeouts."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

import pytest

from reference_impl.zmtp.connection import ConnectionClosed, HandshakeComplete
from reference_impl.zmtp.curve import CurveClientConfig, CurveServerConfig, KeyPair
from reference_impl.zmtp.sockets import (
    Dealer, HandshakeFailed, Req, bind_dealer, bind_router, connect_dealer, connect_req,
)


def run(coroutine: Awaitable[None]) -> None:
    async def bounded() -> None:
        async with asyncio.timeout(20):
            await coroutine

    asyncio.run(bounded())


def test_req_router_over_curve() -> None:
    async def scenario() -> None:
        server = KeyPair.generate()
        router = await bind_router(mechanism=CurveServerConfig(server), timeout=2.0)
        req = await connect_req(f"tcp://127.0.0.1:{router.port}",
                                mechanism=CurveClientConfig(server.public, KeyPair.generate()), timeout=2.0)
        try:
            await req.send([b"question"])
            routing_id, delimiter, body = await router.recv()
            assert delimiter == b"" and body == b"question"
            assert await router.send([routing_id, b"", b"answer"])
            assert await req.recv() == [b"answer"]
        finally:
            await req.close()
            await router.close()

    run(scenario())


def test_req_alternates_strictly() -> None:
    async def scenario() -> None:
        router = await bind_router(timeout=2.0)
        req = await connect_req(f"tcp://127.0.0.1:{router.port}", timeout=2.0)
        try:
            with pytest.raises(RuntimeError):
                await req.recv()
            await req.send([b"one"])
            with pytest.raises(RuntimeError):
                await req.send([b"two"])
        finally:
            await req.close()
            await router.close()

    run(scenario())


def test_router_uses_peer_identity_and_resolves_collisions() -> None:
    async def scenario() -> None:
        router = await bind_router(timeout=2.0)
        url = f"tcp://127.0.0.1:{router.port}"
        first = await connect_dealer(url, identity=b"same", timeout=2.0)
        second = await connect_dealer(url, identity=b"same", timeout=2.0)
        try:
            await first.send([b"from first"])
            await second.send([b"from second"])
            routes = dict([tuple(reversed(await router.recv())), tuple(reversed(await router.recv()))])
            assert routes[b"from first"] == b"same"
            assert routes[b"from second"][:1] == b"\x00" and len(routes[b"from second"]) == 5
            assert await router.send([routes[b"from second"], b"to second"])
            assert await second.recv() == [b"to second"]
            assert not await router.send([b"nobody", b"lost"])
        finally:
            await first.close()
            await second.close()
            await router.close()

    run(scenario())


def test_bound_dealer_round_robins_over_its_peers() -> None:
    async def scenario() -> None:
        hub = await bind_dealer(timeout=2.0)
        peers = [await connect_dealer(f"tcp://127.0.0.1:{hub.port}", timeout=2.0) for _ in range(2)]
        try:
            for _ in range(2):
                await asyncio.wait_for(hub.monitor.get(), 2.0)  # both handshakes done on the bound side
            for n in range(4):
                await hub.send([bytes([n])])
            got = [await peers[0].recv(), await peers[0].recv(), await peers[1].recv(), await peers[1].recv()]
            assert sorted(got) == [[b"\x00"], [b"\x01"], [b"\x02"], [b"\x03"]]
            assert {got[0][0][0] % 2, got[1][0][0] % 2} == {got[0][0][0] % 2}  # each peer got every other one
        finally:
            for peer in peers:
                await peer.close()
            await hub.close()

    run(scenario())


def test_monitor_reports_handshakes_and_closes() -> None:
    async def scenario() -> None:
        router = await bind_router(timeout=2.0)
        dealer = await connect_dealer(f"tcp://127.0.0.1:{router.port}", timeout=2.0)
        try:
            _, event = await asyncio.wait_for(router.monitor.get(), 2.0)
            assert isinstance(event, HandshakeComplete) and event.socket_type == "DEALER"
            await dealer.close()
            _, event = await asyncio.wait_for(router.monitor.get(), 2.0)
            assert event == ConnectionClosed("peer-closed", "stream ended during traffic")
        finally:
            await router.close()

    run(scenario())


def test_connect_to_a_silent_server_times_out() -> None:
    async def scenario() -> None:
        accepted: list[asyncio.StreamWriter] = []

        async def mute(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            accepted.append(writer)

        server = await asyncio.start_server(mute, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        try:
            with pytest.raises(TimeoutError):
                await connect_dealer(f"tcp://127.0.0.1:{port}", timeout=0.3)
        finally:
            for writer in accepted:
                writer.close()
            server.close()
            await server.wait_closed()

    run(scenario())


def test_incompatible_socket_types_fail_the_connect() -> None:
    async def scenario() -> None:
        peer = Req(timeout=2.0)
        port = await peer.bind()
        try:
            with pytest.raises(HandshakeFailed) as info:
                await connect_req(f"tcp://127.0.0.1:{port}", timeout=2.0)
            assert info.value.closed.code in {"incompatible-socket-type", "peer-error"}
        finally:
            await peer.close()

    run(scenario())


def test_recv_times_out() -> None:
    async def scenario() -> None:
        async with await bind_router(timeout=2.0) as router, Dealer(timeout=0.2) as dealer:
            await dealer.connect(f"tcp://127.0.0.1:{router.port}")
            with pytest.raises(TimeoutError):
                await dealer.recv()

    run(scenario())
