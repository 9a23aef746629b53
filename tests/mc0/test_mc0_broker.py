"""The sans-IO broker: acknowledgements, errors, fan-out with exact match, X- headers, NOOP and TTL absence."""

from __future__ import annotations

import pytest

from reference_impl.mc0.broker import Broker, Send
from reference_impl.mc0.codec import decode_message, encode_message, message


def frames(verb: bytes, headers=(), positional=None) -> list[bytes]:
    return encode_message(message(verb, headers, positional))


def replies(sends: list[Send]) -> list[tuple]:
    out = []
    for send in sends:
        msg = decode_message(send.frames)
        out.append((send.peer, msg.verb, msg.id))
    return out


@pytest.fixture
def broker() -> Broker:
    b = Broker()
    for peer in ("a", "b", "c"):
        b.attach(peer, 0.0)
    return b


def test_ok_only_with_an_id(broker: Broker) -> None:
    assert broker.receive("a", frames(b"NOOP"), 0) == []
    assert replies(broker.receive("a", frames(b"NOOP", [(b"ID", b"1234")]), 0)) == [("a", b"OK", b"1234")]


@pytest.mark.parametrize("bad", [
    [b"", b"FOO", b"ID", b"9"],                            # unknown verb
    [b"", b"MESSAGE", b"ID", b"9", b"TOPIC", b"t", b""],   # a broker verb from a client
    [b"", b"PUT", b"ID", b"9", b"", b"body"],              # no TOPIC
    [b"", b"PUT", b"ID", b"9", b"TOPIC", b"t"],            # no separator
    [b"", b"SUB", b"ID", b"9"],                            # no separator
    [b"", b"SUB", b"ID", b"9", b""],                       # no topic
    [b"", b"NOOP", b"ID", b"9", b"X-A"],                   # odd header count
    [b"", b"NOOP", b"ID", b"9", b"FOO", b"x"],             # undefined reserved header
    [b"", b"NOOP", b"ID", b"9", b"ID", b"9"],              # repeated reserved header
    [b"", b"CONNECT", b"ID", b"9", b"VERSION", b"0.1"],    # unknown version
    [b"", b"CONNECT", b"ID", b"9", b"TTL", b"-5"],         # TTL not a number of ms
    [b"", b"CONNECT", b"ID", b"9", b"TTL", b"0"],
])
def test_every_bad_request_gets_one_error_carrying_its_id(broker: Broker, bad: list[bytes]) -> None:
    sends = broker.receive("a", bad, 0)
    assert replies(sends) == [("a", b"ERROR", b"9")]
    assert decode_message(sends[0].frames).header(b"MESSAGE")


@pytest.mark.parametrize("bad", [[b"NOOP"], [b""], [b"", b"PUT", b"TOPIC"]])
def test_undecodable_messages_get_error_without_id(broker: Broker, bad: list[bytes]) -> None:
    assert replies(broker.receive("a", bad, 0)) == [("a", b"ERROR", None)]


def test_errors_leave_everyone_served(broker: Broker) -> None:
    broker.receive("b", frames(b"SUB", positional=[b"t"]), 0)
    broker.receive("a", [b"", b"PUT", b"TOPIC", b"t", b"X-A"], 0)
    assert replies(broker.receive("a", frames(b"PUT", [(b"TOPIC", b"t")], [b"x"]), 0)) == [("b", b"MESSAGE", None)]


def test_fan_out_to_every_exact_subscriber_then_the_ok(broker: Broker) -> None:
    broker.receive("a", frames(b"SUB", positional=[b"news"]), 0)
    broker.receive("b", frames(b"SUB", positional=[b"news", b"other"]), 0)
    broker.receive("c", frames(b"SUB", positional=[b"new", b"news.sport", b"NEWS"]), 0)
    sends = broker.receive("c", frames(b"PUT", [(b"ID", b"1"), (b"TOPIC", b"news"), (b"X-T", b"v")], [b"p1", b"p2"]), 0)
    assert replies(sends) == [("a", b"MESSAGE", None), ("b", b"MESSAGE", None), ("c", b"OK", b"1")]
    assert sends[0].frames == [b"", b"MESSAGE", b"TOPIC", b"news", b"X-T", b"v", b"", b"p1", b"p2"]


def test_unsub_detach_and_disconnect_drop_subscriptions(broker: Broker) -> None:
    for peer in "abc":
        broker.receive(peer, frames(b"SUB", positional=[b"t"]), 0)
    broker.receive("a", frames(b"UNSUB", positional=[b"t"]), 0)
    broker.detach("b")
    broker.receive("c", frames(b"DISCONNECT"), 0)
    assert broker.matching(b"t") == set()
    assert broker.subscribers == {}


def test_connect_versions(broker: Broker) -> None:
    for version in (b"0.3", b"0.2"):
        assert replies(broker.receive("a", frames(b"CONNECT", [(b"VERSION", version), (b"ID", b"v")]), 0)) == [("a", b"OK", b"v")]
    assert broker.peers["a"].version == b"0.2"


def test_noop_after_half_a_quiet_ttl_then_absence(broker: Broker) -> None:
    broker.receive("a", frames(b"CONNECT", [(b"VERSION", b"0.3"), (b"TTL", b"1000")]), 10.0)
    broker.receive("a", frames(b"SUB", positional=[b"t"]), 10.0)
    assert broker.next_deadline() == 10.5
    assert broker.tick(10.4) == []
    assert replies(broker.tick(10.5)) == [("a", b"NOOP", None)]
    assert broker.tick(10.9) == []
    assert replies(broker.tick(11.0)) == [("a", b"NOOP", None)]
    assert broker.tick(11.01) == [] and broker.absent == ["a"]
    assert broker.matching(b"t") == set() and broker.peers["a"].ttl is None
    assert broker.next_deadline() is None


def test_any_message_keeps_a_client_present(broker: Broker) -> None:
    broker.receive("a", frames(b"CONNECT", [(b"TTL", b"1000")]), 0.0)
    broker.receive("a", frames(b"SUB", positional=[b"t"]), 0.0)
    for step in range(1, 30):
        broker.receive("a", frames(b"NOOP"), step * 0.4)
        assert broker.tick(step * 0.4 + 0.3) == []
    assert broker.matching(b"t") == {"a"} and broker.absent == []


def test_clients_without_ttl_are_never_absent(broker: Broker) -> None:
    broker.receive("a", frames(b"SUB", positional=[b"t"]), 0.0)
    assert broker.tick(1e9) == [] and broker.matching(b"t") == {"a"}
