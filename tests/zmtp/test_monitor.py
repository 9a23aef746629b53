"""The ZMTP wire monitors (zmtp, mc0, MTL control and data) on hand-made bytes: the greeting and frames
are written out octet by octet from RFC 23/26, not produced by the reference's encoders."""

from __future__ import annotations

from reference_impl.mc0.monitor import Mc0Monitor
from reference_impl.mtl.monitor import ControlMonitor, DataMonitor
from reference_impl.zmtp.monitor import Side, ZmtpMonitor

CLIENT, SERVER = Side.CLIENT, Side.SERVER
MORE, COMMAND = 0x01, 0x04


def greeting(mechanism: bytes, as_server: int) -> bytes:
    return b"\xff" + bytes(8) + b"\x7f" + b"\x03\x01" + mechanism.ljust(20, b"\x00") + bytes([as_server]) + bytes(31)


def frame(body: bytes, flags: int = 0) -> bytes:
    return bytes([flags, len(body)]) + body


def message(*parts: bytes) -> bytes:
    return b"".join(frame(p, MORE if i < len(parts) - 1 else 0) for i, p in enumerate(parts))


READY_DEALER = frame(b"\x05READY" + b"\x0bSocket-Type" + b"\x00\x00\x00\x06DEALER", COMMAND)
READY_ROUTER = frame(b"\x05READY" + b"\x0bSocket-Type" + b"\x00\x00\x00\x06ROUTER", COMMAND)


def null_session(monitor) -> None:
    for side, ready in ((CLIENT, READY_DEALER), (SERVER, READY_ROUTER)):
        assert monitor.feed(side, greeting(b"NULL", 0)) == []
        assert monitor.feed(side, ready) == []


def rules(monitor) -> list[tuple[str, str]]:
    return [(v.side.value, v.rule) for v in monitor.violations]


def test_a_greeting_fed_octet_by_octet_then_a_clean_null_exchange() -> None:
    monitor = ZmtpMonitor()
    for octet in greeting(b"NULL", 0):
        assert monitor.feed(CLIENT, bytes([octet])) == []
    monitor.feed(SERVER, greeting(b"NULL", 0) + READY_ROUTER)
    monitor.feed(CLIENT, READY_DEALER + message(b"", b"hello"))
    assert monitor.violations == [] and monitor.messages == 1 and monitor.mechanism == "NULL"


def test_a_message_before_ready_and_a_bad_signature_name_their_side() -> None:
    monitor = ZmtpMonitor()
    monitor.feed(CLIENT, greeting(b"NULL", 0) + frame(b"early"))
    monitor.feed(SERVER, b"\x00" + bytes(63))  # not ff: a ZMTP 1.0 peer or not ZMTP
    assert rules(monitor) == [("client", "message-before-handshake"), ("server", "bad-signature")]
    assert monitor.feed(SERVER, greeting(b"NULL", 0)) == []  # an unreadable side is not checked further


def curve_hello(nonce: int) -> bytes:
    body = b"\x05HELLO" + b"\x01\x00" + bytes(72) + b"\x11" * 32 + nonce.to_bytes(8, "big") + b"\x22" * 80
    assert len(body) == 200  # RFC 26: HELLO is 200 octets
    return bytes([COMMAND | 0x02]) + len(body).to_bytes(8, "big") + body  # long size form


def curve_message(nonce: int) -> bytes:
    return frame(b"\x07MESSAGE" + nonce.to_bytes(8, "big") + b"\x33" * 17)  # libzmq: no COMMAND flag


def test_curve_hello_must_come_first_and_say_version_one() -> None:
    monitor = ZmtpMonitor()
    monitor.feed(CLIENT, greeting(b"CURVE", 0))
    bad = bytearray(curve_hello(1))
    bad[9 + 7] = 2  # version 2.0
    monitor.feed(CLIENT, bytes(bad))
    monitor.feed(SERVER, greeting(b"CURVE", 0) + frame(b"\x05READY" + bytes(30), COMMAND))
    assert rules(monitor) == [("client", "curve-hello-version"), ("server", "curve-handshake-order")]
    assert any("as-server 0" in note for note in monitor.notes)  # libzmq's 0: said, not held against it


def test_a_client_claiming_the_server_role_breaks_the_greeting() -> None:
    monitor = ZmtpMonitor()
    monitor.feed(CLIENT, greeting(b"CURVE", 1))
    assert rules(monitor) == [("client", "client-as-server")]


