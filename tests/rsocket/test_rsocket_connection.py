"""RSocket sans-IO connection: ids, credit, fragmentation, keepalive, errors, lenient rules.

Frames fed in and expected out are written by hand from Protocol.md's layouts
(https://github.com/rsocket/rsocket/blob/master/Protocol.md); the type-and-flags
word is type << 10 | I 0x200 | M 0x100 | F/R 0x80 | C/L 0x40 | N 0x20.
"""

from __future__ import annotations

import pytest

from reference_impl.common.errors import ProtocolViolation
from reference_impl.rsocket.connection import (
    CancelReceived, ConnectionClosed, Connection, Credit, CreditReceived, FrameIgnored, Kind,
    KeepaliveReceived, MetadataPushReceived, PayloadReceived, PeerViolation, RequestReceived,
    Role, SetupAccepted, StreamErrorReceived, Transport,
)

H = bytes.fromhex
MAX = 0x7FFFFFFF
# stream 0 | SETUP 0400 | 1.0 | keepalive 500 | lifetime 2000 | two empty MIME types
SETUP = H("00000000" "0400" "0001" "0000" "000001f4" "000007d0" "00" "00")


def server(**kw) -> Connection:
    conn = Connection(Role.SERVER, Transport.WEBSOCKET, **kw)
    assert isinstance(conn.receive_message(SETUP)[0], SetupAccepted)
    return conn


def client(**kw) -> Connection:
    kw.setdefault("keepalive_ms", 500)
    kw.setdefault("lifetime_ms", 2000)
    conn = Connection(Role.CLIENT, Transport.WEBSOCKET, **kw)
    conn.setup()
    assert conn.messages_to_send() == [SETUP]
    return conn


def serves(conn: Connection, sid: int = 0x7FFFFFF1) -> bool:
    """The connection still answers: a REQUEST_RESPONSE 'x' comes out as an event."""
    events = conn.receive_message(H(f"{sid:08x}" "1000" "78"))
    return not conn.should_close and RequestReceived(Kind.RESPONSE, sid, None, b"x") in events


# ------------------------------------------------------------------ stream ids

def test_client_ids_are_odd_from_1_and_server_ids_even_from_2():
    c, s = client(), server()
    assert [c.allocate_stream_id() for _ in range(3)] == [1, 3, 5]
    assert [s.allocate_stream_id() for _ in range(3)] == [2, 4, 6]


def test_ids_run_out_after_2_pow_31_minus_1_without_reuse():
    c = client()
    c._next_id = MAX  # skip 2^30 allocations
    assert c.allocate_stream_id() == MAX
    with pytest.raises(ProtocolViolation) as err:
        c.allocate_stream_id()
    assert err.value.code == "stream-ids-exhausted"


def test_request_goes_out_on_the_allocated_id():
    c = client()
    assert c.request_response(b"x") == 1
    assert c.messages_to_send() == [H("00000001" "1000" "78")]
    assert c.request_stream(b"r", initial_n=5) == 3
    # stream 3 | REQUEST_STREAM 1800 | n 5 | 'r'
    assert c.messages_to_send() == [H("00000003" "1800" "00000005" "72")]


# ------------------------------------------------------------------ request-n credit

def test_credit_accumulates_and_saturates_at_2_pow_31_minus_1():
    credit = Credit(3)
    credit.add(2)
    assert credit.value == 5
    credit.add(MAX)
    assert credit.value == MAX


def test_received_credit_saturates_instead_of_wrapping():
    s = server()
    s.receive_message(H("00000001" "1800" "7ffffffe" "72"))  # REQUEST_STREAM n 2^31-2
    events = s.receive_message(H("00000001" "2000" "7fffffff"))  # REQUEST_N 2^31-1
    assert events == [CreditReceived(1, MAX, MAX)]
    assert s.credit(1) == MAX


def test_responder_never_sends_more_payloads_than_granted():
    s = server()
    s.receive_message(H("00000001" "1800" "00000002" "72"))  # REQUEST_STREAM n 2
    s.send_payload(1, b"0")
    s.send_payload(1, b"1")
    with pytest.raises(ProtocolViolation) as err:
        s.send_payload(1, b"2")
    assert err.value.code == "no-credit"
    s.receive_message(H("00000001" "2000" "00000001"))  # REQUEST_N 1
    s.send_payload(1, b"2", complete=True)
    # PAYLOAD N 2820 '0', '1'; then C|N 2860 '2'
    assert s.messages_to_send() == [H("00000001" "2820" "30"), H("00000001" "2820" "31"),
                                    H("00000001" "2860" "32")]
    assert s.open_streams() == set()


