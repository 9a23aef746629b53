"""Demand accounting of a subscriber/publisher Connection pair against a plain model.

The model is one integer per stream: outstanding demand, saturating at
2^63-1 (= unbounded, never decremented again).  Rules drive the real
connections (request, deliver, deliver split, deliver packed, cancel,
complete, request(0) from a peer, Id reuse); invariants compare both sides'
view of the demand with the model.
"""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from reference_impl.common.errors import ProtocolViolation
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
    Subscribe,
    Subscribed,
    encode_message,
)
from reference_impl.rsio.connection import Connection, Element, Role

SIDS = st.sampled_from([1, 2])
AMOUNTS = st.one_of(st.integers(1, 4), st.integers(2**62, LONG_MAX))


def shuttle(a: Connection, b: Connection) -> tuple[list, list]:
    events_a: list = []
    events_b: list = []
    while True:
        to_b, to_a = a.data_to_send(), b.data_to_send()
        if not to_b and not to_a:
            return events_a, events_b
        events_b += b.receive_data(to_b)
        events_a += a.receive_data(to_a)


class DemandMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.sub = Connection(Role.CLIENT)
        self.pub = Connection(Role.SERVER)
        shuttle(self.sub, self.pub)
        self.model: dict[int, int] = {}  # live streams -> outstanding demand
        self.element_size = {1: 0, 2: 2}  # stream 2 is fixed-size, so it can be packed

    def _elements(self, events: list, sid: int) -> int:
        return sum(1 for e in events if isinstance(e, Element) and e.subscriber == sid)

    @rule(sid=SIDS, initial=st.one_of(st.just(0), AMOUNTS))
    def subscribe(self, sid: int, initial: int) -> None:
        if sid in self.model:
            try:
                self.sub.send(Subscribe("p", sid, initial))
            except ProtocolViolation as err:
                assert err.code == "subscriber-in-use"
                return
            raise AssertionError("reused a live Id")
        self.sub.send(Subscribe("p", sid, initial))
        shuttle(self.sub, self.pub)
        self.pub.send(Subscribed(sid, self.element_size[sid]))
        shuttle(self.sub, self.pub)
        self.model[sid] = min(initial, LONG_MAX)

    @precondition(lambda self: self.model)
    @rule(data=st.data(), n=AMOUNTS)
    def request(self, data, n: int) -> None:
        sid = data.draw(st.sampled_from(sorted(self.model)))
        self.sub.send(Request(sid, n))
        shuttle(self.sub, self.pub)
        self.model[sid] = min(self.model[sid] + n, LONG_MAX)

    def _deliver(self, sid: int, count: int, message: OnNext | OnNextPacked) -> None:
        allowed = self.model[sid] >= count
        try:
            self.pub.send(message)
        except ProtocolViolation as err:
            assert not allowed and err.code == "demand-exceeded"
        else:
            assert allowed, f"{count} elements accepted with demand {self.model[sid]}"
        events, _ = shuttle(self.sub, self.pub)
        assert self._elements(events, sid) == (count if allowed else 0)
        if allowed and self.model[sid] < LONG_MAX:
            self.model[sid] -= count

    @precondition(lambda self: 1 in self.model)
    @rule()
    def deliver_one(self) -> None:
        self._deliver(1, 1, OnNext(1, b"e"))

    @precondition(lambda self: 2 in self.model)
    @rule(count=st.integers(1, 4))
    def deliver_packed(self, count: int) -> None:
        self._deliver(2, count, OnNextPacked(2, tuple(b"ab" for _ in range(count))))

    @precondition(lambda self: 1 in self.model)
    @rule(parts=st.integers(0, 3))
    def deliver_split(self, parts: int) -> None:
        """One element in parts + a last part: counted once, when the last part is sent."""
        if self.model[1] == 0:
            first = OnNextPart(1, 0, b"p") if parts else OnNextLastPart(1, 0, b"p")
            try:
                self.pub.send(first)
            except ProtocolViolation as err:
                assert err.code == "demand-exceeded"
                return
            raise AssertionError("a split element started without demand")
        for _ in range(parts):
            self.pub.send(OnNextPart(1, 0, b"p"))
            assert self.pub.publisher_demand(1) == self.model[1]  # not yet counted
        self.pub.send(OnNextLastPart(1, 0, b"q"))
        events, _ = shuttle(self.sub, self.pub)
        assert [e for e in events if isinstance(e, Element)] == [Element(1, b"p" * parts + b"q")]
        if self.model[1] < LONG_MAX:
            self.model[1] -= 1

    @precondition(lambda self: self.model)
    @rule(data=st.data())
    def cancel(self, data) -> None:
        sid = data.draw(st.sampled_from(sorted(self.model)))
        self.sub.send(Cancel(sid))
        _, events = shuttle(self.sub, self.pub)
        assert events == [Cancel(sid)]
        del self.model[sid]

    @precondition(lambda self: self.model)
    @rule(data=st.data())
    def complete(self, data) -> None:
        sid = data.draw(st.sampled_from(sorted(self.model)))
        self.pub.send(OnComplete(sid))
        events, _ = shuttle(self.sub, self.pub)
        assert events == [OnComplete(sid)]
        del self.model[sid]

    @precondition(lambda self: self.model)
    @rule(data=st.data())
    def peer_requests_zero(self, data) -> None:
        """A broken subscriber's request(0) (injected: our Connection refuses to send it)."""
        sid = data.draw(st.sampled_from(sorted(self.model)))
        self.pub.receive_data(encode_message(Request(sid, 0)))
        events, _ = shuttle(self.sub, self.pub)
        assert len(events) == 1 and isinstance(events[0], OnError)  # rule 3.9
        del self.model[sid]

    @invariant()
    def demand_agrees_with_the_model(self) -> None:
        for sid in (1, 2):
            expected = self.model.get(sid)
            assert self.pub.publisher_demand(sid) == expected
            assert self.sub.subscriber_demand(sid) == expected
        assert not self.sub.should_close and not self.pub.should_close


DemandMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=30, deadline=None)
test_demand_accounting = DemandMachine.TestCase
