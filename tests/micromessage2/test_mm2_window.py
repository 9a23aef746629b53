"""Ack windows and sequence wrap: unit tests and a stateful test against a plain model."""

from __future__ import annotations

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from reference_impl.common.errors import ProtocolViolation
from reference_impl.micromessage2.events import LocalProtocolError
from reference_impl.micromessage2.window import ReceiveWindow, SendWindow


def _send(window: SendWindow, n: int) -> list[int]:
    return [window.allocate() for _ in range(n)]


def test_spec_wrap_example() -> None:
    # Spec: last acked 65533, then 65534, 65535, 1, 2, 3 sent; an ack of 3 acks all five.
    window = SendWindow(10)
    for _ in range(65533):
        window.allocate()
        window.ack(window.unacked[-1])
    assert _send(window, 5) == [65534, 65535, 1, 2, 3]
    assert window.ack(3) == 5
    assert window.credit == 10


def test_window_full_and_early_ack_resets() -> None:
    window = SendWindow(3)
    assert _send(window, 3) == [1, 2, 3]
    with pytest.raises(LocalProtocolError):
        window.allocate()
    assert window.ack(1) == 1  # an early ack frees room at once
    assert window.credit == 1
    assert window.ack(1) == 0  # repeated: no-op
    assert window.ack(3) == 2


@pytest.mark.parametrize("seq", [0, 4, 65535])
def test_ack_for_sequence_never_sent(seq: int) -> None:
    window = SendWindow(5)
    _send(window, 3)
    with pytest.raises(ProtocolViolation) as exc:
        window.ack(seq)
    assert exc.value.code == "ack-not-sent"


def test_receive_window_catches_an_overrunning_sender() -> None:
    window = ReceiveWindow(2)
    window.received(1)
    window.received(2)
    with pytest.raises(ProtocolViolation) as exc:
        window.received(3)
    assert exc.value.code == "window-exceeded"
    assert window.ack(2) == 2
    window.received(3)
    with pytest.raises(LocalProtocolError):
        window.ack(2)


def _seq(index: int) -> int:
    return index % 65535 + 1


class WindowModel(RuleBasedStateMachine):
    """Model: message i (0-based) has sequence i % 65535 + 1; the first `acked` messages are acked."""

    @initialize(size=st.integers(1, 300))
    def start(self, size: int) -> None:
        self.window = SendWindow(size)
        self.size = size
        self.sent = 0
        self.acked = 0

    def _unacked(self) -> list[int]:
        return [_seq(i) for i in range(self.acked, self.sent)]

    @precondition(lambda self: self.sent - self.acked < self.size)
    @rule()
    def send(self) -> None:
        assert self.window.allocate() == _seq(self.sent)
        self.sent += 1

    @precondition(lambda self: self.sent - self.acked == self.size)
    @rule()
    def send_when_full(self) -> None:
        with pytest.raises(LocalProtocolError):
            self.window.allocate()

    @precondition(lambda self: self.sent > self.acked)
    @rule(data=st.data())
    def ack_unacked(self, data: st.DataObject) -> None:
        index = data.draw(st.integers(self.acked, self.sent - 1))
        assert self.window.ack(_seq(index)) == index - self.acked + 1
        self.acked = index + 1

    @rule(seq=st.integers(0, 65535))
    def ack_any(self, seq: int) -> None:
        unacked = self._unacked()
        never_sent = seq == 0 or (self.sent < 65535 and seq > self.sent)
        if seq in unacked:
            assert self.window.ack(seq) == unacked.index(seq) + 1
            self.acked += unacked.index(seq) + 1
        elif never_sent:
            with pytest.raises(ProtocolViolation):
                self.window.ack(seq)
        else:
            assert self.window.ack(seq) == 0

    @rule(count=st.sampled_from([1, 500, 30000, 65534]))
    def stream(self, count: int) -> None:
        """Send and ack `count` messages a window at a time (crosses the wrap quickly)."""
        left = count
        while left:
            batch = min(left, self.size - (self.sent - self.acked))
            for _ in range(batch):
                assert self.window.allocate() == _seq(self.sent)
                self.sent += 1
            if self.sent > self.acked:
                self.window.ack(_seq(self.sent - 1))
                self.acked = self.sent
            left -= batch

    @invariant()
    def matches_model(self) -> None:
        assert list(self.window.unacked) == self._unacked()
        assert self.window.credit == self.size - (self.sent - self.acked)


TestWindowModel = WindowModel.TestCase
TestWindowModel.settings = settings(max_examples=40, stateful_step_count=25, deadline=None)
