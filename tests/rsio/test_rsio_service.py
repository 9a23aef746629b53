"""The rsio test publishers, driven in memory: a client Connection against a server
Connection running TestService."""

from __future__ import annotations

import pytest

from reference_impl.rsio.codec import (
    LONG_MAX,
    Cancel,
    OnComplete,
    OnError,
    OnNext,
    OnNextLastPart,
    OnNextPacked,
    OnNextPart,
    Request,
    StreamDecoder,
    Subscribe,
    Subscribed,
)
from reference_impl.rsio.connection import Connection, Element, Role
from reference_impl.rsio.service import TestService, pattern


class Harness:
    def __init__(self, **options) -> None:
        self.client = Connection(Role.CLIENT)
        self.server = Connection(Role.SERVER)
        self.service = TestService(self.server, **options)
        self.wire: list = []  # every message the server sent, for checking the framing
        self._tap = StreamDecoder(element_size=self._size)
        self.sizes: dict[int, int] = {}
        self.run()

    def _size(self, sid: int) -> int:
        return self.sizes.get(sid, 0)

    def _tap_messages(self, data: bytes) -> None:
        self._tap.feed(data)
        for message in self._tap:
            if isinstance(message, Subscribed):
                self.sizes[message.subscriber] = message.element_size
            self.wire.append(message)

    def run(self, max_rounds: int = 1000) -> list:
        """Exchange until quiet; return the client's events."""
        events: list = []
        for _ in range(max_rounds):
            to_server = self.client.data_to_send()
            for event in self.server.receive_data(to_server):
                self.service.handle(event)
            if self.service.has_work:
                self.service.pump(8)
            to_client = self.server.data_to_send()
            self._tap_messages(to_client)
            events += self.client.receive_data(to_client)
            if not to_server and not to_client and not self.service.has_work:
                return events
        raise AssertionError("never quiet")

    def subscribe(self, publisher: str, sid: int = 1, demand: int = 0) -> list:
        self.client.send(Subscribe(publisher, sid, demand))
        return self.run()


def elements(events: list, sid: int = 1) -> list[bytes]:
    return [e.data for e in events if isinstance(e, Element) and e.subscriber == sid]


def test_pattern_is_k_plus_i_mod_256() -> None:
    assert pattern(0, 3) == b"\x00\x01\x02"
    assert pattern(254, 4) == b"\xfe\xff\x00\x01"
    assert pattern(300, 2) == bytes([44, 45])  # 300 mod 256 = 44
    assert len(pattern(7, 1000)) == 1000 and pattern(7, 1000)[999] == (7 + 999) % 256


def test_range_follows_demand_and_completes() -> None:
    h = Harness()
    events = h.subscribe("test/range/5", demand=2)
    assert events[0] == Subscribed(1, 0)
    assert elements(events) == [bytes(8), (1).to_bytes(8, "big")]  # k = 0, 1 as u64 BE
    assert not any(isinstance(e, OnComplete) for e in events)
    h.client.send(Request(1, 10))
    events = h.run()
    assert elements(events) == [k.to_bytes(8, "big") for k in (2, 3, 4)]
    assert events[-1] == OnComplete(1)


def test_range_zero_completes_at_once() -> None:
    assert Harness().subscribe("test/range/0") == [Subscribed(1, 0), OnComplete(1)]


def test_fixed_packs_within_demand() -> None:
    h = Harness(pack_bytes=12)  # at most 3 elements of 4 bytes per message
    events = h.subscribe("test/fixed/8/4", demand=5)
    assert events[0] == Subscribed(1, 4)
    assert elements(events) == [pattern(k, 4) for k in range(5)]
    assert [type(m) for m in h.wire[1:]] == [Subscribed, OnNextPacked, OnNextPacked]
    assert [len(m.elements) for m in h.wire[2:]] == [3, 2]
    h.client.send(Request(1, 1))
    events = h.run()
    assert elements(events) == [pattern(5, 4)]
    assert isinstance(h.wire[-1], OnNext)  # a single element is not packed
    h.client.send(Request(1, LONG_MAX))
    events = h.run()
    assert elements(events) == [pattern(6, 4), pattern(7, 4)]
    assert events[-1] == OnComplete(1)


def test_large_is_split_into_parts() -> None:
    h = Harness(part_size=1000)
    events = h.subscribe("test/large/2500", demand=1)
    assert elements(events) == [pattern(0, 2500)]
    assert events[-1] == OnComplete(1)
    parts = [m for m in h.wire if isinstance(m, (OnNextPart, OnNextLastPart))]
    assert [type(p) for p in parts] == [OnNextPart, OnNextPart, OnNextLastPart]
    assert [len(p.data) for p in parts] == [1000, 1000, 500]


def test_large_waits_for_demand_and_small_is_one_on_next() -> None:
    h = Harness(part_size=1000)
    assert h.subscribe("test/large/10") == [Subscribed(1, 0)]
    h.client.send(Request(1, 1))
    assert h.run() == [Element(1, pattern(0, 10)), OnComplete(1)]
    assert isinstance(h.wire[-2], OnNext)


def test_large_parts_interleave_with_other_streams() -> None:
    h = Harness(part_size=100)
    h.client.send(Subscribe("test/large/1000", 1, 1))
    h.client.send(Subscribe("test/range/3", 2, 3))
    events = h.run()
    assert elements(events, 1) == [pattern(0, 1000)]
    assert elements(events, 2) == [k.to_bytes(8, "big") for k in range(3)]
    sids = [m.subscriber for m in h.wire if isinstance(m, (OnNext, OnNextPart, OnNextLastPart))]
    assert sids.index(2) < len(sids) - sids[::-1].index(1) - 1  # stream 2 went between parts


@pytest.mark.parametrize("publisher,error", [
    ("test/error", "test error"),
    ("test/unknown", "unknown publisher"),
    ("test/fixed/3/0", "unknown publisher"),
    ("test/range/x", "unknown publisher"),
    ("test/range/99999999999999999999", "unknown publisher"),
])
def test_errors(publisher: str, error: str) -> None:
    assert Harness().subscribe(publisher) == [Subscribed(1, 0), OnError(1, error)]


def test_large_above_the_limit_is_refused() -> None:
    assert Harness(max_large=100).subscribe("test/large/101")[-1] == OnError(1, "unknown publisher")


def test_never_sends_nothing_but_subscribed() -> None:
    h = Harness()
    assert h.subscribe("test/never", demand=LONG_MAX) == [Subscribed(1, 0)]
    assert not h.service.has_work


def test_cancel_stops_an_unbounded_range() -> None:
    h = Harness()
    h.client.send(Subscribe(f"test/range/{LONG_MAX}", 1, LONG_MAX))
    for event in h.server.receive_data(h.client.data_to_send()):
        h.service.handle(event)
    assert h.service.pump(10) == 10  # bounded per call, however much demand
    assert h.service.has_work
    h.client.receive_data(h.server.data_to_send())
    h.client.send(Cancel(1))
    for event in h.server.receive_data(h.client.data_to_send()):
        h.service.handle(event)
    assert not h.service.has_work
    assert h.service.pump(10) == 0


def test_subscribe_followed_by_garbage_in_one_chunk() -> None:
    h = Harness()
    events = h.server.receive_data(bytes.fromhex("0401700100" "00"))  # subscribe('p', 1), type 0
    for event in events:
        h.service.handle(event)  # must not try to answer on a closed connection
    assert h.server.should_close and not h.service.has_work
