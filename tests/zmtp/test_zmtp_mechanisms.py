"""NULL, PLAIN and CURVE between two sans-IO connections: success, refusals and tampering."""

from __future__ import annotations

from nacl.public import Box, PrivateKey, PublicKey

from reference_impl.zmtp.codec import StreamDecoder
from reference_impl.zmtp.connection import Connection, ConnectionClosed, HandshakeComplete, Message
from reference_impl.zmtp.commands import Error
from reference_impl.zmtp.curve import CurveClientConfig, CurveServerConfig, KeyPair
from reference_impl.zmtp.null import NullConfig
from reference_impl.zmtp.plain import PlainClientConfig, PlainServerConfig


def exchange(a: Connection, b: Connection, now: float = 0.0) -> tuple[list, list]:
    """Start both and shuttle their bytes until both are quiet; return each side's events."""
    out_a, out_b = a.start(now), b.start(now)
    events_a, events_b = list(out_a.events), list(out_b.events)
    to_b, to_a = out_a.data, out_b.data
    while to_a or to_b:
        out = b.receive_data(to_b, now) if to_b else None
        to_b = b""
        if out:
            events_b += out.events
            to_a += out.data
        out = a.receive_data(to_a, now) if to_a else None
        to_a = b""
        if out:
            events_a += out.events
            to_b += out.data
    return events_a, events_b


def closed(events: list) -> ConnectionClosed | None:
    return next((e for e in events if isinstance(e, ConnectionClosed)), None)


def test_null_handshake_and_messages() -> None:
    client, server = Connection("DEALER", identity=b"me"), Connection("ROUTER")
    ev_c, ev_s = exchange(client, server)
    assert isinstance(ev_c[0], HandshakeComplete) and ev_c[0].socket_type == "ROUTER"
    assert isinstance(ev_s[0], HandshakeComplete) and ev_s[0].identity == b"me"
    assert ev_s[0].peer_version == (3, 1)
    out = server.receive_data(client.send(Message([b"a", b"", b"c" * 300])).data, 0.0)
    assert out.events == [Message([b"a", b"", b"c" * 300])]


def test_plain_accepts_good_credentials() -> None:
    seen = []
    server_config = PlainServerConfig(lambda user, password: seen.append((user, password)) or password == b"wonderland")
    client = Connection("DEALER", PlainClientConfig(b"alice", b"wonderland"))
    server = Connection("ROUTER", server_config)
    ev_c, ev_s = exchange(client, server)
    assert seen == [(b"alice", b"wonderland")]
    assert isinstance(ev_c[0], HandshakeComplete) and isinstance(ev_s[0], HandshakeComplete)
    assert ev_s[0].peer_user == b"alice"


def test_plain_refusal_sends_error_400() -> None:
    client = Connection("DEALER", PlainClientConfig(b"alice", b"bad"))
    server = Connection("ROUTER", PlainServerConfig(lambda user, password: False))
    ev_c, ev_s = exchange(client, server)
    assert closed(ev_s) == ConnectionClosed("authentication-failed", "user b'alice'")
    assert Error(b"400") in ev_c
    assert closed(ev_c).code == "peer-error"


def curve_pair(authorize=None, server_key: bytes | None = None) -> tuple[Connection, Connection, KeyPair]:
    server_keys, client_keys = KeyPair.generate(), KeyPair.generate()
    client = Connection("DEALER", CurveClientConfig(server_key or server_keys.public, client_keys))
    server = Connection("ROUTER", CurveServerConfig(server_keys, authorize))
    return client, server, client_keys


def test_curve_handshake_and_boxed_messages() -> None:
    client, server, client_keys = curve_pair()
    ev_c, ev_s = exchange(client, server)
    assert isinstance(ev_c[0], HandshakeComplete) and isinstance(ev_s[0], HandshakeComplete)
    assert ev_s[0].peer_user == client_keys.public
    wire = client.send(Message([b"secret", b"x" * 70000])).data
    assert b"secret" not in wire
    assert server.receive_data(wire, 0.0).events == [Message([b"secret", b"x" * 70000])]
    back = server.send(Message([b"reply"])).data
    assert client.receive_data(back, 0.0).events == [Message([b"reply"])]


