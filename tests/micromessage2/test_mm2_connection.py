"""In-memory client <-> server connections: handshake outcomes and the rules of an open connection."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reference_impl.common.errors import CodecError
from reference_impl.micromessage2.codec import (
    CommandFrame, ErrorFrame, ExtensionFrame, MessageFrame, decode_frames, encode_frame, error_frame,
)
from reference_impl.micromessage2.connection import Connection, Role, State
from reference_impl.micromessage2.events import (
    AckReceived, ConnectionClosed, ErrorReceived, ErrorSent, HandshakeComplete, LocalProtocolError, MessageReceived,
    Subscribed, Unsubscribed,
)
from reference_impl.micromessage2.extensions import REGISTERED, is_vendor


def pair(client: dict[str, Any] | None = None,
         server: dict[str, Any] | None = None) -> tuple[Connection, Connection, list, list]:
    """Run the handshake; returns both connections and the events each side saw."""
    c = Connection(Role.CLIENT, identity="hulk", **(client or {}))
    s = Connection(Role.SERVER, identity="srver", **(server or {}))
    client_events: list = []
    server_events: list = []
    for _ in range(3):
        if data := c.data_to_send():
            server_events += s.receive_data(data, 0.0)
        if data := s.data_to_send():
            client_events += c.receive_data(data, 0.0)
    return c, s, client_events, server_events


def error_code(events: list) -> str | None:
    sent = [e for e in events if isinstance(e, ErrorSent)]
    return sent[0].code if sent else None


def test_seed_handshake_bytes_and_ids() -> None:
    c = Connection(Role.CLIENT, identity="hulk", required="json;dotnet")
    s = Connection(Role.SERVER, identity="srver", optional="batch-ack")
    hello = c.data_to_send()
    assert hello == bytes([1, 0, 0, 4]) + b"hulk" + bytes([0, 11]) + b"json;dotnet" + bytes([0, 0])
    assert s.receive_data(hello, 0.0) == []
    server_hello = s.data_to_send()
    assert server_hello == bytes([1, 0, 0, 5]) + b"srver" + bytes([0, 0, 0, 9]) + b"batch-ack"
    [done] = c.receive_data(server_hello, 0.0)
    final = c.data_to_send()
    assert final == bytes([1, 0, 0, 4]) + b"hulk" + bytes([0, 11]) + b"json;dotnet" + bytes([0, 9]) + b"batch-ack"
    [server_done] = s.receive_data(final, 0.0)
    for event in (done, server_done):
        assert isinstance(event, HandshakeComplete)
        assert [event.negotiated.id_of(n) for n in ("json", "dotnet", "batch-ack")] == [1, 2, 3]
        assert event.negotiated.window == 10


def test_spec_negotiation_example() -> None:
    # Client: I require A, B and suggest X, Y.  Server: I also require C; I suggest Y like you but also Z.
    c, s, _, _ = pair(
        {"required": "json;dotnet", "optional": "x-x;pubsub", "supported": {"x-c", "x-z"}},
        {"required": "x-c", "optional": "x-z", "supported": {"json", "dotnet", "pubsub"}},
    )
    assert s.state is State.OPEN and c.state is State.OPEN
    names = [e.name for e in s.negotiated.extensions]
    # final: client's required then the server's; optional: offered ones the server took, then its suggestion
    assert names == ["json", "dotnet", "x-c", "pubsub", "x-z"]
    assert c.negotiated.extensions == s.negotiated.extensions
    assert (c.negotiated.peer_identity, s.negotiated.peer_identity) == ("srver", "hulk")


def test_client_declines_acks_it_does_not_support() -> None:
    # Spec: "Server: json;ack;batch-ack ... Client: json"
    c, s, _, _ = pair({"optional": "json;xml;protobuf;", "supported": {"json"}}, {"optional": "json;ack;batch-ack"})
    assert [e.name for e in s.negotiated.extensions] == ["json"]
    assert s.send_credit is None


@pytest.mark.parametrize(("client", "server", "erring_side"), [
    ({"required": "x-missing"}, {}, "server"),
    ({}, {"required": "x-server-only"}, "client"),
    ({"version": (2, 0)}, {}, "server"),
])
def test_handshake_refusals(client: dict, server: dict, erring_side: str) -> None:
    c, s, client_events, server_events = pair(client, server)
    sender, receiver = (server_events, client_events) if erring_side == "server" else (client_events, server_events)
    assert error_code(sender) in ("missing-required-extension", "version-mismatch")
    assert any(isinstance(e, ErrorReceived) for e in receiver)
    assert {c.state, s.state} == {State.CLOSING, State.CLOSED}


def test_lower_minor_version_is_used() -> None:
    c, s, _, _ = pair({"version": (1, 3)}, {"version": (1, 1)})
    assert c.negotiated.version == s.negotiated.version == (1, 1)


def test_bad_extension_list_syntax_is_refused() -> None:
    s = Connection(Role.SERVER)
    hello = bytes([1, 0, 0, 0, 0, 23]) + b"batch-ack:max-count:100" + bytes([0, 0])
    assert error_code(s.receive_data(hello, 0.0)) == "bad-property"
    assert decode_frames(s.data_to_send())[0].reason.startswith("bad-property")


def test_final_dropping_server_required_is_refused() -> None:
    s = Connection(Role.SERVER, required="json")
    s.receive_data(bytes([1, 0, 0, 0, 0, 0, 0, 0]), 0.0)
    s.data_to_send()
    assert error_code(s.receive_data(bytes([1, 0, 0, 0, 0, 0, 0, 0]), 0.0)) == "required-not-accepted"


@pytest.mark.parametrize("frame", [MessageFrame(1, "q", "", b""), ExtensionFrame(1, b"\x00\x01")])
def test_frame_before_handshake_is_refused(frame) -> None:
    s = Connection(Role.SERVER)
    events = s.receive_data(encode_frame(frame), 0.0)
    assert error_code(events) == "version-mismatch"
    assert s.state is State.CLOSING
    assert isinstance(decode_frames(s.data_to_send())[0], ErrorFrame)


def test_error_received_during_handshake_closes() -> None:
    c = Connection(Role.CLIENT)
    assert c.receive_data(encode_frame(ErrorFrame(b"go away")), 0.0) == [ErrorReceived("go away")]
    assert c.state is State.CLOSED


@pytest.mark.parametrize("ext_id", [4, 255])
def test_extension_id_past_the_list(ext_id: int) -> None:
    c, s, _, _ = pair({"required": "json;dotnet", "optional": "batch-ack"})
    assert error_code(s.receive_data(encode_frame(ExtensionFrame(ext_id, b"")), 0.0)) == "unknown-extension-id"


def test_extension_id_zero() -> None:
    c, s, _, _ = pair({"required": "json"})
    assert error_code(s.receive_data(bytes([0x02, 0x00, 0x00]), 0.0)) == "zero-extension-id"


def test_flags_errors_close_the_connection() -> None:
    c, s, _, _ = pair()
    assert error_code(s.receive_data(bytes([0x03, 0x00]), 0.0)) == "conflicting-kind"
    assert s.receive_data(b"more", 0.0) == []  # draining after our ERROR
    assert s.receive_data(b"", 0.0) == [ConnectionClosed(mid_frame=False)]


def push(sender: Connection, receiver: Connection, n: int) -> list[MessageReceived]:
    for _ in range(n):
        sender.send_message("q", b"x")
    return [e for e in receiver.receive_data(sender.data_to_send(), 0.0) if isinstance(e, MessageReceived)]


@pytest.mark.parametrize(("extensions", "window"), [
    ("ack", 1), ("batch-ack", 10), ("batch-ack:max-count=3", 3), ("ack;batch-ack:max-count=3", 1),
    ("batch-ack:count=10", 10),
])
def test_window_sizes(extensions: str, window: int) -> None:
    c, s, _, _ = pair({"required": extensions})
    assert s.send_credit == window == c.send_credit
    push(s, c, window)
    with pytest.raises(LocalProtocolError):
        s.send_message("q", b"x")


def test_bad_max_count_is_refused() -> None:
    s = Connection(Role.SERVER)
    hello = bytes([1, 0, 0, 0, 0, 0, 0, 21]) + b"batch-ack:max-count=x"
    assert error_code(s.receive_data(hello, 0.0)) == "bad-max-count"
    with pytest.raises(CodecError):
        Connection(Role.CLIENT, optional="batch-ack:max-count=65536")


def test_ack_frames_and_cumulative_acks() -> None:
    c, s, _, _ = pair({"required": "batch-ack:max-count=4"})
    assert [m.seq for m in push(s, c, 4)] == [1, 2, 3, 4]
    assert c.send_ack(2) == 2
    ack = c.data_to_send()
    assert ack == bytes([0x02, 1, 2, 0, 2])  # EXTENSION, batch-ack ID 1, length 2, seq 00 02
    assert s.receive_data(ack, 0.0) == [AckReceived(2, 2)]
    assert s.send_credit == 2
    c.send_ack()  # the last received: 4
    assert s.receive_data(c.data_to_send(), 0.0) == [AckReceived(4, 2)]
    # repeated or older ack: no-op
    assert s.receive_data(encode_frame(ExtensionFrame(1, b"\x00\x03")), 0.0) == [AckReceived(3, 0)]


@pytest.mark.parametrize(("payload", "code"), [(b"\x00\x09", "ack-not-sent"), (b"\x00\x00", "ack-not-sent"),
                                               (b"\x01", "bad-ack")])
def test_bad_acks(payload: bytes, code: str) -> None:
    c, s, _, _ = pair({"required": "ack"})
    push(s, c, 1)
    assert error_code(s.receive_data(encode_frame(ExtensionFrame(1, payload)), 0.0)) == code


def test_sender_past_the_window_is_caught() -> None:
    c, s, _, _ = pair({"required": "batch-ack:max-count=2"})
    frames = b"".join(encode_frame(MessageFrame(i, "q", "", b"")) for i in (1, 2, 3))
    assert error_code(c.receive_data(frames, 0.0)) == "window-exceeded"


def test_acks_across_the_wrap() -> None:
    c, s, _, _ = pair({"required": "batch-ack:max-count=100"})
    seqs = []
    for _ in range(700):
        seqs += [m.seq for m in push(s, c, 100)]
        c.send_ack()
        s.receive_data(c.data_to_send(), 0.0)
    assert seqs[65533:65537] == [65534, 65535, 1, 2]
    assert seqs.count(1) == 2 and 0 not in seqs


def test_dotnet_type_frames() -> None:
    c, s, _, _ = pair({"required": "json;dotnet"})
    s.send_message("q", b"{}", type_name="App.Report, App")
    wire = s.data_to_send()
    assert wire[:3] == bytes([0x02, 2, 15])  # the type frame first, dotnet = ID 2
    s.send_message("q", b"[]")  # no type frame: the receiver reuses the last type
    events = c.receive_data(wire + s.data_to_send(), 0.0)
    assert [(e.payload, e.type_name) for e in events] == [(b"{}", "App.Report, App"), (b"[]", "App.Report, App")]


def test_split_and_join_over_the_connection() -> None:
    c, s, _, _ = pair({}, {"fragment_size": 5})
    s.send_message("q", b"0123456789abc", "k:N1;")
    wire = s.data_to_send()
    assert [len(f.payload) for f in decode_frames(wire)] == [5, 5, 3]
    events = []
    for i in range(len(wire)):  # one byte at a time
        events += c.receive_data(wire[i:i + 1], 0.0)
    assert events == [MessageReceived(1, "q", "k:N1;", b"0123456789abc")]


def test_fragment_mismatch_and_too_large() -> None:
    c, s, _, _ = pair()
    bad = encode_frame(MessageFrame(1, "q", "", b"a", True)) + encode_frame(MessageFrame(2, "q", "", b"b"))
    assert error_code(c.receive_data(bad, 0.0)) == "fragment-mismatch"
    c, s, _, _ = pair({"max_message": 4})
    big = b"".join(encode_frame(MessageFrame(1, "q", "", b"abc", True)) for _ in range(2))
    assert error_code(c.receive_data(big, 0.0)) == "too-large"


def test_pubsub_commands() -> None:
    c, s, _, _ = pair({"required": "pubsub"})
    c.send_command("subscribe", {"destination": "test/topic"})
    wire = c.data_to_send()
    assert wire == bytes([0x01, 34]) + b"subscribe;destination=test%2Ftopic"
    assert s.receive_data(wire, 0.0) == [Subscribed("test/topic")]
    c.send_command("unsubscribe", {"destination": "test/topic"})
    assert s.receive_data(c.data_to_send(), 0.0) == [Unsubscribed("test/topic")]


@pytest.mark.parametrize(("client", "payload", "code"), [
    ({}, b"subscribe;destination=x", "pubsub-not-active"),
    ({"required": "pubsub"}, b"subscribe", "missing-destination"),
    ({"required": "pubsub"}, b"publish;destination=x", "unknown-command"),
    ({"required": "pubsub"}, b"Subscribe", "bad-name"),
])
def test_bad_commands(client: dict, payload: bytes, code: str) -> None:
    c, s, _, _ = pair(client)
    assert error_code(s.receive_data(encode_frame(CommandFrame(payload)), 0.0)) == code


def test_stall_mid_frame_times_out() -> None:
    c, s, _, _ = pair({}, {"read_timeout": 5.0})
    assert s.receive_data(bytes([0x00, 0x00]), 10.0) == []  # a frame begins
    assert s.tick(14.9) == []
    s.receive_data(bytes([0x01]), 14.95)  # trickling bytes do not restart the clock
    assert error_code(s.tick(15.0)) == "read-timeout"
    assert s.state is State.CLOSING


def test_no_timeout_between_frames() -> None:
    c, s, _, _ = pair()
    s.receive_data(encode_frame(MessageFrame(1, "q", "", b"")), 1.0)
    assert s.tick(1000.0) == []
    assert s.state is State.OPEN


def test_stream_end_mid_frame() -> None:
    c, s, _, _ = pair()
    s.receive_data(bytes([0x00]), 0.0)
    assert s.receive_data(b"", 0.0) == [ConnectionClosed(mid_frame=True)]
    assert s.state is State.CLOSED


def test_local_misuse() -> None:
    c = Connection(Role.CLIENT)
    with pytest.raises(LocalProtocolError):
        c.send_message("q", b"")  # before the handshake
    c, s, _, _ = pair()
    with pytest.raises(LocalProtocolError):
        c.send_ack(1)  # acks are off
    with pytest.raises(LocalProtocolError):
        c.send_message("q", b"", type_name="T")  # dotnet not active


def test_send_error_then_closing() -> None:
    c, s, _, _ = pair()
    [event] = s.send_error("shutting-down")
    assert event == ErrorSent("shutting-down", "shutting-down")
    assert s.data_to_send() == bytes([4, 13]) + b"shutting-down"
    assert s.state is State.CLOSING


def test_handshake_and_frames_in_one_chunk() -> None:
    c = Connection(Role.CLIENT, required="pubsub")
    s = Connection(Role.SERVER)
    s.receive_data(c.data_to_send(), 0.0)
    c.receive_data(s.data_to_send(), 0.0)
    c.send_command("subscribe", {"destination": "t"})
    events = s.receive_data(c.data_to_send(), 0.0)  # final handshake + COMMAND together
    assert [type(e) for e in events] == [HandshakeComplete, Subscribed]


def test_registry_names() -> None:
    assert REGISTERED == {"json", "dotnet", "ack", "batch-ack", "pubsub"}
    assert is_vendor("x-acme") and not is_vendor("xml") and not is_vendor("x-Acme")
    # an unregistered, non-vendor name is still well-formed: a peer simply may not support it
    c, s, _, server_events = pair({"optional": "xml;x-acme"}, {"supported": {"x-acme"}})
    assert [e.name for e in s.negotiated.optional] == ["x-acme"]
    c.send_extension("x-acme", b"hello")
    [event] = s.receive_data(c.data_to_send(), 0.0)
    assert (event.name, event.ext_id, event.payload) == ("x-acme", 1, b"hello")


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=120), st.lists(st.integers(1, 40), max_size=6), st.booleans())
def test_noise_never_escapes_as_an_exception(noise: bytes, chunk_sizes: list[int], open_first: bool) -> None:
    if open_first:
        _, conn, _, _ = pair({"required": "pubsub;batch-ack:max-count=2;dotnet"})
    else:
        conn = Connection(Role.SERVER)
    conn.data_to_send()
    events = []
    pos = 0
    for size in [*chunk_sizes, len(noise)]:
        events += conn.receive_data(noise[pos:pos + size] or b"\x00", 1.0)
        pos += size
    events += conn.tick(100.0)
    errors = [e for e in events if isinstance(e, ErrorSent)]
    assert (conn.state is State.CLOSING) == bool(errors)
    if errors:
        assert conn.data_to_send().endswith(encode_frame(error_frame(errors[0].reason)))
