"""A suite that cannot fail proves nothing: each one-bug broker FAILS the right mc0 case, its twin passes."""

from __future__ import annotations

import asyncio

import pytest

from conformance.selftest.buggy_mc0 import BuggyBroker, start_buggy
from reference_impl.mc0.server import Mc0Server
from reference_impl.zmtp.codec import Frame, encode_frame
from reference_impl.zmtp.commands import Metadata, Ready, encode_command
from reference_impl.zmtp.greeting import Greeting, encode_greeting
from suite_helpers import Grade, all_cases, run_case

CASES = all_cases("mc0")

# bug, the case it must fail, words the grade's message must hold (so a user can act on it)
BUG_TO_CASE = [
    ("accepts-null", "mc0/handshake/null-refused", "READY (NULL"),
    ("unchecked-hello", "mc0/handshake/curve-wrong-server-key", "WELCOME"),
    ("odd-headers-crash", "mc0/error-disconnect/odd-header-count", "closed the connection"),
    ("odd-headers-stop-serving", "mc0/error-disconnect/odd-header-count", "nothing arrived"),
    ("ok-after-error", "mc0/error-disconnect/unknown-verb-error-only", "mc0 OK ID='7'"),
    ("prefix-match", "mc0/pubsub/prefix-not-delivered", "mc0 MESSAGE TOPIC='a.b'"),
    ("fan-out-to-one", "mc0/pubsub/fan-out-to-every-subscriber", "nothing arrived"),
    ("drops-x-headers", "mc0/extension-index/x-headers-forwarded", "header_list"),
    ("no-ttl-expiry", "mc0/error-disconnect/ttl-expiry-drops-subscriptions", "mc0 MESSAGE TOPIC='ttl'"),
    ("noop-not-heard", "mc0/error-disconnect/traffic-keeps-client-present", "nothing arrived"),
    ("unsub-removes-topic-for-all", "mc0/pubsub/unsub-leaves-other-subscribers", "nothing arrived"),
    ("close-drops-topic-for-all", "mc0/pubsub/close-leaves-other-subscribers", "nothing arrived"),
    ("absence-drops-topic-for-all", "mc0/error-disconnect/absence-leaves-other-subscribers", "nothing arrived"),
    ("unsub-first-only", "mc0/pubsub/unsub-several-topics", "mc0 MESSAGE TOPIC='several/2'"),
    ("empty-body-no-separator", "mc0/pubsub/put-empty-body", "separator"),
    ("error-id-text-reencoded", "mc0/ack-wrap/error-id-binary", "mc0 ERROR ID="),
    ("empty-id-ignored", "mc0/ack-wrap/empty-id", "nothing arrived"),
    ("error-description-key", "mc0/error-disconnect/unknown-verb-no-id", "no field 'message'"),
]
#: SHOULD-level bugs: NON-STRICT
SHOULD_BUG_TO_CASE = [
    ("no-noop", "mc0/error-disconnect/broker-noops-quiet-client", "nothing arrived"),
    ("unsub-refcount", "mc0/pubsub/unsub-once-after-sub-twice", "mc0 MESSAGE TOPIC='unsub/twice'"),
    ("refused-no-id-silent", "mc0/error-disconnect/refused-without-id-gets-error", "nothing arrived"),
    ("noop-once", "mc0/error-disconnect/noops-keep-coming", "nothing arrived"),
]


async def _grade(bug: str | None, case_id: str):
    server = await start_buggy(bug)
    try:
        return await run_case(CASES[case_id], server.url, transport="zmtp")
    finally:
        await server.close()


@pytest.mark.parametrize("bug,case_id,words", BUG_TO_CASE, ids=[f"{b}->{c}" for b, c, _ in BUG_TO_CASE])
def test_each_bug_fails_its_case(bug: str, case_id: str, words: str) -> None:
    result = asyncio.run(_grade(bug, case_id))
    assert result.grade is Grade.FAILED, (result.grade, result.message, result.log.render()[-3000:])
    assert words in result.message, result.message


@pytest.mark.parametrize("bug,case_id,words", SHOULD_BUG_TO_CASE, ids=[f"{b}->{c}" for b, c, _ in SHOULD_BUG_TO_CASE])
def test_each_should_bug_is_non_strict_on_its_case(bug: str, case_id: str, words: str) -> None:
    result = asyncio.run(_grade(bug, case_id))
    assert result.grade is Grade.NON_STRICT, (result.grade, result.message, result.log.render()[-3000:])
    assert words in result.message, result.message