def test_zero_initial_request_n_gets_error_invalid_on_that_stream():
    s = server()
    assert s.receive_message(H("00000001" "1800" "00000000" "72")) == []
    # stream 1 | ERROR 2c00 | INVALID 00000204 | reason
    (out,) = s.messages_to_send()
    assert out[:10] == H("00000001" "2c00" "00000204")
    assert serves(s)


def test_zero_request_n_ends_the_stream_with_error_invalid():
    s = server()
    s.receive_message(H("00000001" "1800" "00000001" "72"))
    s.receive_message(H("00000001" "2000" "00000000"))
    (out,) = s.messages_to_send()
    assert out[:10] == H("00000001" "2c00" "00000204")
    assert 1 not in s.open_streams() and serves(s)


def test_payload_beyond_granted_credit_is_a_peer_violation():
    c = client()
    c.request_stream(b"r", initial_n=1)
    c.messages_to_send()
    assert c.receive_message(H("00000001" "2820" "30")) == [PayloadReceived(1, None, b"0", True, False)]
    assert c.receive_message(H("00000001" "2820" "31")) == [PeerViolation(1, "payload-beyond-credit")]
    assert c.messages_to_send() == [H("00000001" "2400")]  # CANCEL


# ------------------------------------------------------------------ fragmentation

def test_fragmented_request_is_reassembled_metadata_first():
    s = server()
    # REQUEST_RESPONSE M|F 1180, metadata 'm' | PAYLOAD M|F|N 29a0, metadata 'd', data 'a'
    # | PAYLOAD N 2820, data 'b'
    assert s.receive_message(H("00000001" "1180" "000001" "6d")) == []
    assert s.receive_message(H("00000001" "29a0" "000001" "64" "61")) == []
    assert s.receive_message(H("00000001" "2820" "62")) == [
        RequestReceived(Kind.RESPONSE, 1, b"md", b"ab")]


def test_one_byte_fragments_over_tcp_fed_one_byte_at_a_time():
    conn = Connection(Role.SERVER, Transport.TCP)
    # each frame behind its 24-bit length: SETUP (20) | REQUEST_FNF F 1480 'a' (7)
    # | PAYLOAD F|N 28a0 'b' (7) | PAYLOAD N 2820 'c' (7)
    wire = (H("000014") + SETUP + H("000007" "00000001" "1480" "61")
            + H("000007" "00000001" "28a0" "62") + H("000007" "00000001" "2820" "63"))
    events = []
    for i in range(len(wire)):
        events += conn.receive_data(wire[i:i + 1])
    assert events[1:] == [RequestReceived(Kind.FNF, 1, None, b"abc")]


def test_metadata_after_data_across_fragments_is_a_connection_error():
    s = server()
    s.receive_message(H("00000001" "1080" "61"))  # REQUEST_RESPONSE F, data 'a'
    events = s.receive_message(H("00000001" "2920" "000001" "6d"))  # PAYLOAD M|N, metadata 'm'
    assert s.should_close and isinstance(events[-1], ConnectionClosed)
    assert s.messages_to_send()[0][:10] == H("00000000" "2c00" "00000101")


def test_sender_fragments_metadata_before_data():
    c = client(fragment_size=2)
    c.request_response(b"abc", metadata=b"xyz")
    assert c.messages_to_send() == [
        H("00000001" "1180" "000002" "7879"),      # REQUEST_RESPONSE M|F, metadata 'xy'
        H("00000001" "29a0" "000001" "7a" "61"),   # PAYLOAD M|F|N, metadata 'z', data 'a'
        H("00000001" "2820" "6263"),               # PAYLOAD N, data 'bc'
    ]


def test_a_fragmented_payload_counts_as_one_credit():
    c = client()
    c.request_stream(b"r", initial_n=2)
    events = []
    for frame in ("28a0" "61", "28a0" "62", "2820" "63", "2860" "64"):  # F|N, F|N, N, C|N
        events += c.receive_message(H("00000001" + frame))
    assert events == [PayloadReceived(1, None, b"abc", True, False),
                      PayloadReceived(1, None, b"d", True, True)]
    assert c.open_streams() == set()


def test_reassembly_is_bounded():
    s = server(max_reassembly=4)
    s.receive_message(H("00000001" "1080" "61626364"))  # 4 bytes, F
    events = s.receive_message(H("00000001" "28a0" "65"))  # one more
    assert s.should_close and isinstance(events[-1], ConnectionClosed)


