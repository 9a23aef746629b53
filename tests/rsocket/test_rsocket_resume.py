"""RSocket resumption, server side: positions, RESUME_OK, replay, REJECTED_RESUME, bounds.

Every frame is written by hand from Protocol.md's layouts
(https://github.com/rsocket/rsocket/blob/master/Protocol.md, "Resuming Operation", RESUME 0x0D,
RESUME_OK 0x0E); the type-and-flags word is type << 10 | I 0x200 | M 0x100 | F/R 0x80 | C/L 0x40
| N 0x20.  Positions are the lengths of REQUEST/REQUEST_N/CANCEL/ERROR/PAYLOAD frames without the
length prefix ("Implied Position"), added up by hand in the comments.
"""

from __future__ import annotations

import asyncio

import pytest

from reference_impl.common.errors import ProtocolViolation
from reference_impl.rsocket.connection import (
    ConnectionClosed, Connection, Resumed, Role, SetupAccepted, Transport,
)
from reference_impl.rsocket.resume import RetainedFrames, SessionStore
from reference_impl.rsocket.server import start_server

H = bytes.fromhex
# stream 0 | SETUP 0480 (R) | 1.0 | keepalive 500 | lifetime 2000 | token length 2 "tk" | two empty MIME types
SETUP_R = H("00000000" "0480" "0001" "0000" "000001f4" "000007d0" "0002" "746b" "00" "00")
# stream 1 | REQUEST_STREAM 1800 | n 2 | "range:5": 6 + 4 + 7 = 17 bytes
REQUEST = H("00000001" "1800" "00000002" "72616e67653a35")
# stream 1 | PAYLOAD N 2820 | "0" / "1": 7 bytes each
PAYLOAD_0 = H("00000001" "2820" "30")
PAYLOAD_1 = H("00000001" "2820" "31")


def resume(server_position: int, client_position: int = 0, token: str = "746b", version: str = "0001") -> bytes:
    # stream 0 | RESUME 3400 | version | token length 2 + token | two 63-bit positions
    return H("00000000" "3400" + version + "0000" "0002" + token) + server_position.to_bytes(8, "big") \
        + client_position.to_bytes(8, "big")


def session(store: SessionStore, **kw) -> Connection:
    """A resumable session that received REQUEST (17) and sent PAYLOAD "0" and "1" (14), then lost its transport."""
    conn = Connection(Role.SERVER, Transport.WEBSOCKET, sessions=store, **kw)
    assert isinstance(conn.receive_message(SETUP_R)[0], SetupAccepted)
    conn.receive_message(REQUEST)
    conn.send_payload(1, b"0")
    conn.send_payload(1, b"1")
    assert conn.messages_to_send() == [PAYLOAD_0, PAYLOAD_1]
    assert conn.connection_lost() == []  # kept, not closed
    return conn


def new_connection(store: SessionStore) -> Connection:
    return Connection(Role.SERVER, Transport.WEBSOCKET, sessions=store)


def rejected(conn: Connection) -> bool:
    out = conn.messages_to_send()
    # stream 0 | ERROR 2c00 | REJECTED_RESUME 00000004
    return conn.should_close and len(out) == 1 and out[0][:10] == H("00000000" "2c00" "00000004")


def test_resume_gets_resume_ok_with_the_received_position_and_the_stream_goes_on():
    store = SessionStore()
    old = session(store)
    new = new_connection(store)
    assert new.receive_message(resume(14)) == [Resumed(old)]
    # stream 0 | RESUME_OK 3800 | last received client position 17
    assert old.messages_to_send() == [H("00000000" "3800" "0000000000000011")]
    # REQUEST_N 3 on stream 1 (2000 | 00000003, 10 bytes): the credit of the old stream grows
    old.receive_message(H("00000001" "2000" "00000003"))
    assert old.credit(1) == 3
    assert old.received_position == 27 and old.sent_position == 14


def test_resume_from_an_earlier_position_sends_the_missed_frames_again():
    store = SessionStore()
    old = session(store)
    assert new_connection(store).receive_message(resume(7)) == [Resumed(old)]
    assert old.messages_to_send() == [H("00000000" "3800" "0000000000000011"), PAYLOAD_1]


