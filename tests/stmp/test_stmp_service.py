"""The STMP test service (docs/profiles/stmp.md "Test service (server role)") over a sans-IO server connection.

Expected bytes are hand-computed: Response without payload = c0 ID STATUS;
echo of a RAW request = e8 ID 00 PS payload; Notify RAW = a8 ACTION PS payload.
"""

from __future__ import annotations

from reference_impl.stmp.connection import Connection
from reference_impl.stmp.service import ConformanceService

NEGOTIATE = bytes.fromhex("68 0000 00000000 00000001 01")


class Harness:
    def __init__(self, **service_options) -> None:
        self.conn = Connection("server", framing="stream", heartbeat_interval=None,
                               heartbeat_timeout=None, request_timeout=10.0)
        self.service = ConformanceService(self.conn, **service_options)
        self.feed(NEGOTIATE, 0.0)

    def feed(self, hexwire: str | bytes, now: float) -> list[bytes]:
        self.conn.receive_data(bytes.fromhex(hexwire) if isinstance(hexwire, str) else hexwire, now)
        for event in self.conn.events():
            self.service.handle(event, now)
        return self.conn.data_to_send()

    def tick(self, now: float) -> list[bytes]:
        self.conn.tick(now)
        self.service.tick(now)
        return self.conn.data_to_send()


def h(text: str) -> bytes:
    return bytes.fromhex(text)


def test_echo_keeps_encoding_and_payload() -> None:
    service = Harness()
    assert service.feed("68 0001 00000100 00000002 6869", 1.0) == [h("e8 0001 00 00000002 6869")]
    assert service.feed("50 0002 00000100 00000002 7b7d", 1.0) == [h("d0 0002 00 00000002 7b7d")]
    assert service.feed("40 0003 00000100", 1.0) == [h("c0 0003 00")]


def test_notify_0x101_is_sent_back_once() -> None:
    service = Harness()
    assert service.feed("a8 00000101 00000002 6162", 1.0) == [h("a8 00000101 00000002 6162")]
    assert service.feed("a8 00000202 00000002 6162", 1.0) == []  # other notifies need no reply


def test_delay_replies_ok_after_the_delay() -> None:
    service = Harness()
    assert service.feed("68 0002 00000102 00000004 000001f4", 1.0) == []  # 500 ms
    assert service.tick(1.49) == []
    assert service.tick(1.5) == [h("c0 0002 00")]
    assert service.tick(3.0) == []


def test_delays_complete_in_due_order() -> None:
    service = Harness()
    service.feed("68 0001 00000102 00000004 000003e8", 0.0)  # 1000 ms
    service.feed("68 0002 00000102 00000004 00000064", 0.0)  # 100 ms
    assert service.tick(2.0) == [h("c0 0002 00"), h("c0 0001 00")]


def test_delay_with_a_bad_payload_is_a_bad_request() -> None:
    service = Harness()
    assert service.feed("68 0003 00000102 00000002 0001", 1.0) == [h("c0 0003 20")]
    assert service.feed("40 0004 00000102", 1.0) == [h("c0 0004 20")]


def test_too_many_waiting_delays() -> None:
    service = Harness(max_delayed=1)
    service.feed("68 0001 00000102 00000004 00000064", 0.0)
    assert service.feed("68 0002 00000102 00000004 00000064", 0.0) == [h("c0 0002 27")]


def test_unknown_actions() -> None:
    service = Harness()
    assert service.feed("40 0004 00000200", 1.0) == [h("c0 0004 24")]  # not reserved: NotFound
    assert service.feed("40 0005 00000050", 1.0) == [h("c0 0005 31")]  # reserved: NotImplemented
    assert service.feed("40 0006 000000ff", 1.0) == [h("c0 0006 31")]
    assert service.feed("40 0007 00000001", 1.0) == [h("c0 0007 31")]
    assert service.feed("40 0008 ffffffff", 1.0) == [h("c0 0008 24")]


def test_no_reply_after_the_connection_closed() -> None:
    service = Harness()
    service.feed("68 0001 00000102 00000004 00000064", 0.0)
    service.conn.close()
    assert service.tick(1.0) == []
