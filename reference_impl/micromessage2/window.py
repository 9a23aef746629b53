"""Sequence numbers and ack windows (docs/profiles/micromessage2.md).

Sequence numbers run 1..65535 and wrap to 1; 0 is never used.  Acks are
cumulative across the wrap: acking 3 after 65533 acks 65534, 65535, 1, 2, 3.
Each direction of a connection has its own sequence space and window.
"""

from __future__ import annotations

from collections import deque

from reference_impl.common.errors import ProtocolViolation

from .codec import MAX_SEQUENCE
from .events import LocalProtocolError


def next_seq(seq: int) -> int:
    return 1 if seq == MAX_SEQUENCE else seq + 1


def _ack_through(unacked: deque[int], seq: int) -> int:
    count = unacked.index(seq) + 1
    for _ in range(count):
        unacked.popleft()
    return count


class SendWindow:
    """Our MESSAGE/SEND frames and the peer's acks; ``size`` None means acks are off (no limit)."""

    def __init__(self, size: int | None) -> None:
        self.size = size
        self._last = 0
        self._wrapped = False
        self._unacked: deque[int] = deque()

    @property
    def credit(self) -> int | None:
        """How many more messages may be sent now; None when unlimited."""
        return None if self.size is None else self.size - len(self._unacked)

    @property
    def unacked(self) -> tuple[int, ...]:
        return tuple(self._unacked)

    def allocate(self) -> int:
        """The sequence number of the next message sent."""
        if self.credit == 0:
            raise LocalProtocolError("window-full", f"{self.size} messages await an ack")
        seq = next_seq(self._last)
        self._wrapped = self._wrapped or seq < self._last
        self._last = seq
        if self.size is not None:
            self._unacked.append(seq)
        return seq

    def ack(self, seq: int) -> int:
        """Apply the peer's cumulative ack; the number of messages it newly acknowledges.

        A repeated or older ack is a no-op (0).  An ack for a sequence number
        never sent (0, or past the last one sent before the first wrap) is a
        protocol violation; after the first wrap every number has been sent.
        """
        if seq in self._unacked:
            return _ack_through(self._unacked, seq)
        if seq == 0 or (not self._wrapped and seq > self._last):
            raise ProtocolViolation("ack-not-sent", f"ack for sequence {seq}, last sent {self._last}")
        return 0


class ReceiveWindow:
    """The peer's messages we have not acked yet; a peer sending past the window is caught here.

    Our count of unacked messages never exceeds the sender's (our acks reach it
    later), so more than ``size`` here means the sender broke the window.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self._unacked: deque[int] = deque()

    @property
    def unacked(self) -> tuple[int, ...]:
        return tuple(self._unacked)

    def received(self, seq: int) -> None:
        if len(self._unacked) >= self.size:
            raise ProtocolViolation("window-exceeded", f"message {seq} arrived with {self.size} unacked already")
        self._unacked.append(seq)

    def ack(self, seq: int) -> int:
        """Ack everything up to ``seq``; the number of messages acknowledged."""
        if seq not in self._unacked:
            raise LocalProtocolError("not-received", f"sequence {seq} is not an unacked received message")
        return _ack_through(self._unacked, seq)