def test_curve_authorize_refusal_sends_error() -> None:
    client, server, client_keys = curve_pair(authorize=lambda key: False)
    ev_c, ev_s = exchange(client, server)
    assert closed(ev_s).code == "unauthorized"
    assert Error(b"400") in ev_c and closed(ev_c).code == "peer-error"


def test_curve_wrong_server_key_closes_silently() -> None:
    client, server, _ = curve_pair(server_key=KeyPair.generate().public)
    greeting = client.start(0.0).data
    hello = client.receive_data(server.start(0.0).data, 0.0).data
    out = server.receive_data(greeting + hello, 0.0)
    assert out.events == [ConnectionClosed("bad-box", "the HELLO signature box does not open")]
    assert out.data == b""  # RFC 26: reject and disconnect; no WELCOME, no ERROR


def test_curve_tampered_message_is_refused() -> None:
    client, server, _ = curve_pair()
    exchange(client, server)
    wire = bytearray(client.send(Message([b"hello"])).data)
    wire[-1] ^= 1
    assert closed(server.receive_data(bytes(wire), 0.0).events).code == "bad-box"


def test_curve_replayed_message_is_refused() -> None:
    client, server, _ = curve_pair()
    exchange(client, server)
    wire = client.send(Message([b"hello"])).data
    assert server.receive_data(wire, 0.0).events == [Message([b"hello"])]
    assert closed(server.receive_data(wire, 0.0).events).code == "bad-nonce"


def test_curve_message_box_layout_and_nonces() -> None:
    """Open what the client sends with PyNaCl alone, per RFC 26: 'CurveZMQMESSAGEC' + short nonce 3, 4, ..."""
    transient = KeyPair.generate()
    server_transient = KeyPair.generate()
    server_keys = KeyPair.generate()
    client = Connection("DEALER", CurveClientConfig(server_keys.public, KeyPair.generate(), transient=transient))
    server = Connection("ROUTER", CurveServerConfig(server_keys, transient=server_transient))
    exchange(client, server)
    box = Box(PrivateKey(server_transient.secret), PublicKey(transient.public))
    frames = StreamDecoder().feed(client.send(Message([b"one", b"two"])).data)
    for nonce, (frame, plain) in enumerate(zip(frames, [b"\x01one", b"\x00two"]), start=3):
        assert not frame.command and not frame.more  # framed as libzmq frames MESSAGE
        assert frame.body[:16] == b"\x07MESSAGE" + nonce.to_bytes(8, "big")
        assert box.decrypt(frame.body[16:], b"CurveZMQMESSAGEC" + frame.body[8:16]) == plain


def test_mechanism_mismatch() -> None:
    ev_c, ev_s = exchange(Connection("DEALER"), Connection("ROUTER", PlainServerConfig()))
    assert closed(ev_c).code == "mechanism-mismatch" and closed(ev_s).code == "mechanism-mismatch"


def test_two_servers_are_refused() -> None:
    ev_a, ev_b = exchange(Connection("DEALER", PlainServerConfig()), Connection("ROUTER", PlainServerConfig()))
    assert closed(ev_a).code == "role-mismatch" and closed(ev_b).code == "role-mismatch"


def test_two_clients_fail_at_the_first_command() -> None:
    ev_a, ev_b = exchange(Connection("DEALER", PlainClientConfig(b"a", b"b")),
                          Connection("ROUTER", PlainClientConfig(b"a", b"b")))
    assert closed(ev_a).code == "unexpected-command" and closed(ev_b).code == "unexpected-command"


def test_null_config_is_the_default() -> None:
    assert Connection("DEALER").config == NullConfig()
