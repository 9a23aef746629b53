"""The test service in memory: echo, push under the ack window, pub/sub fan-out."""

from __future__ import annotations

from reference_impl.micromessage2.connection import Connection, Role, State
from reference_impl.micromessage2.events import AckReceived, ErrorReceived, MessageReceived
from reference_impl.micromessage2.service import Broker, TestService, push_payload


class Link:
    """A client connection wired to a server connection running the service."""

    def __init__(self, broker: Broker, **client_options) -> None:
        self.client = Connection(Role.CLIENT, **client_options)
        self.server = Connection(Role.SERVER)
        self.service = TestService(self.server, broker)
        self.to_client()

    def to_server(self) -> None:
        if data := self.client.data_to_send():
            for event in self.server.receive_data(data, 0.0):
                self.service.handle(event)

    def pump(self) -> None:
        while self.service.pump():
            pass

    def to_client(self) -> list:
        """Move bytes both ways until quiet; the client's events."""
        events: list = []
        while True:
            self.to_server()
            self.pump()
            data = self.server.data_to_send()
            if not data:
                return events
            events += self.client.receive_data(data, 0.0)


def messages(events: list) -> list[MessageReceived]:
    return [e for e in events if isinstance(e, MessageReceived)]


def test_push_payload_pattern() -> None:
    assert push_payload(0, 4) == bytes([0, 1, 2, 3])
    assert push_payload(255, 3) == bytes([255, 0, 1])
    assert push_payload(2, 300)[298:] == bytes([(2 + 298) % 256, (2 + 299) % 256])


def test_echo_with_properties_and_ack_of_the_send() -> None:
    link = Link(Broker(), required="ack")
    link.client.send_message("test/echo", b"ping", "k:N1;")
    events = link.to_client()
    assert AckReceived(1, 1) in events
    [echo] = messages(events)
    assert (echo.destination, echo.properties, echo.payload) == ("test/echo", "k:N1;", b"ping")


def test_echo_keeps_the_dotnet_type() -> None:
    link = Link(Broker(), required="dotnet")
    link.client.send_message("test/echo", b"{}", type_name="App.Thing")
    [echo] = messages(link.to_client())
    assert echo.type_name == "App.Thing"


def test_push_respects_the_window() -> None:
    link = Link(Broker(), required="batch-ack:max-count=3")
    link.client.send_message("test/push", b"", "count:10;size:5;")
    received = messages(link.to_client())
    assert [m.seq for m in received] == [1, 2, 3]  # the window stops the push
    while len(received) < 10:
        link.client.send_ack()
        received += messages(link.to_client())
    assert [m.seq for m in received] == list(range(1, 11))
    assert [m.payload for m in received] == [push_payload(k, 5) for k in range(10)]
    link.client.send_ack()
    assert messages(link.to_client()) == []


def test_push_accepts_filter_value_numbers() -> None:
    link = Link(Broker())
    link.client.send_message("test/push", b"", "count:N2;size:N1;")
    assert [m.payload for m in messages(link.to_client())] == [b"\x00", b"\x01"]


def test_bad_push_request_gets_error() -> None:
    link = Link(Broker())
    link.client.send_message("test/push", b"", "size:1;")
    events = link.to_client()
    assert [e.reason.split(":")[0] for e in events if isinstance(e, ErrorReceived)] == ["bad-push-request"]
    assert link.server.state is State.CLOSING


def test_pubsub_fan_out() -> None:
    broker = Broker()
    a = Link(broker, required="pubsub")
    b = Link(broker, required="pubsub")
    outsider = Link(broker, required="pubsub")
    for link in (a, b):
        link.client.send_command("subscribe", {"destination": "test/topic"})
        link.to_client()
    outsider.client.send_message("test/topic", b"news", "k:Tx;")
    outsider.to_client()
    for link in (a, b):
        [m] = messages(link.to_client())
        assert (m.destination, m.properties, m.payload) == ("test/topic", "k:Tx;", b"news")
    assert messages(outsider.to_client()) == []
    a.client.send_command("unsubscribe", {"destination": "test/topic"})
    a.to_client()
    outsider.client.send_message("test/topic", b"more")
    outsider.to_client()
    assert messages(a.to_client()) == []
    assert [m.payload for m in messages(b.to_client())] == [b"more"]


def test_overload_gets_error() -> None:
    link = Link(Broker(), required="ack")
    link.service.max_pending = 2
    link.client.send_message("test/push", b"", "count:5;size:1;")
    link.to_client()  # one message out, the window (1) closes; the push waits
    link.client.send_message("test/echo", b"x")  # acked at once, queued behind the push: 2 pending
    link.to_client()
    assert link.server.state is State.OPEN
    link.client.send_message("test/echo", b"x")
    errors = [e for e in link.to_client() if isinstance(e, ErrorReceived)]
    assert [e.reason.split(":")[0] for e in errors] == ["service-overloaded"]
