"""The rsio test publishers (docs/profiles/rsio.md, "Test service (server role)"), on a Connection.

Every subscription first gets ``subscribed`` (rule 1.9: onSubscribe before
any other signal, also for a refused one).  Then:

``test/range/N``        N elements (variable-size mode); element k, for
                        k = 0..N-1, is k as 8 bytes big-endian; then onComplete.
``test/fixed/N/SIZE``   elementSize = SIZE (1..max_fixed_size); N elements, byte
                        i of element k is (k+i) mod 256 (the byte pattern
                        docs/profiles/micromessage2.md gives for its test/push); as many
                        as demand allows are packed into onNextPacked, up to
                        ``pack_bytes`` per message; then onComplete.
``test/large/SIZE``     one element of SIZE bytes (byte i = i mod 256, the same
                        pattern with k = 0), sent as onNextPart messages of
                        ``part_size`` bytes and a final onNextLastPart when
                        SIZE > part_size, else as one onNext; then onComplete.
``test/error``          onError "test error" at once, with no demand needed.
``test/never``          nothing after subscribed.
anything else           onError "unknown publisher" (also for numbers out of
                        range, e.g. SIZE 0 for test/fixed).

Nothing is sent without demand except subscribed, onComplete and onError.
The service never loops unboundedly: :meth:`TestService.pump` sends at most
``max_messages`` messages, round-robin over the streams, so a transport can
apply backpressure between calls (an unbounded ``test/range`` never ends).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from reference_impl.rsio.codec import (
    LONG_MAX,
    Cancel,
    Message,
    OnComplete,
    OnError,
    OnNext,
    OnNextLastPart,
    OnNextPacked,
    OnNextPart,
    Subscribe,
    Subscribed,
)
from reference_impl.rsio.connection import (
    DEFAULT_MAX_ELEMENT,
    ConnectionClosed,
    Connection,
    Event,
    Side,
    State,
    StreamReleased,
)

DEFAULT_PART_SIZE = 16 << 10
DEFAULT_PACK_BYTES = 16 << 10
DEFAULT_MAX_FIXED_SIZE = 64 << 10

_BYTE_CYCLE = bytes(range(256))


def pattern(start: int, length: int) -> bytes:
    """``length`` bytes where byte i is (start + i) mod 256."""
    start %= 256
    cycles = (start + length) // 256 + 1
    return (_BYTE_CYCLE * cycles)[start:start + length]


@dataclass
class _Range:
    count: int
    next_k: int = 0

    def step(self, sid: int, demand: int) -> Message | None:
        if self.next_k == self.count:
            return OnComplete(sid)
        if demand == 0:
            return None
        self.next_k += 1
        return OnNext(sid, (self.next_k - 1).to_bytes(8, "big"))


@dataclass
class _Fixed:
    count: int
    size: int
    pack_bytes: int
    next_k: int = 0

    def step(self, sid: int, demand: int) -> Message | None:
        if self.next_k == self.count:
            return OnComplete(sid)
        n = min(demand, self.count - self.next_k, max(1, self.pack_bytes // self.size))
        if n == 0:
            return None
        elements = tuple(pattern(k, self.size) for k in range(self.next_k, self.next_k + n))
        self.next_k += n
        return OnNext(sid, elements[0]) if n == 1 else OnNextPacked(sid, elements)


@dataclass
class _Large:
    size: int
    part_size: int
    sent: int = 0
    done: bool = False

    def step(self, sid: int, demand: int) -> Message | None:
        if self.done:
            return OnComplete(sid)
        if self.sent == 0 and demand == 0:
            return None
        if self.size <= self.part_size:
            self.done = True
            return OnNext(sid, pattern(0, self.size))
        chunk = pattern(self.sent, min(self.part_size, self.size - self.sent))
        self.sent += len(chunk)
        if self.sent < self.size:
            return OnNextPart(sid, 0, chunk)
        self.done = True
        return OnNextLastPart(sid, 0, chunk)


@dataclass
class _Never:
    def step(self, sid: int, demand: int) -> Message | None:
        return None


_Producer = _Range | _Fixed | _Large | _Never


class TestService:
    """Publishes the test publishers to whoever subscribes on ``conn``."""

    __test__ = False  # not a pytest test class

    def __init__(
        self,
        conn: Connection,
        *,
        part_size: int = DEFAULT_PART_SIZE,
        pack_bytes: int = DEFAULT_PACK_BYTES,
        max_fixed_size: int = DEFAULT_MAX_FIXED_SIZE,
        max_large: int = DEFAULT_MAX_ELEMENT,
    ) -> None:
        self.conn = conn
        self.part_size = part_size
        self.pack_bytes = pack_bytes
        self.max_fixed_size = max_fixed_size
        self.max_large = max_large
        self._producers: dict[int, _Producer] = {}
        self._idle: set[int] = set()  # streams whose last step sent nothing

    def handle(self, event: Event) -> None:
        """Feed every event the connection returned."""
        if isinstance(event, Subscribe):
            self._start(event)
        elif isinstance(event, Cancel) or (
                isinstance(event, StreamReleased) and event.side is Side.PUBLISHER):
            self._producers.pop(event.subscriber, None)
        elif isinstance(event, ConnectionClosed):
            self._producers.clear()
        self._idle.clear()  # new demand or a new stream may unblock any of them

    @property
    def has_work(self) -> bool:
        return any(sid not in self._idle for sid in self._producers)

    def pump(self, max_messages: int = 64) -> int:
        """Send up to ``max_messages`` messages; return how many were sent."""
        sent = 0
        while sent < max_messages and self.has_work:
            for sid in [s for s in self._producers if s not in self._idle]:
                if sent == max_messages:
                    break
                message = self._producers[sid].step(sid, self.conn.publisher_demand(sid) or 0)
                if message is None:
                    self._idle.add(sid)
                    continue
                self.conn.send(message)
                sent += 1
                if isinstance(message, OnComplete):
                    del self._producers[sid]
        return sent

    def _start(self, subscribe: Subscribe) -> None:
        if self.conn.state is not State.OPEN:
            return  # a later message in the same chunk closed the connection
        sid = subscribe.subscriber
        producer = self._parse(subscribe.publisher)
        element_size = producer.size if isinstance(producer, _Fixed) else 0
        self.conn.send(Subscribed(sid, element_size))
        if producer is None:
            self.conn.send(OnError(sid, "unknown publisher"))
        elif subscribe.publisher == "test/error":
            self.conn.send(OnError(sid, "test error"))
        else:
            self._producers[sid] = producer

    def _parse(self, publisher: str) -> _Producer | None:
        if publisher in ("test/never", "test/error"):
            return _Never()
        if m := re.fullmatch(r"test/range/([0-9]{1,19})", publisher):
            count = int(m[1])
            return _Range(count) if count <= LONG_MAX else None
        if m := re.fullmatch(r"test/fixed/([0-9]{1,19})/([0-9]{1,19})", publisher):
            count, size = int(m[1]), int(m[2])
            if count <= LONG_MAX and 1 <= size <= self.max_fixed_size:
                return _Fixed(count, size, self.pack_bytes)
            return None
        if m := re.fullmatch(r"test/large/([0-9]{1,19})", publisher):
            size = int(m[1])
            return _Large(size, self.part_size) if size <= self.max_large else None
        return None