def test_after_the_curve_handshake_only_increasing_message_boxes() -> None:
    monitor = Mc0Monitor()
    initiate = b"\x08INITIATE" + bytes(96) + (2).to_bytes(8, "big") + bytes(257 - 9 - 96 - 8)
    monitor.feed(CLIENT, greeting(b"CURVE", 0) + curve_hello(1)
                 + bytes([COMMAND | 0x02]) + len(initiate).to_bytes(8, "big") + initiate)
    monitor.feed(SERVER, greeting(b"CURVE", 1) + frame(b"\x07WELCOME" + bytes(160), COMMAND)
                 + frame(b"\x05READY" + (1).to_bytes(8, "big") + bytes(24), COMMAND))
    assert monitor.violations == []
    monitor.feed(CLIENT, curve_message(3) + curve_message(3) + frame(b"PUT"))
    monitor.feed(SERVER, curve_message(2))
    assert rules(monitor) == [("client", "curve-nonce-not-increasing"), ("client", "clear-frame-under-curve")]
    assert monitor.messages == 0 and any("encrypted" in note for note in monitor.notes)


def test_mc0_messages_are_read_with_their_sides_verbs() -> None:
    monitor = Mc0Monitor()
    null_session(monitor)
    monitor.feed(CLIENT, message(b"", b"CONNECT", b"ID", b"1", b"VERSION", b"0.3"))
    monitor.feed(SERVER, message(b"", b"OK", b"ID", b"1"))
    assert monitor.violations == []
    monitor.feed(SERVER, message(b"", b"OK", b"ID", b"9"))  # no request carried ID 9
    monitor.feed(SERVER, message(b"", b"SUB", b"", b"t"))  # a connector's verb from the broker
    monitor.feed(CLIENT, message(b"PUT", b"TOPIC", b"t"))  # no empty delimiter first
    assert rules(monitor) == [("server", "mc0-answer-to-no-request"), ("server", "mc0-verb-of-the-other-side"),
                              ("client", "mc0-no-delimiter")]


def test_mtl_control_keeps_req_lock_step_and_status_codes() -> None:
    monitor = ControlMonitor()
    null_session(monitor)
    monitor.feed(CLIENT, message(b"", b"Connection.Open", b"{}"))
    monitor.feed(SERVER, message(b"", b"401", b'{"mechanisms": ["PLAIN"]}'))
    assert monitor.violations == []
    monitor.feed(SERVER, message(b"", b"200", b"{}"))  # nothing asked
    monitor.feed(CLIENT, message(b"", b"Connection.Profile", b"{}") + message(b"", b"Connection.Profile", b"{}"))
    monitor.feed(SERVER, message(b"", b"600", b"{}"))
    monitor.feed(CLIENT, message(b"", b"Connection.Open", b"{not json"))
    assert rules(monitor) == [("server", "mtl-reply-without-request"), ("client", "mtl-request-before-reply"),
                              ("server", "mtl-bad-code"), ("client", "mtl-bad-json")]


def seq(n: int) -> bytes:
    return n.to_bytes(8, "big")  # 11/MTL "Integer": 8 octets, big-endian


def test_mtl_data_responses_echo_a_command_and_content_needs_a_summon() -> None:
    monitor = DataMonitor()
    null_session(monitor)
    monitor.feed(CLIENT, message(b"\x01" + seq(1) + b"\x03abc", b""))  # Lease 1 "abc"
    monitor.feed(SERVER, message(b"\x02" + seq(1), b"200"))
    monitor.feed(CLIENT, message(b"\x03" + seq(2) + b"\x01r", b""))  # Summon 2 "r"
    monitor.feed(SERVER, message(b"\x05" + seq(1) + b"\x01r" + b"\x00\x00", b"early"))  # Content before the 200
    monitor.feed(SERVER, message(b"\x02" + seq(2), b"200"))
    monitor.feed(SERVER, message(b"\x05" + seq(2) + b"\x01r" + b"\x00\x00", b"fine"))
    assert rules(monitor) == [("server", "mtl-content-not-summoned")]
    monitor.feed(SERVER, message(b"\x02" + seq(2), b"200"))  # answered already
    monitor.feed(CLIENT, message(b"\x04" + seq(3) + b"\x01r", b""))  # Dismiss 3 "r"
    monitor.feed(SERVER, message(b"\x05" + seq(3) + b"\x01r" + b"\x00\x00", b"in flight"))  # before the 200: allowed
    monitor.feed(SERVER, message(b"\x02" + seq(3), b"200"))
    monitor.feed(SERVER, message(b"\x05" + seq(4) + b"\x01r" + b"\x00\x00", b"late"))
    monitor.feed(CLIENT, message(b"\x06" + seq(1) + b"\x02", b""))  # Confirm with Boolean 2
    assert rules(monitor) == [("server", "mtl-content-not-summoned"), ("server", "mtl-response-without-command"),
                              ("server", "mtl-content-not-summoned"), ("client", "mtl-data-bad-boolean")]
    assert monitor.messages == 12


def test_mtl_data_a_refused_content_may_get_a_response() -> None:
    monitor = DataMonitor()
    null_session(monitor)
    monitor.feed(CLIENT, message(b"\x05" + seq(1) + b"\x00" + b"\x00\x00", b"before the lease"))
    monitor.feed(SERVER, message(b"\x02" + seq(1), b"403"))  # docs/profiles/mtl.md "Leases"
    assert monitor.violations == []
