"""The RSocket passive rules on hand-written frames (Protocol.md's layouts; type-and-flags word:
type << 10 | M 0x100 | F/R 0x80 | C 0x40 | N 0x20), fed to one connection's observer."""

from __future__ import annotations

from conformance.trace.observer import Observer
from conformance.trace.rules import rules_for

H = bytes.fromhex
SETUP = H("00000000" "0400" "0001" "0000" "000001f4" "000007d0" "00" "00")  # 1.0, keepalive 500, lifetime 2000
SETUP_2 = H("00000000" "0400" "0002" "0000" "000001f4" "000007d0" "00" "00")  # version 2.0
SETUP_KEEPALIVE_0 = H("00000000" "0400" "0001" "0000" "00000000" "000007d0" "00" "00")
CANCEL_41 = H("00000029" "2400")
CONNECTION_ERROR = H("00000000" "2c00" "00000101") + b"bad"
UNSUPPORTED_SETUP = H("00000000" "2c00" "00000002") + b"no"


def tcp(frame: bytes) -> bytes:
    return len(frame).to_bytes(3, "big") + frame


def findings(*events) -> list[tuple[str, str]]:
    """events: (side, seconds, frame bytes), or (side, seconds, "FIN")."""
    observer = Observer("rsocket", "tcp", ("127.0.0.1", 40000), ("127.0.0.1", 9000),
                        rules_for("rsocket", "tcp", {"silence_ms": 300}))
    offset = {"client": 0, "server": 0}
    for side, ts, what in events:
        if what == "FIN":
            observer.end(side, ts, "FIN")
            continue
        observer.data(side, ts, offset[side], tcp(what))
        offset[side] += len(tcp(what))
    observer.finish()
    return [(f.sender, f.requirement) for f in observer.findings]


def test_a_connection_error_right_after_a_frame_to_ignore():
    assert findings(("client", 0, SETUP), ("client", 1, CANCEL_41), ("server", 1.01, CONNECTION_ERROR)) == [
        ("server", "rsocket-cancel-unknown")]
    # two seconds later it answers nothing the client sent (a keepalive timeout looks like this)
    assert findings(("client", 0, SETUP), ("client", 1, CANCEL_41), ("server", 3, CONNECTION_ERROR)) == []


def test_a_refused_setup_owes_its_error():
    assert findings(("client", 0, SETUP_2), ("client", 1, "FIN")) == [
        ("client", "rsocket-first-frame-setup"), ("server", "rsocket-setup-refused")]
    assert findings(("client", 0, SETUP_2), ("server", 0.01, UNSUPPORTED_SETUP), ("client", 1, "FIN")) == [
        ("client", "rsocket-first-frame-setup")]
    # the capture stops with the connection open: the answer may still come
    assert findings(("client", 0, SETUP_2)) == [("client", "rsocket-first-frame-setup")]
    assert findings(("client", 0, SETUP_KEEPALIVE_0), ("client", 1, "FIN")) == [
        ("client", "rsocket-keepalive-interval-positive"), ("server", "rsocket-setup-refused")]


def test_a_first_request_that_is_not_setup_owes_invalid_setup():
    request = H("00000001" "1000") + b"echo:x"  # REQUEST_RESPONSE stream 1
    answer = H("00000001" "2860") + b"x"  # PAYLOAD N|C
    assert findings(("client", 0, request), ("server", 0.01, answer)) == [
        ("client", "rsocket-first-frame-setup"), ("server", "rsocket-first-frame-invalid-setup")]
    assert findings(("client", 0, SETUP), ("client", 0, request), ("server", 0.01, answer)) == []
    assert findings(("client", 0, SETUP), ("client", 0, H("00000003" "1000") + b"x")) == [
        ("client", "rsocket-stream-id-client-start")]


