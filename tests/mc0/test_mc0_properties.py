"""Property tests (hypothesis) for mc0 beyond the codec round trip: arbitrary octets on the wire,
arbitrary frames into the broker, and the regressions the fuzz targets and review found."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.vectors import mc0 as adapter
from reference_impl.common.errors import CodecError
from reference_impl.mc0 import codec
from reference_impl.mc0.broker import Broker, check_request, Refused, ttl_ms

FAST = settings(max_examples=300, deadline=None)
WORDS = [b"", b"CONNECT", b"DISCONNECT", b"SUB", b"UNSUB", b"PUT", b"NOOP", b"MESSAGE", b"OK", b"ERROR", b"ID",
         b"TOPIC", b"VERSION", b"TTL", b"X-A", b"x-a", b"0.3", b"0.2", b"1000", b"t", b"\x00\xff"]
frame = st.one_of(st.sampled_from(WORDS), st.binary(max_size=12))
frame_lists = st.lists(frame, max_size=10)


@FAST
@given(st.binary(max_size=120), st.sampled_from(["message", "request", "exchange"]))
def test_any_wire_octets_decode_or_fail_with_a_code(wire: bytes, kind: str) -> None:
    try:
        adapter.decode({"kind": kind}, wire)
    except CodecError:
        pass


@FAST
@given(frame_lists)
def test_salvage_id_takes_any_frames_and_agrees_with_the_decoder(frames: list[bytes]) -> None:
    salvaged = codec.salvage_id(frames)
    try:
        msg = codec.decode_message(frames)
    except CodecError:
        return
    assert salvaged == msg.id


@FAST
@given(st.lists(st.tuples(st.integers(0, 2), frame_lists), max_size=12))
def test_broker_answers_any_frames_and_never_raises(steps) -> None:
    broker = Broker()
    for now, (peer, frames) in enumerate(steps):
        frames = [b""] + frames if now % 3 else frames  # mostly with the delimiter
        sends = broker.receive(peer, frames, float(now))
        replies = [codec.decode_message(s.frames) for s in sends if s.peer == peer]
        acks = [m for m in replies if m.verb in (codec.OK, codec.ERROR)]
        try:
            msg = codec.decode_message(frames)
            check_request(msg)
        except (CodecError, Refused):
            assert [m.verb for m in acks] == [codec.ERROR]
            continue
        if msg.id is None:
            assert acks == []
        else:
            assert [(m.verb, m.id) for m in acks] == [(codec.OK, msg.id)]
    for topic, peers in broker.subscribers.items():
        assert peers and all(topic in broker.peers[p].topics for p in peers)


@FAST
@given(st.integers(0, 6000), st.integers(0, 5000), st.sampled_from([b"", b"1", b"1000", b"2147483648", b"x"]))
def test_ttl_of_any_length_is_answered(ones: int, zeros: int, tail: bytes) -> None:
    ttl = b"0" * zeros + b"1" * ones + tail
    frames = codec.encode_message(codec.message(codec.CONNECT, [(codec.ID, b"c"), (codec.TTL, ttl)]))
    [reply] = Broker().receive("peer", frames, 0.0)
    verb = codec.decode_message(reply.frames).verb
    digits = ttl.lstrip(b"0")
    expect_ok = ttl.isdigit() and digits != b"" and len(digits) <= 10 and int(digits) <= 2**31 - 1
    assert verb == (codec.OK if expect_ok else codec.ERROR)


def test_ttl_ms_bounds() -> None:
    assert ttl_ms(b"1000") == 1000 and ttl_ms(b"0001000") == 1000 and ttl_ms(b"2147483647") == 2**31 - 1
    for bad in (b"", b"0", b"000", b"2147483648", b"1" * 4301, b"-1", b"+1", b"1.0", "١".encode()):
        assert ttl_ms(bad) is None, bad


def test_reattached_peer_starts_without_subscriptions() -> None:
    """Fuzz finding (mc0-broker): attaching a handle that is still attached kept its old subscriptions
    in the subscriber table, so the new connection got MESSAGEs for topics it never subscribed to."""
    broker = Broker()
    broker.attach("a", 0.0)
    broker.receive("a", [b"", b"SUB", b"", b"t"], 0.0)
    broker.attach("a", 1.0)  # a new connection under the same handle (ROUTER handover)
    assert broker.subscribers == {} and broker.peers["a"].topics == set()
    sends = broker.receive("a", [b"", b"PUT", b"ID", b"p", b"TOPIC", b"t", b"", b"x"], 1.0)
    assert [codec.decode_message(s.frames).verb for s in sends] == [codec.OK]
