"""CURVE refusals by the reference mc0 broker, over TCP, from a hand-driven client.

Each forgery is refused: the broker answers with an ERROR command or closes the connection,
never with READY, and no peer reaches the broker (RecordingBroker.attached).  After each, an
honest client is still served.  The replay of a whole recorded handshake is also driven
sans-IO against a server whose cookie key lives longer than one connection (RFC 26 lets a
server keep it for a minute), which per-connection keys would otherwise hide.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass

import pytest

from reference_impl.mc0 import testkeys
from reference_impl.mc0.server import start_server
from reference_impl.zmtp import curve
from reference_impl.zmtp.commands import Metadata, split_command
from reference_impl.zmtp.connection import Connection, HandshakeComplete
from reference_impl.zmtp.curve import CurveClientConfig, CurveServerConfig, KeyPair
from zmtp_probe import RecordingBroker, curve_client, initiate_body

SERVER, CLIENT = testkeys.SERVER, testkeys.CLIENT


async def _with_broker(body, **options):
    broker = RecordingBroker()
    server = await start_server("127.0.0.1", 0, broker=broker, **options)
    try:
        return await body(server, broker)
    finally:
        await server.close()


def _refused(run) -> None:
    assert not run.reached_ready, "the forged handshake reached READY"
    assert run.closed, f"the broker did not close the connection after {run.answer}"
    assert run.answer.kind == "closed" or run.answer.name == "ERROR", run.answer


async def _honest(server, broker) -> None:
    before = len(broker.attached)
    run = await curve_client(server.url, SERVER.public, CLIENT)
    assert run.reached_ready and run.ready_metadata.get("Socket-Type") == b"ROUTER", run.answer
    await asyncio.sleep(0.05)
    assert len(broker.attached) == before + 1


def test_an_honest_curve_client_is_served() -> None:
    asyncio.run(_with_broker(_honest))


def test_wrong_server_key_is_refused_before_welcome() -> None:
    async def body(server, broker):
        run = await curve_client(server.url, testkeys.WRONG_SERVER.public, CLIENT)
        assert run.welcome is None  # the HELLO box does not open: no cookie is ever issued
        _refused(run)
        assert broker.attached == []
        await _honest(server, broker)

    asyncio.run(_with_broker(body))


def test_a_cookie_from_an_earlier_handshake_is_refused() -> None:
    async def body(server, broker):
        first = await curve_client(server.url, SERVER.public, CLIENT)
        assert first.reached_ready

        def with_old_cookie(run):  # an INITIATE for this handshake, carrying the first one's cookie
            return initiate_body(first.welcome.cookie, 2, client=CLIENT, transient=run.transient,
                                 server_key=SERVER.public, server_transient=run.welcome.server_transient)

        _refused(await curve_client(server.url, SERVER.public, CLIENT, make_initiate=with_old_cookie))

        # the whole recorded client side again: its HELLO, then its INITIATE, octet for octet
        replay = await curve_client(server.url, SERVER.public, CLIENT, transient=first.transient,
                                    hello=first.hello, make_initiate=lambda run: first.initiate)
        _refused(replay)
        await asyncio.sleep(0.05)
        assert len(broker.attached) == 1  # only the honest first handshake
        await _honest(server, broker)

    asyncio.run(_with_broker(body))


@pytest.mark.parametrize("forgery", ["random", "bit-flipped", "last-octet"])
def test_a_forged_cookie_is_refused(forgery: str) -> None:
    def forged(run):
        cookie = run.welcome.cookie
        if forgery == "random":
            cookie = os.urandom(96)
        elif forgery == "bit-flipped":
            cookie = cookie[:40] + bytes([cookie[40] ^ 1]) + cookie[41:]
        else:
            cookie = cookie[:95] + bytes([cookie[95] ^ 0xFF])
        return initiate_body(cookie, 2, client=CLIENT, transient=run.transient, server_key=SERVER.public,
                             server_transient=run.welcome.server_transient)

    async def body(server, broker):
        _refused(await curve_client(server.url, SERVER.public, CLIENT, make_initiate=forged))
        assert broker.attached == []
        await _honest(server, broker)

    asyncio.run(_with_broker(body))


@pytest.mark.parametrize("forgery", ["boxed-by-another-key", "another-short-term-key", "another-server-key"])
def test_a_bad_vouch_is_refused(forgery: str) -> None:
    def forged(run):
        options = {}
        if forgery == "boxed-by-another-key":  # claims CLIENT's key without its secret
            options["vouch_signer"] = KeyPair.generate().secret
        elif forgery == "another-short-term-key":
            options["vouch_plain"] = KeyPair.generate().public + SERVER.public
        else:
            options["vouch_plain"] = run.transient.public + testkeys.WRONG_SERVER.public
        return initiate_body(run.welcome.cookie, 2, client=CLIENT, transient=run.transient, server_key=SERVER.public,
                             server_transient=run.welcome.server_transient, **options)

    async def body(server, broker):
        _refused(await curve_client(server.url, SERVER.public, CLIENT, make_initiate=forged))
        assert broker.attached == []
        await _honest(server, broker)

    asyncio.run(_with_broker(body))


def test_a_client_key_the_server_does_not_allow_gets_error_and_close() -> None:
    allowed = {CLIENT.public}
    asked: list[bytes] = []

    def authorize(key: bytes) -> bool:
        asked.append(key)
        return key in allowed

    async def body(server, broker):
        server.curve = CurveServerConfig(SERVER, authorize=authorize)
        stranger = KeyPair.generate()
        run = await curve_client(server.url, SERVER.public, stranger)
        assert run.answer.name == "ERROR" and run.answer.error_reason == curve.UNAUTHORIZED_REASON, run.answer
        _refused(run)
        assert asked == [stranger.public] and broker.attached == []
        await _honest(server, broker)  # the allowed key is still served
        assert asked[-1] == CLIENT.public

    asyncio.run(_with_broker(body))


def test_a_replayed_handshake_is_refused_even_with_a_long_lived_cookie_key() -> None:
    """Sans-IO: the client's octets of one handshake, fed to a second connection of the same server."""
    config = CurveServerConfig(SERVER, cookie_key=os.urandom(32))  # one cookie key for every connection
    server = Connection("ROUTER", config, handshake_timeout=None)
    client = Connection("DEALER", CurveClientConfig(SERVER.public, CLIENT), handshake_timeout=None)
    recorded = bytearray()
    to_server = client.start(0).data
    to_client = server.start(0).data
    completed = False
    for _ in range(10):
        recorded += to_server
        out_s = server.receive_data(to_server, 0) if to_server else None
        out_c = client.receive_data(to_client + (out_s.data if out_s else b""), 0) if (to_client or out_s) else None
        to_client = b""
        to_server = out_c.data if out_c else b""
        completed = completed or any(isinstance(e, HandshakeComplete) for e in (out_c.events if out_c else []))
        if completed and not to_server:
            break
    assert completed and server.peer is not None  # the recorded handshake was a good one

    again = Connection("ROUTER", config, handshake_timeout=None)
    again.start(0)
    events = again.receive_data(bytes(recorded), 0).events
    assert not any(isinstance(e, HandshakeComplete) for e in events), "a replayed handshake completed"
    assert again.peer is None


