"""11/MTL SASL refusals by the reference MTL server (PLAIN, SCRAM-SHA-256), over its control and data ports.

A wrong password (either mechanism), an unknown user and a SCRAM client-final replayed from
another session end in 401, and the connection stays unauthenticated: Profile and
Reader/Writer keep getting 401, never a 200 or a lease.  A client that skips the handshake
gets 403 before Open and 401 after it; on the data port, without a lease it was granted,
Summon and Content get 403 and nothing it sends reaches a reader.
"""

from __future__ import annotations

import asyncio

import pytest

from reference_impl.mtl import sasl
from reference_impl.mtl.client import OPEN_BODY, DataFlow, MtlClient
from reference_impl.mtl.codec import Content, Lease, Summon
from reference_impl.mtl.server import start_server

USER, PASSWORD = "alice", "wonderland"  # docs/profiles/mtl.md, "Test service (server role)": the SASL test user
LEASE_BODY = {"resources": ["resource"], "confirm": "none"}


async def _with_server(body):
    server = await start_server("127.0.0.1", 0)
    try:
        return await body(server)
    finally:
        await server.close()


async def _client(server) -> MtlClient:
    client = await MtlClient.connect(server.url, timeout=3.0)
    assert (await client.open()).code == 401  # authentication required
    return client


async def _authorize(client: MtlClient, mechanism: str, message: bytes):
    return await client.request("Connection.Authorize", {"mechanism": mechanism, "response": sasl.b64encode(message)})


async def _still_unauthenticated(client: MtlClient) -> None:
    for command, body in (("Connection.Profile", {"profile": "test"}), ("Connection.Writer", LEASE_BODY),
                          ("Connection.Reader", LEASE_BODY)):
        reply = await client.request(command, body)
        assert reply.code == 401, (command, reply)
        assert "lease" not in reply.body and "port" not in reply.body


@pytest.mark.parametrize("user,password", [(USER, "not the password"), ("mallory", PASSWORD), (USER, "")])
def test_plain_with_wrong_credentials_is_refused(user: str, password: str) -> None:
    async def body(server):
        client = await _client(server)
        try:
            reply = await _authorize(client, sasl.PLAIN, sasl.plain_response(user, password))
            assert reply.code == 401 and sasl.PLAIN in reply.body["mechanisms"], reply
            await _still_unauthenticated(client)
            # the right password still works on the same connection afterwards
            assert (await _authorize(client, sasl.PLAIN, sasl.plain_response(USER, PASSWORD))).code == 201
        finally:
            await client.close()

    asyncio.run(_with_server(body))


def test_scram_with_a_wrong_password_is_refused() -> None:
    async def body(server):
        client = await _client(server)
        try:
            exchange = sasl.ScramClientExchange(USER, "not the password")
            first = await _authorize(client, sasl.SCRAM_SHA_256, exchange.client_first())
            assert first.code == 402, first
            final = exchange.client_final(sasl.b64decode(first.body["challenge"]))
            reply = await _authorize(client, sasl.SCRAM_SHA_256, final)
            assert reply.code == 401, reply
            await _still_unauthenticated(client)
        finally:
            await client.close()

    asyncio.run(_with_server(body))


def test_a_scram_client_final_from_another_session_is_refused() -> None:
    """Session A's client-final (right password, A's nonces) replayed into session B."""
    async def body(server):
        a, b = await _client(server), await _client(server)
        try:
            exchange_a = sasl.ScramClientExchange(USER, PASSWORD, nonce="replayA0123456789")
            first_a = await _authorize(a, sasl.SCRAM_SHA_256, exchange_a.client_first())
            final_a = exchange_a.client_final(sasl.b64decode(first_a.body["challenge"]))

            exchange_b = sasl.ScramClientExchange(USER, PASSWORD, nonce="replayB0123456789")
            first_b = await _authorize(b, sasl.SCRAM_SHA_256, exchange_b.client_first())
            assert first_b.code == 402
            replayed = await _authorize(b, sasl.SCRAM_SHA_256, final_a)
            assert replayed.code == 401, replayed
            await _still_unauthenticated(b)

            # A's client-final is good where it belongs: the replay failed for its nonce, not its proof
            second_a = await _authorize(a, sasl.SCRAM_SHA_256, final_a)
            assert second_a.code == 402 and exchange_a.verify_server_final(sasl.b64decode(second_a.body["challenge"]))
            assert (await _authorize(a, sasl.SCRAM_SHA_256, b"")).code == 201
            # ... and only once: the same client-final again starts no new exchange
            assert (await _authorize(a, sasl.SCRAM_SHA_256, final_a)).code == 401
        finally:
            await a.close()
            await b.close()

    asyncio.run(_with_server(body))


def test_a_client_that_skips_the_handshake_gets_no_lease() -> None:
    async def body(server):
        client = await MtlClient.connect(server.url, timeout=3.0)
        try:
            for command, body_ in (("Connection.Authorize", {"mechanism": "PLAIN", "response": ""}),
                                   ("Connection.Profile", {"profile": "test"}), ("Connection.Writer", LEASE_BODY)):
                reply = await client.request(command, body_)
                assert reply.code == 403, (command, reply)  # before Open
            assert (await client.request("Connection.Open", OPEN_BODY)).code == 401
            await _still_unauthenticated(client)  # after Open, before Authorize
        finally:
            await client.close()

    asyncio.run(_with_server(body))


def test_data_without_a_granted_lease_is_refused_and_not_delivered() -> None:
    async def body(server):
        # a reader that did everything right, to see whether anything leaks through
        honest = await MtlClient.connect(server.url, timeout=3.0)
        await honest.login(USER, PASSWORD)
        await honest.select_profile("test")
        reader = await honest.reader(["resource"])
        assert await reader.summon("resource") == 200

        intruder = await DataFlow.connect("127.0.0.1", server.data_port, timeout=3.0)
        try:
            assert await intruder.command(Summon(1, "resource")) == 403
            assert await intruder.command(Lease(2, "0" * 24)) == 403  # a lease never granted
            assert await intruder.command(Content(3, "resource", (), b"skipped the handshake")) == 403
            assert await intruder.command(Summon(4, "resource")) == 403  # still no lease
            with pytest.raises(TimeoutError):
                await reader.next_content(timeout=0.5)
        finally:
            await intruder.close()
            await honest.close()

    asyncio.run(_with_server(body))
