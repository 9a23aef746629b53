"""The passive two-sided check (reference_impl/rsocket/monitor.py), fed frames written by hand
from Protocol.md's layouts (type-and-flags word: type << 10 | M 0x100 | F/R 0x80 | C 0x40 | N 0x20).
"""

from __future__ import annotations

from reference_impl.rsocket.monitor import Side, WireMonitor

H = bytes.fromhex
C, S = Side.CLIENT, Side.SERVER
SETUP = H("00000000" "0400" "0001" "0000" "000001f4" "000007d0" "00" "00")


def tcp(*frames: bytes) -> bytes:
    return b"".join(len(f).to_bytes(3, "big") + f for f in frames)


def rules(exchange: list[tuple[Side, bytes]], *, byte_by_byte: bool = False) -> list[tuple[str, str]]:
    monitor = WireMonitor()
    for side, frame in exchange:
        wire = tcp(frame)
        for piece in ([wire[i:i + 1] for i in range(len(wire))] if byte_by_byte else [wire]):
            monitor.feed(side, piece)
    return [(v.side.value, v.rule) for v in monitor.violations]


ECHO = [(C, SETUP), (C, H("00000001" "1000") + b"echo:hi"), (S, H("00000001" "2860") + b"hi")]
STREAM2 = [(C, SETUP), (C, H("00000001" "1800" "00000002") + b"range:5")]


def test_a_clean_exchange_has_no_violation_in_any_pieces() -> None:
    assert rules(ECHO) == [] and rules(ECHO, byte_by_byte=True) == []


def test_the_client_must_start_with_setup() -> None:
    assert rules(ECHO[1:]) == [("client", "first-frame-not-setup")]


def test_metadata_push_without_m_is_the_senders_fault() -> None:
    assert rules([(C, SETUP), (C, H("00000000" "3000") + b"abc")]) == [
        ("client", "malformed-frame:metadata-push-without-m")]
    assert rules([(C, SETUP), (C, H("00000000" "3100") + b"abc")]) == []  # M set: fine


def test_responder_past_its_credit() -> None:
    two = [(S, H("00000001" "2820") + b"0"), (S, H("00000001" "2820") + b"1")]
    assert rules(STREAM2 + two) == []
    assert rules(STREAM2 + two + [(S, H("00000001" "2820") + b"2")]) == [("server", "payload-beyond-credit")]
    # REQUEST_N 1 (type 0x08 -> 0x2000) makes room for one more
    assert rules(STREAM2 + two + [(C, H("00000001" "2000" "00000001")), (S, H("00000001" "2860") + b"2")]) == []


def test_a_fragmented_payload_counts_once() -> None:
    one = [(C, SETUP), (C, H("00000001" "1800" "00000001") + b"range:1")]
    fragments = [(S, H("00000001" "28a0") + b"ab"), (S, H("00000001" "2860") + b"cd")]  # F|N then N|C
    assert rules(one + fragments) == []


def test_request_n_zero_and_stream_id_rules() -> None:
    assert rules([(C, SETUP), (C, H("00000001" "1800" "00000000") + b"x")]) == [("client", "request-n-zero")]
    assert rules([(C, SETUP), (C, H("00000002" "1000") + b"x")]) == [("client", "stream-id-parity")]
    assert rules([(C, SETUP), (C, H("00000003" "1000") + b"x"), (C, H("00000001" "1000") + b"y")]) == [
        ("client", "stream-id-not-increasing")]


def test_payload_after_complete_but_not_after_cancel() -> None:
    done = ECHO + [(S, H("00000001" "2860") + b"again")]
    assert rules(done) == [("server", "payload-on-unknown-stream")]  # the response ended the stream
    cancelled = STREAM2 + [(C, H("00000001" "2400")), (S, H("00000001" "2820") + b"0")]
    assert rules(cancelled) == []  # in flight when the CANCEL was sent


def test_nothing_after_a_connection_error_and_keepalive_echo() -> None:
    error = H("00000000" "2c00" "00000101") + b"bad"
    keepalive_r = H("00000000" "0c80" "0000000000000000") + b"ping"
    assert rules([(C, SETUP), (S, error), (S, keepalive_r)]) == [("server", "frame-after-connection-error")]
    assert rules([(C, SETUP), (C, keepalive_r), (S, H("00000000" "0c00" "0000000000000000") + b"ping")]) == []
    assert rules([(C, SETUP), (C, keepalive_r), (S, H("00000000" "0c00" "0000000000000000") + b"pong")]) == [
        ("server", "keepalive-echo-differs")]


def test_a_bad_length_stops_that_direction_only() -> None:
    monitor = WireMonitor()
    monitor.feed(C, tcp(SETUP))
    monitor.feed(S, H("000002" "0000"))  # a frame shorter than its 6-byte header
    monitor.feed(S, tcp(H("00000001" "2860") + b"x"))  # no longer framed: not checked
    assert [(v.side.value, v.rule) for v in monitor.violations] == [("server", "malformed-frame:frame-too-short")]


def test_credit_ends_with_cancel_and_a_request_in_use_grants_none() -> None:
    two = [(S, H("00000001" "2820") + b"0"), (S, H("00000001" "2820") + b"1")]
    cancel_then_more = [(C, H("00000001" "2400")), (C, H("00000001" "2000" "0000000a"))]  # CANCEL, REQUEST_N 10
    assert rules(STREAM2 + two + cancel_then_more + [(S, H("00000001" "2820") + b"2")]) == [
        ("server", "payload-after-cancel")]
    again = (C, H("00000001" "1800" "00000005") + b"range:9")  # REQUEST_STREAM n=5 on stream 1, in use
    # the client broke "The Requester MUST skip IDs still in use"; the server answered what it must ignore
    assert rules(STREAM2 + two + [again, (S, H("00000001" "2820") + b"0")]) == [
        ("client", "stream-id-in-use"), ("server", "payload-for-ignored-request")]
    assert rules(STREAM2 + two + [again, (C, H("00000001" "2000" "00000001")), (S, H("00000001" "2820") + b"2")]) == [
        ("client", "stream-id-in-use")]


def test_a_forgotten_stream_is_not_judged() -> None:
    monitor = WireMonitor()
    for side, frame in STREAM2:
        monitor.feed(side, tcp(frame))
    monitor.forget(1)  # e.g. a REQUEST_N on it that did not decode: its credit is unknown
    for data in (b"0", b"1", b"2"):
        monitor.feed(S, tcp(H("00000001" "2820") + data))
    assert monitor.violations == []


def test_a_request_on_the_other_sides_stream_in_use_still_breaks_parity() -> None:
    # the client's stream 1 is open (credit 2); the server sends REQUEST_STREAM (0x06 -> 0x1800) on
    # stream 1: odd IDs are the client's, whether or not stream 1 is in use
    server_request = (S, H("00000001" "1800" "00000001") + b"x")
    assert rules(STREAM2 + [server_request]) == [("server", "stream-id-parity")]