NEW_CASES = ["mc0/handshake/curve-replayed-handshake", "mc0/handshake/curve-forged-cookie",
             "mc0/handshake/curve-message-before-handshake"]


class _TrustingServer(curve.CurveServer):
    """A broken CURVE server that takes any INITIATE at its word: no cookie, box or vouch check."""

    def receive(self, body: bytes) -> list[bytes]:
        if self._state == "expect-initiate" and split_command(body)[0] == "INITIATE":
            self._key = curve.shared_key(self._client_transient, self._transient.secret)
            self.peer_metadata = Metadata.of([("Socket-Type", b"DEALER")])
            self.complete = True
            return [curve.encode_ready(self._next_nonce(), self.metadata, self._key)]
        return super().receive(body)


@dataclass(frozen=True)
class _TrustingConfig(CurveServerConfig):
    def create(self, metadata: Metadata) -> _TrustingServer:
        return _TrustingServer(metadata, self.keypair, None, KeyPair.generate(), os.urandom(32), os.urandom(16),
                               os.urandom(16), 1)


def test_the_mc0_refusal_cases_pass_against_the_reference_and_fail_a_trusting_broker() -> None:
    """The scenario cases grade the refusals: the reference passes them, a broker that does not
    check the INITIATE (cookie, box, vouch) fails the replay and the forged cookie."""
    from suite_helpers import Grade, all_cases, run_case

    cases = all_cases("mc0")

    async def body(server, broker):
        results = {case_id: await run_case(cases[case_id], server.url) for case_id in NEW_CASES}
        server.curve = _TrustingConfig(SERVER)
        trusted = {case_id: await run_case(cases[case_id], server.url) for case_id in NEW_CASES[:2]}
        return results, trusted

    results, trusted = asyncio.run(_with_broker(body))
    for case_id, result in results.items():
        assert result.grade is Grade.PASSED, (case_id, result.message)
    for case_id, result in trusted.items():
        assert result.grade is Grade.FAILED and "ZMTP command READY" in result.message, (case_id, result.message)