@pytest.mark.parametrize("case_id", sorted({c for _, c, _ in BUG_TO_CASE + SHOULD_BUG_TO_CASE}))
def test_the_same_cases_pass_without_the_bug(case_id: str) -> None:
    # The bug-free twin passes, so each failure above comes from its bug alone.
    result = asyncio.run(_grade(None, case_id))
    assert result.grade is Grade.PASSED, (result.grade, result.message, result.log.render()[-3000:])


def test_a_welcome_to_a_hello_for_another_key_fails_the_exchange_itself() -> None:
    # The suite cannot open that WELCOME: its giving up must not pass for the broker's refusal.
    # (The close grade alone failed this broker only because it then waits for INITIATE; one that
    # hangs up would have passed.)
    result = asyncio.run(_grade("unchecked-hello", "mc0/handshake/curve-wrong-server-key"))
    assert result.exchange is Grade.FAILED, (result.exchange, result.message)
    assert "WELCOME" in result.message, result.message


async def _grade_fake(serve, case_id: str):
    """A case against a scripted target: ``serve(reader, writer)`` runs for the one connection."""
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await serve(reader, writer)
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        port = server.sockets[0].getsockname()[1]
        return await run_case(CASES[case_id], f"tcp://127.0.0.1:{port}", transport="zmtp")
    finally:
        server.close()
        await server.wait_closed()


async def _serves_null_as_pub(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Accepts the NULL client (the bug), but as a PUB socket, which a DEALER cannot talk to."""
    await reader.readexactly(64)
    ready = encode_command(Ready(Metadata.of([("Socket-Type", b"PUB")])))
    writer.write(encode_greeting(Greeting("NULL")) + encode_frame(Frame(ready, command=True)))
    await writer.drain()
    await asyncio.sleep(0.2)


def test_the_suite_giving_up_on_a_null_broker_is_no_refusal() -> None:
    # The broker spoke NULL: the suite stopping at its socket type does not make that a refusal.
    result = asyncio.run(_grade_fake(_serves_null_as_pub, "mc0/handshake/null-refused"))
    assert result.exchange is Grade.FAILED, (result.exchange, result.message)
    assert "incompatible-socket-type" in result.message, result.message


class _ClosesAbsentClients(BuggyBroker):
    """Bug-free, with a choice the spec leaves open: an absent client's connection is closed too."""

    def tick(self, now: float):
        timed = [peer for peer, state in self.peers.items() if state.ttl is not None]
        sends = super().tick(now)
        assert self.server is not None
        for peer in (p for p in timed if self.peers[p].ttl is None):  # found absent just now
            connection = self.server._peers.get(peer)
            if connection is not None:
                connection.writer.transport.abort()
        return sends


async def _grade_closing_absent(case_id: str):
    broker = _ClosesAbsentClients(None)
    server = Mc0Server(broker=broker)
    broker.server = server
    await server.start("127.0.0.1", 0)
    try:
        return await run_case(CASES[case_id], server.url, transport="zmtp")
    finally:
        await server.close()


def test_a_broker_that_closes_an_absent_client_passes_ttl_expiry() -> None:
    # The case accepts that close as the answer to the late PUT; the silence after it must not
    # then fail the broker for being closed.
    result = asyncio.run(_grade_closing_absent("mc0/error-disconnect/ttl-expiry-drops-subscriptions"))
    assert result.grade is Grade.PASSED, (result.grade, result.message, result.log.render()[-2000:])
    assert "connection reset" in result.log.render() or "peer closed" in result.log.render(), \
        "the broker never closed: this test proves nothing"


def test_a_should_violation_is_non_strict() -> None:
    result = asyncio.run(_grade("no-noop", "mc0/error-disconnect/broker-noops-quiet-client"))
    assert result.grade is Grade.NON_STRICT, result.message


def test_prefix_bug_leaves_exact_delivery_passing() -> None:
    result = asyncio.run(_grade("prefix-match", "mc0/pubsub/put-reaches-subscriber"))
    assert result.grade is Grade.PASSED, result.message
