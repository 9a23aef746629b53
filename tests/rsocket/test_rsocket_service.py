"""The RSocket test service, driven with hand-written frames (Protocol.md layouts).

Type-and-flags word: type << 10 | I 0x200 | M 0x100 | F 0x80 | C 0x40 | N 0x20.
"""

from __future__ import annotations

from reference_impl.rsocket.connection import Connection, Role, Transport
from reference_impl.rsocket.service import SharedState, TestService

H = bytes.fromhex
# stream 0 | SETUP 0400 | 1.0 | keepalive 500 | lifetime 2000 | two empty MIME types
SETUP = H("00000000" "0400" "0001" "0000" "000001f4" "000007d0" "00" "00")


def serve(shared: SharedState | None = None, **kw) -> tuple[Connection, TestService]:
    conn = Connection(Role.SERVER, Transport.WEBSOCKET)
    service = TestService(conn, shared, **kw)
    service.handle(conn.receive_message(SETUP))
    return conn, service


def feed(conn: Connection, service: TestService, *frames: str) -> list[bytes]:
    for frame in frames:
        service.handle(conn.receive_message(H(frame)))
    return conn.messages_to_send()


def test_echo_returns_the_text_with_the_same_metadata():
    conn, service = serve()
    # REQUEST_RESPONSE M 1100 | metadata 'm' | 'echo:hi'  ->  PAYLOAD M|C|N 2960 | 'm' | 'hi'
    assert feed(conn, service, "00000001" "1100" "000001" "6d" "6563686f3a6869") == [
        H("00000001" "2960" "000001" "6d" "6869")]


def test_error_route_and_unknown_route_give_application_error():
    conn, service = serve()
    # 'error:x' -> ERROR 2c00 | APPLICATION_ERROR 00000201 | 'x'
    assert feed(conn, service, "00000001" "1000" "6572726f723a78") == [
        H("00000001" "2c00" "00000201" "78")]
    # 'nope' -> 'unknown route'
    assert feed(conn, service, "00000003" "1000" "6e6f7065") == [
        H("00000003" "2c00" "00000201" "756e6b6e6f776e20726f757465")]


def test_never_never_answers():
    conn, service = serve()
    assert feed(conn, service, "00000001" "1000" "6e65766572") == []


def test_range_honours_request_n_and_completes_with_the_last_item():
    conn, service = serve()
    # REQUEST_STREAM 1800 | n 2 | 'range:3'  ->  PAYLOAD N '0', PAYLOAD N '1'
    assert feed(conn, service, "00000001" "1800" "00000002" "72616e67653a33") == [
        H("00000001" "2820" "30"), H("00000001" "2820" "31")]
    # REQUEST_N 5  ->  PAYLOAD C|N '2'
    assert feed(conn, service, "00000001" "2000" "00000005") == [H("00000001" "2860" "32")]


def test_range_zero_is_a_bare_complete():
    conn, service = serve()
    assert feed(conn, service, "00000001" "1800" "00000001" "72616e67653a30") == [
        H("00000001" "2840")]


def test_pump_is_bounded_per_call():
    conn, service = serve(max_payloads=2)
    out = feed(conn, service, "00000001" "1800" "7fffffff" "72616e67653a3130")  # range:10
    assert len(out) == 2
    service.pump()
    assert len(conn.messages_to_send()) == 2


def test_cancel_stops_a_range():
    conn, service = serve(max_payloads=1)
    feed(conn, service, "00000001" "1800" "00000005" "72616e67653a35")
    feed(conn, service, "00000001" "2400")
    service.pump()
    assert conn.messages_to_send() == []


def test_fnf_and_metadata_push_are_kept_and_shared_across_connections():
    shared = SharedState()
    a, sa = serve(shared)
    feed(a, sa, "00000001" "1400" "666e663a6869")   # REQUEST_FNF 'fnf:hi'
    feed(a, sa, "00000000" "3100" "6d70")           # METADATA_PUSH 'mp'
    b, sb = serve(shared)
    # 'last-fnf' -> PAYLOAD C|N 'hi'; 'last-metadata-push' -> PAYLOAD C|N 'mp' (in data)
    assert feed(b, sb, "00000001" "1000" "6c6173742d666e66") == [H("00000001" "2860" "6869")]
    assert feed(b, sb, "00000003" "1000" "6c6173742d6d657461646174612d70757368") == [
        H("00000003" "2860" "6d70")]


def test_channel_echoes_initial_payload_passes_credit_and_completes_after_requester():
    conn, service = serve()
    # REQUEST_CHANNEL 1c00 | n 2 | 'a'  ->  PAYLOAD N 'a', REQUEST_N 2 (credit passed back)
    assert feed(conn, service, "00000001" "1c00" "00000002" "61") == [
        H("00000001" "2000" "00000002"), H("00000001" "2820" "61")]
    # PAYLOAD N 'b' -> echoed; PAYLOAD C -> COMPLETE
    assert feed(conn, service, "00000001" "2820" "62") == [H("00000001" "2820" "62")]
    assert feed(conn, service, "00000001" "2840") == [H("00000001" "2840")]
    assert conn.open_streams() == set()


def test_channel_requester_credit_is_passed_straight_through():
    conn, service = serve()
    feed(conn, service, "00000001" "1c00" "00000001" "61")
    # REQUEST_N 7 from the requester -> REQUEST_N 7 back
    assert feed(conn, service, "00000001" "2000" "00000007") == [H("00000001" "2000" "00000007")]


def test_channel_complete_at_once_echoes_then_completes():
    conn, service = serve()
    # REQUEST_CHANNEL C 1c40 | n 1 | 'a'  ->  PAYLOAD N 'a', PAYLOAD C
    assert feed(conn, service, "00000001" "1c40" "00000001" "61") == [
        H("00000001" "2820" "61"), H("00000001" "2840")]
