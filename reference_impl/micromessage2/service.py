"""The Micromessage2 test service of docs/profiles/micromessage2.md ("Test service (server role)"), on top of a server connection.

- SEND to ``test/echo``: one MESSAGE on ``test/echo`` with the same properties,
  payload (and dotnet type, when one was given).
- SEND to ``test/push`` with properties ``count:N;size:S``: N MESSAGE frames on
  ``test/push`` of S bytes each, byte i of message k (both from 0) being
  (k + i) mod 256, as fast as the ack window allows.  N and S may be plain
  digits or FILTER_VALUE numbers (``N10``).
- COMMAND subscribe/unsubscribe; a SEND to any other destination is fanned out
  to every subscriber of exactly that destination (``test/topic`` in the profile).

Every SEND is acked as soon as it is taken in (when acks are active).  Work
waits in a bounded queue while the window is closed; a client that piles up
more than ``max_pending`` messages gets ERROR ``service-overloaded``.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Callable, Iterator

from reference_impl.common.errors import CodecError

from .connection import Connection, State
from .events import Event, MessageReceived, Subscribed, Unsubscribed
from .extensions import parse_filter_value, parse_properties

ECHO = "test/echo"
PUSH = "test/push"
PUSH_TYPE_NAME = "System.Byte[]"
DEFAULT_MAX_PENDING = 1024
DEFAULT_MAX_PUSH_COUNT = 10_000_000


@dataclass(frozen=True)
class Outgoing:
    destination: str
    payload: bytes
    properties: str = ""
    type_name: str | None = None


def push_payload(k: int, size: int) -> bytes:
    """Message k of a push: byte i is (k + i) mod 256."""
    pattern = bytes((k + i) % 256 for i in range(min(size, 256)))
    return (pattern * (size // 256 + 1))[:size]


def _count(properties: dict[str, str], key: str, limit: int) -> int:
    raw = properties.get(key)
    if raw is None:
        raise CodecError("bad-push-request", f"{key} missing")
    if raw.isdigit():
        value = int(raw)
    else:
        kind, parsed = parse_filter_value(raw)
        if kind != "number":
            raise CodecError("bad-push-request", f"{key} is not a number")
        value = int(parsed)
    if not 0 <= value <= limit:
        raise CodecError("bad-push-request", f"{key} {value} outside 0..{limit}")
    return value


class Broker:
    """Subscriptions shared by the services of one server."""

    def __init__(self) -> None:
        self._subscribers: dict[str, set[TestService]] = {}

    def subscribe(self, destination: str, service: TestService) -> None:
        self._subscribers.setdefault(destination, set()).add(service)

    def unsubscribe(self, destination: str, service: TestService) -> None:
        self._subscribers.get(destination, set()).discard(service)

    def drop(self, service: TestService) -> None:
        for services in self._subscribers.values():
            services.discard(service)

    def publish(self, message: Outgoing) -> None:
        for service in list(self._subscribers.get(message.destination, ())):
            service.deliver(message)


class TestService:
    """Drives one server connection: ``handle`` each event, then ``pump`` while it returns True."""

    __test__ = False  # not a pytest class

    def __init__(self, conn: Connection, broker: Broker, wake: Callable[[], None] = lambda: None,
                 max_pending: int = DEFAULT_MAX_PENDING, max_push_count: int = DEFAULT_MAX_PUSH_COUNT) -> None:
        self.conn = conn
        self.broker = broker
        self.wake = wake
        self.max_pending = max_pending
        self.max_push_count = max_push_count
        self._work: deque[Iterator[Outgoing]] = deque()

    def handle(self, event: Event) -> None:
        if self.conn.state is not State.OPEN:
            return
        if isinstance(event, Subscribed):
            self.broker.subscribe(event.destination, self)
        elif isinstance(event, Unsubscribed):
            self.broker.unsubscribe(event.destination, self)
        elif isinstance(event, MessageReceived):
            try:
                self._on_send(event)
            except CodecError as exc:
                self.conn.send_error(exc.code, exc.detail)

    def _on_send(self, event: MessageReceived) -> None:
        if self.conn.received_unacked:
            self.conn.send_ack(event.seq)
        if event.destination == ECHO:
            self._enqueue(iter([Outgoing(ECHO, event.payload, event.properties, event.type_name)]))
        elif event.destination == PUSH:
            properties = parse_properties(event.properties)
            count = _count(properties, "count", self.max_push_count)
            size = _count(properties, "size", self.conn.max_message)
            self._enqueue(self._push(count, size))
        else:
            self.broker.publish(Outgoing(event.destination, event.payload, event.properties, event.type_name))

    def _push(self, count: int, size: int) -> Iterator[Outgoing]:
        type_name = PUSH_TYPE_NAME if self._dotnet else None
        for k in range(count):
            yield Outgoing(PUSH, push_payload(k, size), "", type_name)

    @property
    def _dotnet(self) -> bool:
        return self.conn.negotiated is not None and self.conn.negotiated.active("dotnet")

    def deliver(self, message: Outgoing) -> None:
        """A published message for this subscriber."""
        if self.conn.state is State.OPEN:
            self._enqueue(iter([message]))
            self.wake()

    def _enqueue(self, work: Iterator[Outgoing]) -> None:
        if len(self._work) >= self.max_pending:
            self.conn.send_error("service-overloaded", f"more than {self.max_pending} requests wait for the ack window")
            return
        self._work.append(work)

    def pump(self, budget: int = 64) -> bool:
        """Send up to ``budget`` waiting messages the window allows; True when more could go at once."""
        for _ in range(budget):
            if self.conn.state is not State.OPEN or not self._work or self.conn.send_credit == 0:
                return False
            message = next(self._work[0], None)
            if message is None:
                self._work.popleft()
                continue
            type_name = message.type_name if self._dotnet else None
            self.conn.send_message(message.destination, message.payload, message.properties, type_name)
        return bool(self._work)

    def close(self) -> None:
        self.broker.drop(self)
        self._work.clear()