def _ws_findings(client_messages: list[bytes]) -> list[tuple[str, str]]:
    """The client's messages as masked binary WebSocket frames after an upgrade (RFC 6455 5.2)."""
    observer = Observer("rsocket", "ws", ("127.0.0.1", 40000), ("127.0.0.1", 9000),
                        rules_for("rsocket", "ws", {"silence_ms": 300}))
    upgrade = (b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
    answer = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
    observer.data("client", 0.0, 0, upgrade)
    observer.data("server", 0.01, 0, answer)
    offset, key = len(upgrade), b"\x01\x02\x03\x04"
    for i, body in enumerate(client_messages):
        frame = bytes([0x82, 0x80 | len(body)]) + key + bytes(b ^ key[j % 4] for j, b in enumerate(body))
        observer.data("client", 0.1 + i / 10, offset, frame)
        offset += len(frame)
    observer.finish()
    return [(f.sender, f.requirement) for f in observer.findings]


def test_a_short_websocket_message_does_not_stop_the_checks_of_the_next_ones():
    # on WebSocket each message is one frame: a message too short for a header (3 octets) breaks
    # the framing of that message only, and the REQUEST_STREAM with n = 0 after it is still judged
    request_n_zero = H("00000001" "1800" "00000000") + b"x"
    found = _ws_findings([SETUP, H("000000"), request_n_zero])
    assert ("client", "rsocket-request-n-positive") in found, found


REQUEST_RESPONSE_1 = H("00000001" "1000") + b"echo:x"
REQUEST_STREAM_1 = H("00000001" "1800" "00000005") + b"range:5"
PAYLOAD_99 = H("00000063" "2860") + b"stray"  # N|C on stream 99, which no frame had used
ANSWER_1 = H("00000001" "2860") + b"x"  # N|C: the answer to stream 1
ITEM_1 = H("00000001" "2820") + b"0"  # N: one item of stream 1, which goes on


def test_a_connection_error_right_after_a_payload_on_a_stream_never_used():
    assert findings(("client", 0, SETUP), ("client", 0, REQUEST_STREAM_1), ("server", 1, PAYLOAD_99),
                    ("client", 1.01, CONNECTION_ERROR)) == [("client", "rsocket-payload-unknown")]
    # an item long before is not what it answers
    assert findings(("client", 0, SETUP), ("client", 0, REQUEST_STREAM_1), ("server", 0.2, ITEM_1),
                    ("server", 1, PAYLOAD_99), ("client", 1.01, CONNECTION_ERROR)) == [
        ("client", "rsocket-payload-unknown")]
    # or a close with its stream still open
    assert findings(("client", 0, SETUP), ("client", 0, REQUEST_STREAM_1), ("server", 1, PAYLOAD_99),
                    ("client", 1.01, "FIN")) == [("client", "rsocket-payload-unknown")]
    # the server's side: a client's PAYLOAD on an odd id it never used
    assert findings(("client", 0, SETUP), ("client", 1, H("00000005" "2860") + b"x"),
                    ("server", 1.01, CONNECTION_ERROR)) == [("server", "rsocket-payload-unknown")]


def test_what_a_payload_on_a_stream_never_used_does_not_prove():
    before = [("client", 0, SETUP), ("client", 0, REQUEST_RESPONSE_1), ("server", 1, PAYLOAD_99)]
    # an answer or item handed to the client's application just before or after the stray PAYLOAD
    # may be what it ends the connection for (done with its work, or it wanted two items of five)
    assert findings(*before, ("server", 1, ANSWER_1), ("client", 1.01, CONNECTION_ERROR)) == []
    stream = [("client", 0, SETUP), ("client", 0, REQUEST_STREAM_1)]
    assert findings(*stream, ("server", 1, PAYLOAD_99), ("server", 1, ITEM_1), ("client", 1.01, "FIN")) == []
    assert findings(*stream, ("server", 1, ITEM_1), ("server", 1, PAYLOAD_99), ("client", 1.01, "FIN")) == []
    assert findings(*stream, ("server", 1, ITEM_1), ("server", 1, CANCEL_41), ("client", 1.01, CONNECTION_ERROR)) == []
    # long after: a keepalive timeout, or anything else
    assert findings(*before, ("client", 3, CONNECTION_ERROR)) == []
    # stream 99 was used before (a request the capture saw): a PAYLOAD on it may be a late one
    assert findings(("client", 0, SETUP), ("client", 0, REQUEST_STREAM_1), ("client", 0, H("00000063" "1000") + b"x"),
                    ("server", 0.5, H("00000063" "2c00" "00000201") + b"no"), ("server", 1, PAYLOAD_99),
                    ("client", 1.01, CONNECTION_ERROR)) == []
    # a resumed connection goes on with the streams of an earlier one
    resume = H("00000000" "3400" "0001" "0000" "0002") + b"tk" + bytes(16)
    resume_ok = H("00000000" "3800") + bytes(8)
    assert findings(("client", 0, resume), ("server", 0.5, resume_ok), ("server", 1, PAYLOAD_99),
                    ("client", 1.01, CONNECTION_ERROR)) == []
    # a SETUP the server may refuse: its ERROR[CONNECTION_ERROR] may answer that
    assert ("client", "rsocket-payload-unknown") not in findings(
        ("client", 0, SETUP_KEEPALIVE_0), ("client", 1, H("00000005" "2860") + b"x"),
        ("server", 1.01, CONNECTION_ERROR))