# ------------------------------------------------------------------ keepalive

def test_keepalive_with_r_is_answered_with_the_same_data():
    s = server()
    # KEEPALIVE R 0c80 | position 0 | 'hi'  ->  KEEPALIVE 0c00 | position 0 | 'hi'
    assert s.receive_message(H("00000000" "0c80" "0000000000000000" "6869")) == [
        KeepaliveReceived(True, b"hi")]
    assert s.messages_to_send() == [H("00000000" "0c00" "0000000000000000" "6869")]


def test_client_sends_keepalive_every_interval():
    c = client(keepalive_ms=500, lifetime_ms=2000)
    c.tick(0.4)
    assert c.messages_to_send() == []
    c.tick(0.5)
    assert c.messages_to_send() == [H("00000000" "0c80" "0000000000000000")]


def test_silent_peer_past_lifetime_gets_connection_error_then_nothing():
    s = Connection(Role.SERVER, Transport.WEBSOCKET, now=0.0)
    s.receive_message(SETUP, now=0.0)  # lifetime 2000 ms from SETUP
    assert s.tick(1.9) == []
    s.receive_message(H("00000000" "0c80" "0000000000000000"), now=1.9)
    assert s.tick(3.8) == []
    events = s.tick(4.0)
    assert events == [ConnectionClosed("keepalive timeout", 0x101)]
    assert s.messages_to_send()[-1][:10] == H("00000000" "2c00" "00000101")
    with pytest.raises(ProtocolViolation):
        s.metadata_push(b"m")
    assert s.receive_message(H("00000001" "1000" "78")) == []


# ------------------------------------------------------------------ setup

@pytest.mark.parametrize("first,code", [
    (H("00000001" "1000" "78"), "00000001"),  # REQUEST_RESPONSE first: INVALID_SETUP
    (H("00000000" "0400" "0002" "0000" "000001f4" "000007d0" "00" "00"), "00000002"),  # 2.0
    (H("00000000" "0400" "0001" "0000" "00000000" "000007d0" "00" "00"), "00000001"),  # keepalive 0
    (H("00000000" "0400" "0001" "0000" "000001f4" "00000000" "00" "00"), "00000001"),  # lifetime 0
    # R, on a connection without a session store: REJECTED_SETUP, the words of "SETUP Frame"
    (H("00000000" "0480" "0001" "0000" "000001f4" "000007d0" "0000" "00" "00"), "00000003"),
    (H("00000000" "3400" "0001" "0000" "0000" "0000000000000000" "0000000000000000"), "00000004"),
])
def test_bad_first_frame_gets_a_setup_error_on_stream_0_and_close(first, code):
    s = Connection(Role.SERVER, Transport.WEBSOCKET)
    s.receive_message(first)
    assert s.should_close
    assert s.messages_to_send()[0][:10] == H("00000000" "2c00" + code)


# ------------------------------------------------------------------ errors

def test_stream_error_ends_only_its_stream():
    c = client()
    c.request_response(b"x")
    c.request_response(b"y")
    # ERROR on stream 1 | APPLICATION_ERROR 00000201 | 'no'
    assert c.receive_message(H("00000001" "2c00" "00000201" "6e6f")) == [
        StreamErrorReceived(1, 0x201, b"no")]
    assert c.open_streams() == {3} and not c.should_close


def test_connection_error_ends_the_connection():
    c = client()
    c.request_response(b"x")
    events = c.receive_message(H("00000000" "2c00" "00000101" "6279"))
    assert events == [ConnectionClosed("by", 0x101, by_peer=True)] and c.should_close


def test_malformed_frame_without_i_is_a_connection_error():
    s = server()
    s.receive_message(H("00000001" "1100" "000009" "61"))  # metadata length overruns
    assert s.should_close
    assert s.messages_to_send()[0][:10] == H("00000000" "2c00" "00000101")


def test_malformed_frame_with_i_is_dropped():
    s = server()
    assert s.receive_message(H("00000001" "1300" "000009" "61")) == [
        FrameIgnored("metadata-length-overrun", 1)]
    assert serves(s)


def test_unknown_ext_with_i_is_dropped_without_i_ends_the_connection():
    s = server()
    assert s.receive_message(H("00000001" "fe00" "00000001")) == [
        FrameIgnored("unknown-extension", 1)]
    assert serves(s)
    s.receive_message(H("00000001" "fc00" "00000001"))
    assert s.should_close


