"""Stateful test: an STMP client and a server running the test service, wired in memory.

Hypothesis interleaves requests, notifies, partial (chunked) deliveries and the
passing of time.  The model checks the docs/profiles/stmp.md rules: request IDs are
1..0xFFFF, allocated in order and never equal to an outstanding one; every
request completes exactly once, with the service's answer or a local 0x25; each
0x101 notify comes back once, in order; heartbeats keep the pair alive.
"""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from reference_impl.stmp.codec import Notify, Response
from reference_impl.stmp.connection import (
    Connection,
    Negotiated,
    NotifyReceived,
    PingReceived,
    RequestReceived,
    ResponseReceived,
)
from reference_impl.stmp.service import ACTION_DELAY, ACTION_ECHO, ACTION_NOTIFY_ECHO, ConformanceService

REQUEST_TIMEOUT = 10.0
NOT_FOUND_ACTION = 0x200
UNKNOWN_RESERVED_ACTION = 0x50


class ConnectionPair(RuleBasedStateMachine):
    framing = "stream"
    text = False

    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0
        options = dict(framing=self.framing, heartbeat_interval=5.0, heartbeat_timeout=15.0,
                       request_timeout=REQUEST_TIMEOUT)
        self.client = Connection("client", text=self.text, **options)
        self.server = Connection("server", **options)
        self.service = ConformanceService(self.server)
        self.to_server: list[bytes | str] = []
        self.to_client: list[bytes | str] = []
        self.expected: dict[int, Response] = {}  # outstanding request ID -> the service's answer
        self.last_id = 0
        self.sent = self.completed = 0
        self.notifies_sent: list[Notify] = []
        self.notifies_back: list[Notify] = []
        self.client.start(self.now)
        self._settle()
        assert self.client.version == (0, 1) and self.server.version == (0, 1)

    # -- plumbing ------------------------------------------------------------

    def _collect(self) -> None:
        for event in self.server.events():
            assert isinstance(event, (Negotiated, RequestReceived, NotifyReceived, PingReceived)), event
            self.service.handle(event, self.now)
        for event in self.client.events():
            if isinstance(event, ResponseReceived):
                answer = self.expected.pop(event.response.id)  # KeyError: not outstanding
                if event.local:
                    assert event.response == Response(event.response.id, 0x25, 0, b"")
                else:
                    assert event.response == answer
                self.completed += 1
            elif isinstance(event, NotifyReceived):
                self.notifies_back.append(event.notify)
            else:
                assert isinstance(event, (Negotiated, PingReceived)), event
        self.to_server += self.client.data_to_send()
        self.to_client += self.server.data_to_send()

    def _deliver(self, receiver: Connection, pipe: list[bytes | str], cut: int | None = None) -> None:
        if self.framing == "stream":
            wire = b"".join(pipe)  # type: ignore[arg-type]
            cut = len(wire) if cut is None else min(cut, len(wire))
            pipe[:] = [wire[cut:]] if cut < len(wire) else []
            receiver.receive_data(wire[:cut], self.now)
        else:
            cut = len(pipe) if cut is None else min(cut, len(pipe))
            frames, pipe[:] = pipe[:cut], pipe[cut:]
            for frame in frames:
                receiver.receive_message(frame, self.now)
        self._collect()

    def _settle(self) -> None:
        self._collect()
        while self.to_server or self.to_client:
            self._deliver(self.server, self.to_server)
            self._deliver(self.client, self.to_client)

    def _request(self, action: int, encoding: int, payload: bytes, answer: Response) -> None:
        request_id = self.client.send_request(action, encoding, payload, self.now)
        expected_id = self.last_id % 0xFFFF + 1
        while expected_id in self.expected:
            expected_id = expected_id % 0xFFFF + 1
        assert request_id == expected_id
        self.expected[request_id] = Response(request_id, answer.status, answer.encoding, answer.payload)
        self.last_id = request_id
        self.sent += 1
        self._collect()

    # -- rules ---------------------------------------------------------------

    @rule(encoding=st.integers(0, 5), payload=st.binary(min_size=1, max_size=24))
    def echo(self, encoding: int, payload: bytes) -> None:
        payload = payload if encoding else b""
        self._request(ACTION_ECHO, encoding, payload, Response(0, 0x00, encoding, payload))

    @rule(action=st.sampled_from([NOT_FOUND_ACTION, UNKNOWN_RESERVED_ACTION]))
    def unknown_action(self, action: int) -> None:
        status = 0x24 if action == NOT_FOUND_ACTION else 0x31
        self._request(action, 0, b"", Response(0, status, 0, b""))

    @rule(ms=st.integers(0, 20_000))
    def delay(self, ms: int) -> None:
        self._request(ACTION_DELAY, 5, ms.to_bytes(4, "big"), Response(0, 0x00, 0, b""))

    @rule(encoding=st.integers(1, 5), payload=st.binary(min_size=1, max_size=24))
    def notify(self, encoding: int, payload: bytes) -> None:
        self.client.send_notify(ACTION_NOTIFY_ECHO, encoding, payload)
        self.notifies_sent.append(Notify(ACTION_NOTIFY_ECHO, encoding, payload))
        self._collect()

    @rule(cut=st.integers(0, 64))
    def deliver_some_to_server(self, cut: int) -> None:
        self._deliver(self.server, self.to_server, cut)

    @rule(cut=st.integers(0, 64))
    def deliver_some_to_client(self, cut: int) -> None:
        self._deliver(self.client, self.to_client, cut)

    @rule(dt=st.floats(0.0, 4.0))
    def advance(self, dt: float) -> None:
        self._settle()
        self.now += dt
        self.client.tick(self.now)
        self.server.tick(self.now)
        self.service.tick(self.now)
        self._settle()

    @invariant()
    def ids_are_unique_and_tracked(self) -> None:
        assert self.client.outstanding == set(self.expected)
        assert all(1 <= i <= 0xFFFF for i in self.expected)
        assert self.client.is_open and self.server.is_open

    def teardown(self) -> None:
        for _ in range(10):  # 40 s: past every delay and every request timeout
            self.advance(4.0)
        assert self.expected == {}
        assert self.completed == self.sent
        assert self.notifies_back == self.notifies_sent
        assert self.client.is_open and self.server.is_open


class MessagePair(ConnectionPair):
    framing = "message"


class TextPair(ConnectionPair):
    framing = "message"
    text = True


FAST = settings(max_examples=40, stateful_step_count=30, deadline=None)
TestStreamPair = ConnectionPair.TestCase
TestStreamPair.settings = FAST
TestMessagePair = MessagePair.TestCase
TestMessagePair.settings = FAST
TestTextPair = TextPair.TestCase
TestTextPair.settings = FAST
