"""Sans-IO STMP connection, both roles, against hand-computed bytes.

Hand computation (docs/profiles/stmp.md): the client's negotiation for [0.1] on TCP
is Request ENCODING 5 (0x68), ID 0000, ACTION 00000000, PS 00000001, version
byte 0x01; the server's Ok is Response ENCODING 5 (0xE8), ID 0000, STATUS 00,
PS 00000001, 01.  A Response without payload is c0 + ID + STATUS.
"""

from __future__ import annotations

import struct

import pytest

from reference_impl.common.errors import CodecError
from reference_impl.stmp.codec import Notify, Request, Response
from reference_impl.stmp.connection import (
    Closed,
    Connection,
    IdsExhausted,
    Negotiated,
    NotifyReceived,
    PingReceived,
    RequestReceived,
    ResponseReceived,
)

NEGOTIATE = bytes.fromhex("68 0000 00000000 00000001 01")
NEGOTIATED = bytes.fromhex("e8 0000 00 00000001 01")


def h(text: str) -> bytes:
    return bytes.fromhex(text)


def server(**options) -> Connection:
    options.setdefault("heartbeat_interval", 5.0)
    options.setdefault("heartbeat_timeout", 15.0)
    options.setdefault("request_timeout", 10.0)
    return Connection("server", framing=options.pop("framing", "stream"), **options)


def client(**options) -> Connection:
    options.setdefault("heartbeat_interval", 5.0)
    options.setdefault("heartbeat_timeout", 15.0)
    options.setdefault("request_timeout", 10.0)
    return Connection("client", framing=options.pop("framing", "stream"), **options)


def open_server(**options) -> Connection:
    conn = server(**options)
    conn.receive_data(NEGOTIATE, 0.0)
    assert conn.data_to_send() == [NEGOTIATED]
    assert conn.events() == [Negotiated((0, 1))]
    return conn


def open_client(**options) -> Connection:
    conn = client(**options)
    conn.start(0.0)
    assert conn.data_to_send() == [NEGOTIATE]
    conn.receive_data(NEGOTIATED, 0.0)
    assert conn.events() == [Negotiated((0, 1))]
    return conn


def response_bytes(request_id: int, status: int = 0) -> bytes:
    return bytes([0xC0]) + struct.pack(">HB", request_id, status)


# -- server negotiation ------------------------------------------------------

def test_server_picks_the_highest_common_version() -> None:
    conn = server(versions=[(0, 1), (0, 2), (1, 0)])
    conn.receive_data(h("68 0000 00000000 00000003 01 02 21"), 0.0)
    assert conn.data_to_send() == [h("e8 0000 00 00000001 02")]
    assert conn.events() == [Negotiated((0, 2))] and conn.is_open


@pytest.mark.parametrize(("wire", "reply", "closed"), [
    ("68 0000 00000000 00000001 f0", "c0 0000 35", Closed("version-not-supported")),
    ("40 0000 00000000", "c0 0000 35", Closed("version-not-supported")),  # empty list
    ("50 0000 00000000 00000002 5b5d", "c0 0000 20", Closed("protocol-error", "negotiation-encoding")),
    ("40 0007 00000100", "c0 0007 20", Closed("protocol-error", "not-negotiated")),
    ("68 0003 00000000 00000001 01", "c0 0003 20", Closed("protocol-error", "not-negotiated")),
    ("00", "c0 0000 20", Closed("protocol-error", "not-negotiated")),
    ("80 00000100", "c0 0000 20", Closed("protocol-error", "not-negotiated")),
    ("c0 0009 00", "c0 0009 20", Closed("protocol-error", "not-negotiated")),
    ("01", "c0 0000 20", Closed("codec-error", "reserved-bits")),
])
def test_server_refuses_bad_openings(wire: str, reply: str, closed: Closed) -> None:
    conn = server()
    conn.receive_data(h(wire), 0.0)
    assert conn.data_to_send() == [h(reply)]
    assert conn.events() == [closed]
    assert conn.should_close


def test_server_answers_too_large_with_the_request_id_then_closes() -> None:
    conn = open_server(max_payload=16)
    conn.receive_data(h("68 0009 00000100 00000011"), 1.0)  # PS 17 > 16, no payload yet
    assert conn.data_to_send() == [h("c0 0009 26")]
    assert conn.events() == [Closed("codec-error", "too-large")]