def test_resume_from_zero_sends_everything_again():
    store = SessionStore()
    old = session(store)
    new_connection(store).receive_message(resume(0))
    assert old.messages_to_send()[1:] == [PAYLOAD_0, PAYLOAD_1]


def test_unknown_token_is_rejected_and_closed():
    store = SessionStore()
    session(store)
    new = new_connection(store)
    assert new.receive_message(resume(14, token="7878"))[0].code == 4
    assert rejected(new)


def test_position_never_sent_is_rejected_and_ends_the_session():
    store = SessionStore()
    old = session(store)
    new = new_connection(store)
    new.receive_message(resume(15))
    assert rejected(new)
    assert old.should_close and "tk".encode() not in store
    again = new_connection(store)
    again.receive_message(resume(14))
    assert rejected(again)


def test_position_inside_a_frame_is_rejected():
    store = SessionStore()
    session(store)
    new = new_connection(store)
    new.receive_message(resume(3))
    assert rejected(new)


def test_client_that_no_longer_keeps_what_the_server_missed_is_rejected():
    store = SessionStore()
    session(store)
    new = new_connection(store)
    new.receive_message(resume(14, client_position=18))  # the server received up to 17
    assert rejected(new)


def test_resume_of_another_major_version_is_rejected():
    store = SessionStore()
    session(store)
    new = new_connection(store)
    new.receive_message(resume(14, version="0002"))
    assert rejected(new)


def test_keepalive_position_trims_what_can_be_sent_again():
    store = SessionStore()
    conn = Connection(Role.SERVER, Transport.WEBSOCKET, sessions=store)
    conn.receive_message(SETUP_R)
    conn.receive_message(REQUEST)
    conn.send_payload(1, b"0")
    conn.send_payload(1, b"1")
    conn.messages_to_send()
    # stream 0 | KEEPALIVE with R 0c80 | last received position 7 | no data
    conn.receive_message(H("00000000" "0c80" "0000000000000007"))
    # the answer: KEEPALIVE 0c00 carrying our received position 17
    assert conn.messages_to_send() == [H("00000000" "0c00" "0000000000000011")]
    conn.connection_lost()
    too_early = new_connection(store)
    too_early.receive_message(resume(0))
    assert rejected(too_early)  # PAYLOAD "0" was trimmed: position 0 can no longer be served


def test_past_the_byte_cap_the_session_cannot_be_resumed():
    store = SessionStore()
    conn = Connection(Role.SERVER, Transport.WEBSOCKET, sessions=store, resume_bytes=10)
    conn.receive_message(SETUP_R)
    conn.receive_message(REQUEST)
    conn.send_payload(1, b"0")
    conn.send_payload(1, b"1")  # 14 bytes kept > 10
    assert conn.connection_lost() == [ConnectionClosed("transport closed", by_peer=True)]
    new = new_connection(store)
    new.receive_message(resume(14))
    assert rejected(new)


def test_retained_frames_stay_within_the_cap():
    kept = RetainedFrames(max_bytes=20)
    for _ in range(10):
        kept.add(PAYLOAD_0)
    assert kept.overflowed and kept.since(63) is None and kept.position == 70


def test_setup_with_a_token_in_use_is_rejected():
    store = SessionStore()
    Connection(Role.SERVER, Transport.WEBSOCKET, sessions=store).receive_message(SETUP_R)
    second = Connection(Role.SERVER, Transport.WEBSOCKET, sessions=store)
    second.receive_message(SETUP_R)
    # stream 0 | ERROR 2c00 | REJECTED_SETUP 00000003
    assert second.should_close and second.messages_to_send()[0][:10] == H("00000000" "2c00" "00000003")


def test_a_detached_session_expires():
    store = SessionStore(keep_ms=1000)
    conn = Connection(Role.SERVER, Transport.WEBSOCKET, now=0.0, sessions=store)
    conn.receive_message(SETUP_R, now=0.0)
    conn.connection_lost()
    new = Connection(Role.SERVER, Transport.WEBSOCKET, sessions=store)
    new.receive_message(resume(0), now=1.5)
    assert rejected(new) and len(store) == 0