def test_response_payload_without_c_completes_the_stream():
    c = client()
    c.request_response(b"x")
    assert c.receive_message(H("00000001" "2820" "79")) == [PayloadReceived(1, None, b"y", True, True)]
    assert c.open_streams() == set()


def test_payload_with_f_and_c_is_complete():
    c = client()
    c.request_stream(b"r", initial_n=1)
    assert c.receive_message(H("00000001" "28e0" "79")) == [PayloadReceived(1, None, b"y", True, True)]


# ------------------------------------------------------------------ Handling the Unexpected

@pytest.mark.parametrize("frame,reason", [
    (H("00000001" "1000" "78"), "stream-in-use"),            # request on an id in use
    (H("00000005" "2400"), "cancel-on-unknown-stream"),      # CANCEL, unknown id
    (H("00000000" "2400"), "stream-id-zero"),                # CANCEL on 0
    (H("00000005" "2c00" "00000201"), "error-on-unknown-stream"),
    (H("00000005" "2820" "78"), "unexpected-payload"),       # PAYLOAD, unknown id
    (H("00000000" "2820" "78"), "stream-id-zero"),           # PAYLOAD on 0
    (H("00000003" "3100" "6d"), "stream-id-nonzero"),        # METADATA_PUSH on 3
    (SETUP, "unexpected-setup"),                             # a second SETUP
    (H("00000000" "2c00" "00000001"), "setup-error-ignored"),  # ERROR[INVALID_SETUP] to a server
    (H("00000001" "2800" "78"), "payload-without-next-or-complete"),
])
def test_frames_the_spec_says_to_ignore_are_dropped_and_the_connection_serves(frame, reason):
    s = server()
    s.receive_message(H("00000001" "1000" "78"))  # stream 1 in use
    events = s.receive_message(frame)
    assert [e for e in events if isinstance(e, FrameIgnored)][0].reason == reason
    assert serves(s)


def test_metadata_push_and_cancel_reach_the_application():
    s = server()
    assert s.receive_message(H("00000000" "3100" "6d70")) == [MetadataPushReceived(b"mp")]
    s.receive_message(H("00000001" "1800" "00000001" "72"))
    assert s.receive_message(H("00000001" "2400")) == [CancelReceived(1)]
    assert s.open_streams() == set()


def test_client_ignores_setup_errors_once_established_but_not_before():
    c = client()
    events = c.receive_message(H("00000000" "2c00" "00000003"))  # REJECTED_SETUP at once
    assert c.should_close and events[0].code == 3
    c = client()
    c.receive_message(H("00000000" "0c80" "0000000000000000"))  # a server frame: established
    assert c.receive_message(H("00000000" "2c00" "00000003")) == [FrameIgnored("setup-error-ignored", 0)]


def test_setup_with_lease_gets_a_lease_and_requests_past_it_are_rejected():
    """Protocol.md "Connection Establishment" (a LEASE for a SETUP with L) and "Lease Semantics"
    (ERROR[REJECTED] for a request the lease does not cover); bytes laid out by hand."""
    s = Connection(Role.SERVER, Transport.WEBSOCKET, now=0.0, lease_ttl_ms=1000, lease_requests=2)
    events = s.receive_message(H("00000000" "0440" "0001" "0000" "000001f4" "000007d0" "00" "00"), now=0.0)
    assert [type(e).__name__ for e in events] == ["SetupAccepted"]
    # LEASE (type 0x02 << 10 = 0x0800) on stream 0: TTL 1000 ms (0x3e8), 2 requests
    assert s.messages_to_send() == [H("00000000" "0800" "000003e8" "00000002")]
    for sid in ("00000001", "00000003"):
        [event] = s.receive_message(H(sid + "1400" "78"), now=0.1)  # REQUEST_FNF, within the lease
        assert isinstance(event, RequestReceived)
    s.receive_message(H("00000005" "1000" "78"), now=0.2)  # REQUEST_RESPONSE past the lease
    assert s.messages_to_send() == [H("00000005" "2c00" "00000202") + b"no lease for this request"]
    assert 5 not in s.open_streams()
    s.tick(0.3)  # used up: a new LEASE
    assert s.messages_to_send() == [H("00000000" "0800" "000003e8" "00000002")]
    [event] = s.receive_message(H("00000007" "1000" "78"), now=0.4)
    assert isinstance(event, RequestReceived)
    s.tick(1.5)  # expired (1000 ms from 0.3): renewed
    assert s.messages_to_send() == [H("00000000" "0800" "000003e8" "00000002")]
