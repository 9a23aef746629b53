"""The sans-IO connection: phases, socket types, heartbeats with injected time, chunking invariance."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reference_impl.zmtp.codec import Frame, encode_frame
from reference_impl.zmtp.commands import Error, Ping, Pong, Subscribe
from reference_impl.zmtp.connection import (
    Connection, ConnectionClosed, HandshakeComplete, Message, Phase, compatible,
)
from reference_impl.zmtp.curve import CurveClientConfig, CurveServerConfig, KeyPair


def exchange(a: Connection, b: Connection, now: float = 0.0) -> tuple[list, list]:
    out_a, out_b = a.start(now), b.start(now)
    events_a, events_b = list(out_a.events), list(out_b.events)
    to_b, to_a = out_a.data, out_b.data
    while to_a or to_b:
        if to_b:
            out = b.receive_data(to_b, now)
            events_b += out.events
            to_a += out.data
            to_b = b""
        if to_a:
            out = a.receive_data(to_a, now)
            events_a += out.events
            to_b += out.data
            to_a = b""
    return events_a, events_b


def closed(events: list) -> ConnectionClosed | None:
    return next((e for e in events if isinstance(e, ConnectionClosed)), None)


@pytest.mark.parametrize("ours, theirs, ok", [
    ("REQ", "REP", True), ("REQ", "ROUTER", True), ("REQ", "DEALER", False), ("REQ", "REQ", False),
    ("DEALER", "ROUTER", True), ("DEALER", "DEALER", True), ("DEALER", "REP", True), ("DEALER", "REQ", False),
    ("ROUTER", "REQ", True), ("ROUTER", "ROUTER", True), ("ROUTER", "REP", False), ("PUB", "SUB", True),
    ("PUB", "PUB", False), ("PUSH", "PULL", True), ("PAIR", "PAIR", True), ("CLIENT", "SERVER", True),
    ("DEALER", "NOPE", False),
])
def test_socket_type_table_of_rfc23_and_rfc37(ours: str, theirs: str, ok: bool) -> None:
    assert compatible(ours, theirs) is ok


def test_incompatible_socket_types_get_error_and_close() -> None:
    a, b = Connection("REQ"), Connection("REQ")
    greeting_a, greeting_b = a.start(0.0).data, b.start(0.0).data
    ready_a = a.receive_data(greeting_b, 0.0).data
    out = b.receive_data(greeting_a + ready_a, 0.0)
    assert out.events == [ConnectionClosed("incompatible-socket-type", "REQ cannot talk to REQ")]
    # b's READY went out with its greeting's answer; the ERROR (RFC 23 SHOULD) follows it.
    assert out.data.endswith(encode_frame(Frame(b"\x05ERROR\x18incompatible socket type", command=True)))


def test_curve_incompatible_socket_type_closes_without_clear_error() -> None:
    keys = KeyPair.generate()
    client = Connection("REQ", CurveClientConfig(keys.public, KeyPair.generate()))
    server = Connection("PUB", CurveServerConfig(keys))
    ev_c, ev_s = exchange(client, server)
    assert closed(ev_c).code == "incompatible-socket-type" and closed(ev_s).code == "incompatible-socket-type"
    assert not any(isinstance(e, Error) for e in ev_c + ev_s)


def test_send_before_handshake_is_refused() -> None:
    conn = Connection("DEALER")
    conn.start(0.0)
    with pytest.raises(RuntimeError):
        conn.send(Message([b"early"]))


def test_end_of_stream_closes() -> None:
    conn = Connection("DEALER")
    conn.start(0.0)
    assert conn.receive_data(b"", 1.0).events == [ConnectionClosed("peer-closed", "stream ended during greeting")]
    assert conn.phase is Phase.CLOSED
    assert conn.receive_data(b"more", 2.0).events == []


def test_message_frame_during_handshake_is_refused() -> None:
    client = Connection("DEALER")
    greeting = Connection("ROUTER").start(0.0).data
    client.start(0.0)
    out = client.receive_data(greeting + encode_frame(Frame(b"too soon")), 0.0)
    assert closed(out.events).code == "unexpected-message"


def test_error_in_traffic_closes() -> None:
    client, server = Connection("DEALER"), Connection("ROUTER")
    exchange(client, server)
    out = client.receive_data(encode_frame(Frame(b"\x05ERROR\x03bye", command=True)), 0.0)
    assert out.events == [Error(b"bye"), ConnectionClosed("peer-error", "bye")]


def test_local_close_sends_error() -> None:
    client, server = Connection("DEALER"), Connection("ROUTER")
    exchange(client, server)
    out = client.close(b"going away")
    assert out.data == encode_frame(Frame(b"\x05ERROR\x0agoing away", command=True))
    assert server.receive_data(out.data, 0.0).events[0] == Error(b"going away")


def test_commands_in_traffic_are_events_and_ping_gets_pong() -> None:
    client, server = Connection("DEALER"), Connection("ROUTER")
    exchange(client, server)
    out = server.receive_data(client.send(Ping(30, b"ctx")).data + client.send(Subscribe(b"t")).data, 5.0)
    assert out.events == [Ping(30, b"ctx"), Subscribe(b"t")]
    assert client.receive_data(out.data, 5.0).events == [Pong(b"ctx")]


def test_max_message_bounds_multipart_messages() -> None:
    client, server = Connection("DEALER"), Connection("ROUTER", max_frame=1000, max_message=1500)
    exchange(client, server)
    out = server.receive_data(client.send(Message([b"a" * 900, b"b" * 900])).data, 0.0)
    assert closed(out.events).code == "too-large"


def test_heartbeat_ping_pong_and_timeout() -> None:
    client = Connection("DEALER", heartbeat_interval=1.0, heartbeat_ttl=3.0, heartbeat_timeout=2.0)
    server = Connection("ROUTER")
    exchange(client, server, now=10.0)
    assert client.next_deadline() == 11.0
    assert client.tick(10.5).data == b""
    ping = client.tick(11.0).data
    assert ping == encode_frame(Frame(b"\x04PING\x00\x1e", command=True))  # TTL 3 s = 30 tenths
    out = server.receive_data(ping, 11.1)
    assert out.events == [Ping(30)]
    assert client.receive_data(out.data, 11.2).events == [Pong()]
    # Now the server goes quiet: the client pings again at 12.0 and gives up 2 s later.
    assert client.tick(12.2).data.startswith(b"\x04\x07\x04PING")
    assert client.tick(13.2).events == []
    assert client.tick(14.2).events == [ConnectionClosed("heartbeat-timeout", "no traffic within 2.0 s of our PING")]


def test_peer_ping_ttl_arms_a_deadline_that_traffic_disarms() -> None:
    client, server = Connection("DEALER"), Connection("ROUTER")
    exchange(client, server)
    server.receive_data(client.send(Ping(20)).data, 100.0)  # TTL 2 s
    assert server.next_deadline() == 102.0
    server.receive_data(client.send(Message([b"alive"])).data, 101.0)
    assert server.next_deadline() is None
    server.receive_data(client.send(Ping(20)).data, 103.0)
    assert server.tick(105.0).events == [ConnectionClosed("heartbeat-ttl-expired", "no traffic within the TTL of the peer's PING")]


def test_no_pings_to_a_zmtp_3_0_peer() -> None:
    client = Connection("DEALER", heartbeat_interval=1.0)
    exchange(client, Connection("ROUTER", minor_version=0))
    assert client.next_deadline() is None
    assert client.tick(50.0).data == b""


def test_handshake_timeout() -> None:
    conn = Connection("DEALER", handshake_timeout=5.0)
    conn.start(100.0)
    assert conn.next_deadline() == 105.0
    assert conn.tick(104.9).events == []
    assert conn.tick(105.0).events == [ConnectionClosed("handshake-timeout", "no handshake within 5.0 s")]


def _pair(kind: str) -> tuple[Connection, Connection]:
    """Client and server with every random value fixed, so a replayed server stream stays valid."""
    if kind == "null":
        return Connection("DEALER"), Connection("ROUTER")
    return (
        Connection("DEALER", CurveClientConfig(SERVER_KEYS.public, CLIENT_KEYS, transient=CLIENT_TRANSIENT,
                                               vouch_nonce=bytes(16))),
        Connection("ROUTER", CurveServerConfig(SERVER_KEYS, transient=SERVER_TRANSIENT, cookie_key=bytes(32),
                                               welcome_nonce=bytes(16), cookie_nonce=bytes(16))),
    )


SERVER_KEYS, CLIENT_KEYS, CLIENT_TRANSIENT, SERVER_TRANSIENT = (KeyPair.generate() for _ in range(4))


def _recorded_conversation(kind: str) -> tuple[bytes, list]:
    """Everything a server sends a client in one conversation, and the events the client saw."""
    client, server = _pair(kind)
    to_server = client.start(0.0).data
    stream = server.start(0.0).data
    events = []
    to_client = stream
    while to_client or to_server:
        out = client.receive_data(to_client, 0.0) if to_client else None
        if out:
            events += out.events
            to_server += out.data
        out = server.receive_data(to_server, 0.0) if to_server else None
        to_client, to_server = (out.data, b"") if out else (b"", b"")
        stream += to_client
    tail = server.send(Message([b"one", b"x" * 400])).data + server.send(Ping(0, b"c")).data
    events += client.receive_data(tail, 0.0).events
    return stream + tail, events


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["null", "curve"]), st.lists(st.integers(1, 200), max_size=40))
def test_chunking_of_the_whole_conversation_does_not_change_events(kind: str, cuts: list[int]) -> None:
    stream, expected = _recorded_conversation(kind)
    assert [type(e) for e in expected] == [HandshakeComplete, Message, Ping]
    client, _ = _pair(kind)
    client.start(0.0)
    got = []
    at = 0
    for size in [*cuts, len(stream)]:
        chunk = stream[at:at + size]
        if chunk:  # an empty chunk would mean end of stream
            got += client.receive_data(chunk, 0.0).events
        at += size
    assert got == expected


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(["null", "curve-server", "curve-client"]), st.binary(max_size=300),
       st.sampled_from([b"", b"\x04", b"\x04\xc8\x05HELLO", b"\x04\xa8\x07WELCOME", b"\x00"]))
def test_noise_after_the_greeting_only_closes(kind: str, noise: bytes, prefix: bytes) -> None:
    """Whatever follows a valid greeting, receive_data returns events; at worst ConnectionClosed."""
    if kind == "null":
        conn, peer = Connection("DEALER"), Connection("ROUTER")
    elif kind == "curve-server":
        conn, peer = Connection("ROUTER", CurveServerConfig(SERVER_KEYS)), Connection(
            "DEALER", CurveClientConfig(SERVER_KEYS.public, CLIENT_KEYS))
    else:
        conn, peer = Connection("DEALER", CurveClientConfig(SERVER_KEYS.public, CLIENT_KEYS)), Connection(
            "ROUTER", CurveServerConfig(SERVER_KEYS))
    conn.start(0.0)
    out = conn.receive_data(peer.start(0.0).data + prefix + noise, 0.0)
    assert all(isinstance(e, (ConnectionClosed, HandshakeComplete, Message, Ping, Pong, Error, Subscribe))
               or type(e).__module__.endswith("commands") for e in out.events)
    assert conn.phase is Phase.CLOSED or not any(isinstance(e, ConnectionClosed) for e in out.events)


def test_a_message_before_garbage_in_one_read_is_delivered_then_the_stream_fails() -> None:
    a, b = Connection("DEALER"), Connection("DEALER")
    exchange(a, b)
    # one read: a whole message "hi" (flags 00, size 02), then a frame with reserved flag bits (0x80)
    out = b.receive_data(bytes.fromhex("00 02 6869 80 00"), 1.0)
    assert out.events[0] == Message([b"hi"])
    assert isinstance(out.events[1], ConnectionClosed) and len(out.events) == 2


def test_stream_decoder_hands_over_frames_before_the_error_one_at_a_time() -> None:
    from reference_impl.common.errors import CodecError
    from reference_impl.zmtp.codec import StreamDecoder

    decoder = StreamDecoder()
    frames = decoder.frames(bytes.fromhex("01 01 61 00 01 62 80 00"))
    assert next(frames) == Frame(b"a", more=True)
    assert next(frames) == Frame(b"b")
    with pytest.raises(CodecError):
        next(frames)
    assert decoder.buffered == 2  # the bad frame's octets, the good ones consumed