def test_messages_before_invalid_bytes_are_handled_first() -> None:
    conn = open_server()
    conn.receive_data(h("40 0005 00000100") + h("ff"), 1.0)
    assert conn.events() == [RequestReceived(Request(5, 0x100, 0, b"")), Closed("codec-error", "reserved-bits")]
    assert conn.data_to_send() == [h("c0 0000 20")]


def test_renegotiation_is_refused_but_keeps_the_connection() -> None:
    conn = open_server()
    conn.receive_data(h("68 0004 00000000 00000001 01"), 1.0)
    assert conn.data_to_send() == [h("c0 0004 20")]
    assert conn.events() == [] and conn.is_open


def test_server_speaks_text_to_a_text_peer() -> None:
    conn = server(framing="message")
    conn.receive_message("1|5|0|0|01", 0.0)
    assert conn.data_to_send() == ["3|5|0|0|01"]
    conn.receive_message("1|5|1|256|a|b", 1.0)
    assert conn.events() == [Negotiated((0, 1)), RequestReceived(Request(1, 256, 5, b"a|b"))]
    conn.send_response(1, 0, 5, b"a|b")
    assert conn.data_to_send() == ["3|5|1|0|a|b"]


def test_server_binary_message_framing_has_no_ps() -> None:
    conn = server(framing="message")
    conn.receive_message(h("68 0000 00000000 01"), 0.0)
    assert conn.data_to_send() == [h("e8 0000 00 01")]


def test_split_text_message_in_both_directions() -> None:
    conn = server(framing="message")
    conn.receive_message("1|5|0|0|01", 0.0)
    conn.data_to_send()
    conn.receive_message("1|5|3|256", 1.0)
    assert conn.events() == [Negotiated((0, 1))]  # header alone is no message yet
    conn.receive_message(b"\xff\xfe", 1.0)
    assert conn.events() == [RequestReceived(Request(3, 256, 5, b"\xff\xfe"))]
    conn.send_response(3, 0, 5, b"\xff\xfe")
    assert conn.data_to_send() == ["3|5|3|0", b"\xff\xfe"]


def test_split_header_followed_by_text_is_refused() -> None:
    conn = server(framing="message")
    conn.receive_message("1|5|0|0|01", 0.0)
    conn.receive_message("1|5|3|256", 1.0)
    conn.receive_message("0", 1.0)
    assert conn.data_to_send() == ["3|5|0|0|01", "3|0|3|32"]
    assert conn.events()[-1] == Closed("protocol-error", "split-payload-missing")


# -- client ------------------------------------------------------------------

def test_client_text_negotiation() -> None:
    conn = client(framing="message", text=True)
    conn.start(0.0)
    assert conn.data_to_send() == ["1|5|0|0|01"]
    conn.receive_message("3|5|0|0|01", 0.5)
    assert conn.events() == [Negotiated((0, 1))]


@pytest.mark.parametrize(("reply", "closed"), [
    ("c0 0000 35", Closed("version-not-supported")),
    ("c0 0000 20", Closed("negotiation-failed", "negotiation-refused")),
    ("e8 0000 00 00000001 02", Closed("negotiation-failed", "version-unoffered")),
    ("e8 0000 00 00000002 01 01", Closed("negotiation-failed", "version-unoffered")),
    ("a8 00000101 00000001 61", Closed("protocol-error", "not-negotiated")),
])
def test_client_negotiation_failures(reply: str, closed: Closed) -> None:
    conn = client()
    conn.start(0.0)
    conn.data_to_send()
    conn.receive_data(h("00") + h(reply), 0.1)  # an early ping is ignored
    assert conn.events() == [closed] and conn.should_close


def test_client_negotiation_times_out() -> None:
    conn = client()
    conn.start(0.0)
    conn.tick(9.9)
    assert conn.events() == []
    conn.tick(10.0)
    assert conn.events() == [Closed("negotiation-timeout")]


def test_send_request_bytes_and_sequential_ids() -> None:
    conn = open_client()
    assert conn.send_request(0x100, 5, b"hi", 1.0) == 1
    assert conn.send_request(0x100, 0, b"", 1.0) == 2
    assert conn.data_to_send() == [h("68 0001 00000100 00000002 6869"), h("40 0002 00000100")]
    conn.send_notify(0x101, 5, b"ab")
    assert conn.data_to_send() == [h("a8 00000101 00000002 6162")]


