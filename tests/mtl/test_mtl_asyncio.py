"""The asyncio server and client together over real TCP (ZMTP REQ/DEALER to ROUTER)."""

from __future__ import annotations

import asyncio

import pytest

from reference_impl.mtl.client import DataFlow, MtlClient, MtlError, run_client_testcase
from reference_impl.mtl.codec import Summon
from reference_impl.mtl.server import start_server
from reference_impl.zmtp.sockets import HandshakeFailed, connect_dealer
from reference_impl.zmtp.plain import PlainClientConfig


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 30))


async def _with_server(body, **options):
    server = await start_server("127.0.0.1", 0, **options)
    try:
        return await body(server)
    finally:
        await server.close()


@pytest.mark.parametrize("testcase", ["test-profile", "scram"])
def test_client_testcases_pass(testcase) -> None:
    async def body(server):
        return await run_client_testcase(server.url, testcase)
    assert run(_with_server(body)) == 0


def test_unknown_client_testcase_is_127() -> None:
    assert run(run_client_testcase("tcp://127.0.0.1:1", "no-such-case")) == 127


def test_client_reauthenticates_after_a_401() -> None:
    async def body(server):
        client = await MtlClient.connect(server.url)
        try:
            await client.login("alice", "wonderland", "SCRAM-SHA-256")
            await asyncio.sleep(0.4)  # the authentication has expired by now
            reply = await client.request("Connection.Profile", {"profile": "test"})
            assert reply.code == 401
            await client.select_profile("test")  # call(): 401 -> authenticate again -> retry
            port, lease = await client.lease("writer", ["resource"])
            assert port == server.data_port and lease
        finally:
            await client.close()
    run(_with_server(body, auth_ttl=0.3))


def test_wrong_password_raises() -> None:
    async def body(server):
        client = await MtlClient.connect(server.url)
        try:
            with pytest.raises(MtlError):
                await client.login("alice", "nope", "SCRAM-SHA-256")
        finally:
            await client.close()
    run(_with_server(body))


def test_confirm_test_redelivery_end_to_end() -> None:
    async def body(server):
        client = await MtlClient.connect(server.url)
        try:
            await client.login("alice", "wonderland")
            await client.select_profile("confirm-test")
            writer = await client.writer(["resource"], "full")
            reader = await client.reader(["resource"], "full")
            assert await reader.summon("resource") == 200
            await writer.send_content(b"big" * 400_000, resource="resource")
            first = await reader.next_content()
            assert len(first.body) == 1_200_000
            again = await reader.next_content(timeout=2)
            assert again.body == first.body and again.seq > first.seq
            await reader.confirm(again.seq)
            with pytest.raises(TimeoutError):
                await reader.next_content(timeout=0.5)
        finally:
            await client.close()
    run(_with_server(body, redeliver_after=0.2))


def test_silent_data_peer_is_disconnected() -> None:
    async def body(server):
        flow = await DataFlow.connect("127.0.0.1", server.data_port)
        try:
            frames = await flow.dealer.recv()  # a Ping first
            assert frames[0] == b"\x08"
            event = None
            async with asyncio.timeout(3):
                while True:
                    _, event = await flow.dealer.monitor.get()
                    if type(event).__name__ == "ConnectionClosed":
                        break
            assert not server.broker.sessions
        finally:
            await flow.close()
    run(_with_server(body, heartbeat_interval=0.2, heartbeat_timeout=0.6))


def test_a_second_summon_and_responses_by_sequence() -> None:
    async def body(server):
        client = await MtlClient.connect(server.url)
        try:
            await client.login("alice", "wonderland")
            await client.select_profile("test")
            reader = await client.reader([])
            await reader.send(Summon(50, "resource"))
            await reader.send(Summon(51, "resource"))
            codes = {}
            for _ in range(2):
                response = await reader.wait_for(lambda c: type(c).__name__ == "Response")
                codes[response.seq] = response.code
            assert codes == {50: 200, 51: 400}
        finally:
            await client.close()
    run(_with_server(body))


def test_zmtp_mechanism_mismatch_is_refused() -> None:
    async def body(server):
        with pytest.raises(HandshakeFailed):
            await connect_dealer(server.url, mechanism=PlainClientConfig(b"alice", b"wonderland"), timeout=2)
    run(_with_server(body))


def test_ill_formed_control_request_gets_no_reply() -> None:
    async def body(server):
        client = await MtlClient.connect(server.url, timeout=0.5)
        try:
            await client.req.send([b"Connection.Open"])  # one frame after the delimiter
            with pytest.raises(TimeoutError):
                await client.req.recv()
        finally:
            await client.close()
    run(_with_server(body))