def test_resume_after_setup_is_a_connection_error():
    store = SessionStore()
    conn = Connection(Role.SERVER, Transport.WEBSOCKET, sessions=store)
    conn.receive_message(SETUP_R)
    conn.receive_message(resume(0))
    # stream 0 | ERROR 2c00 | CONNECTION_ERROR 00000101
    assert conn.should_close and conn.messages_to_send()[0][:10] == H("00000000" "2c00" "00000101")


def test_resume_over_tcp_with_a_request_n_in_the_same_write():
    async def main():
        server = await start_server()
        host, port = server.url[len("tcp://"):].split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(len(SETUP_R).to_bytes(3, "big") + SETUP_R + H("000011") + REQUEST)
        first = await asyncio.wait_for(reader.readexactly(20), 5)
        writer.close()
        reader, writer = await asyncio.open_connection(host, int(port))
        # RESUME (30 bytes: 6 header + 4 version + 2 + 2 token + 8 + 8) at server position 7,
        # then REQUEST_N 3 (10 bytes), in one write
        writer.write(H("00001e") + resume(7) + H("00000a" "00000001" "2000" "00000003"))
        # RESUME_OK (14), PAYLOAD "1" again, then "2", "3" and "4" with C (2860)
        second = await asyncio.wait_for(reader.readexactly(17 + 4 * 10), 5)
        writer.close()
        await server.close()
        return first, second
    first, second = asyncio.run(asyncio.wait_for(main(), 20))
    assert first == H("000007") + PAYLOAD_0 + H("000007") + PAYLOAD_1
    assert second == (H("00000e" "00000000" "3800" "0000000000000011")
                      + H("000007") + PAYLOAD_1
                      + H("000007" "00000001" "2820" "32") + H("000007" "00000001" "2820" "33")
                      + H("000007" "00000001" "2860" "34"))


# ------------------------------------------------------------------ client side (sans-IO)

def resumable_client() -> Connection:
    """A client that sent SETUP with R and REQUEST (17), received PAYLOAD "0" (7), then lost its transport."""
    conn = Connection(Role.CLIENT, Transport.WEBSOCKET, keepalive_ms=500, lifetime_ms=2000)
    conn.setup(resume_token=b"tk")
    assert conn.request_stream(b"range:5", initial_n=2) == 1
    assert conn.messages_to_send() == [SETUP_R, REQUEST]
    conn.receive_message(PAYLOAD_0)
    assert conn.connection_lost() == []
    return conn


def test_client_resume_sends_its_positions_then_resends_what_the_server_missed():
    conn = resumable_client()
    conn.start_resume(now=1.0)
    # the last server position received: 7; the first it can send again: 0
    assert conn.messages_to_send() == [resume(7, 0)]
    # RESUME_OK at 0: the server never got REQUEST, so it is sent again as it was
    assert conn.receive_message(H("00000000" "3800" "0000000000000000")) == [Resumed(conn)]
    assert conn.messages_to_send() == [REQUEST]
    events = conn.receive_message(PAYLOAD_1)
    assert events[0].data == b"1" and conn.received_position == 14


def test_client_sends_no_request_until_resume_ok():
    conn = resumable_client()
    conn.start_resume(now=1.0)
    with pytest.raises(ProtocolViolation, match="resuming"):
        conn.request_response(b"echo:x")
    assert conn.messages_to_send() == [resume(7, 0)]


def test_client_gives_up_on_rejected_resume():
    conn = resumable_client()
    conn.start_resume(now=1.0)
    conn.messages_to_send()
    # stream 0 | ERROR 2c00 | REJECTED_RESUME 00000004 | "no"
    events = conn.receive_message(H("00000000" "2c00" "00000004" "6e6f"))
    assert events == [ConnectionClosed("no", 4, by_peer=True)] and conn.should_close


def test_client_resume_ok_at_a_position_it_cannot_serve_is_a_connection_error():
    conn = resumable_client()
    conn.start_resume(now=1.0)
    conn.messages_to_send()
    conn.receive_message(H("00000000" "3800" "0000000000000005"))  # inside REQUEST
    # stream 0 | ERROR 2c00 | CONNECTION_ERROR 00000101
    assert conn.should_close and conn.messages_to_send()[0][:10] == H("00000000" "2c00" "00000101")