def test_ids_wrap_to_one_and_skip_outstanding() -> None:
    conn = open_client(request_timeout=1e9)
    assert conn.send_request(0x100, 0, b"", 0.0) == 1  # stays outstanding
    for expected in range(2, 0x10000):
        assert conn.send_request(0x100, 0, b"", 0.0) == expected
        conn.receive_data(response_bytes(expected), 0.0)
    assert conn.send_request(0x100, 0, b"", 0.0) == 2  # 0xFFFF -> 1, but 1 is outstanding
    assert conn.outstanding == {1, 2}
    conn.receive_data(response_bytes(1), 0.0)
    assert conn.send_request(0x100, 0, b"", 0.0) == 3


def test_all_ids_outstanding_is_a_clear_error() -> None:
    conn = open_client(request_timeout=1e9)
    for _ in range(0xFFFF):
        conn.send_request(0x100, 0, b"", 0.0)
    with pytest.raises(IdsExhausted):
        conn.send_request(0x100, 0, b"", 0.0)
    conn.receive_data(response_bytes(700), 0.0)
    assert conn.send_request(0x100, 0, b"", 0.0) == 700


def test_invalid_request_takes_no_id() -> None:
    conn = open_client()
    with pytest.raises(CodecError):
        conn.send_request(0x100, 0, b"payload with ENCODING 0", 0.0)
    assert conn.outstanding == set()
    assert conn.send_request(0x100, 0, b"", 0.0) == 1


def test_request_timeout_completes_locally_and_drops_the_late_reply() -> None:
    conn = open_client()
    request_id = conn.send_request(0x100, 0, b"", 1.0)
    conn.tick(10.9)
    assert [e for e in conn.events() if isinstance(e, ResponseReceived)] == []
    conn.tick(11.0)
    assert conn.events() == [ResponseReceived(Response(request_id, 0x25, 0, b""), local=True)]
    assert conn.outstanding == set()
    conn.receive_data(response_bytes(request_id), 11.5)
    assert conn.events() == []  # unknown ID: dropped


def test_response_matches_and_unknown_ids_are_dropped() -> None:
    conn = open_client()
    conn.send_request(0x100, 5, b"x", 0.0)
    conn.receive_data(response_bytes(9) + h("e8 0001 00 00000001 78"), 0.5)
    assert conn.events() == [ResponseReceived(Response(1, 0, 5, b"x"))]


def test_client_reports_notifies_and_pings() -> None:
    conn = open_client()
    conn.receive_data(h("00 a8 00000101 00000001 61"), 1.0)
    assert conn.events() == [PingReceived(), NotifyReceived(Notify(0x101, 5, b"a"))]


def test_text_client_sends_binary_payloads_split() -> None:
    conn = client(framing="message", text=True)
    conn.start(0.0)
    conn.receive_message("3|5|0|0|01", 0.0)
    conn.send_request(0x100, 5, b"\xff", 0.0)
    conn.send_request(0x100, 2, b'"ok"', 0.0)
    assert conn.data_to_send() == ["1|5|0|0|01", "1|5|1|256", b"\xff", '1|2|2|256|"ok"']


def test_sending_before_negotiation_is_refused() -> None:
    conn = client()
    with pytest.raises(RuntimeError):
        conn.send_request(0x100, 0, b"", 0.0)


# -- heartbeat ---------------------------------------------------------------

@pytest.mark.parametrize("make", [open_client, open_server])
def test_heartbeat_pings_and_times_out(make) -> None:
    conn = make()
    conn.data_to_send()
    conn.tick(4.9)
    assert conn.data_to_send() == []
    conn.tick(5.0)
    assert conn.data_to_send() == [b"\x00"]
    conn.receive_data(b"\x00", 8.0)
    assert conn.events() == [PingReceived()]
    conn.tick(10.0)
    conn.tick(22.9)
    assert conn.data_to_send() == [b"\x00", b"\x00"] and not conn.should_close
    conn.tick(23.0)  # nothing received since 8.0
    assert conn.events() == [Closed("heartbeat-timeout")] and conn.should_close


def test_no_heartbeat_before_negotiation() -> None:
    conn = server()
    conn.tick(100.0)
    assert conn.data_to_send() == [] and conn.events() == [] and not conn.should_close


def test_text_heartbeat_is_zero() -> None:
    conn = client(framing="message", text=True)
    conn.start(0.0)
    conn.receive_message("3|5|0|0|01", 0.0)
    conn.data_to_send()
    conn.tick(5.0)
    assert conn.data_to_send() == ["0"]


def test_close_and_connection_lost_report_once() -> None:
    conn = open_client()
    conn.close()
    conn.connection_lost()
    assert conn.events() == [Closed("local")]
    conn.receive_data(b"\x00", 1.0)
    assert conn.events() == []
