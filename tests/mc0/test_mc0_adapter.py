"""The mc0 adapter: the ZMTP session inside the reader, fields <-> frames, matching, scenario checks."""

from __future__ import annotations

import time

import pytest

from conformance.protocols import adapter_for
from conformance.protocols.mc0 import frame_check, message_frame, message_frames, new_reader, normalize
from conformance.scenario.values import ValueError_
from reference_impl.mc0 import testkeys
from reference_impl.zmtp.connection import Connection, HandshakeComplete, Message
from reference_impl.zmtp.curve import CurveServerConfig
from reference_impl.zmtp.greeting import Greeting, encode_greeting
from reference_impl.zmtp.null import NullConfig

ADAPTER = adapter_for("mc0")


def pump(session, server: Connection, first: bytes) -> list:
    """Carry bytes between the session and an in-memory server connection until both are quiet."""
    frames, to_server, server_events = [], first, []
    for _ in range(20):
        out = server.receive_data(to_server, time.monotonic()) if to_server else None
        if out is not None:
            server_events += out.events
        to_session = out.data if out is not None else b""
        if to_session:
            frames += session.feed(to_session)
        to_server = session.outgoing()
        if not to_server and not to_session:
            break
    return frames, server_events


def _session_and_curve_server():
    """The suite's ZMTP session and a reference CURVE server, with the server's greeting."""
    server = Connection("ROUTER", CurveServerConfig(testkeys.SERVER))
    return new_reader("zmtp"), server, server.start(time.monotonic()).data


def test_curve_handshake_and_messages_through_the_session() -> None:
    session, server, greeting = _session_and_curve_server()
    (hello,) = session.encode({"zmtp": "handshake", "mechanism": "CURVE", "server_key": "test"})
    session.feed(greeting)
    frames, events = pump(session, server, hello + session.outgoing())
    assert [f.fields["zmtp"] for f in frames] == ["ready"]
    fields = dict(frames[0].fields)
    # the WELCOME's S', as an integer (a case compares two connections' with min/max)
    assert fields.pop("server_transient") == int.from_bytes(server.mechanism._transient.public, "big")
    assert fields == {"zmtp": "ready", "mechanism": "CURVE", "socket_type": "ROUTER", "version": "3.1"}
    assert any(isinstance(e, HandshakeComplete) and e.peer_user == testkeys.CLIENT.public for e in events)
    (data,) = session.encode({"verb": "PUT", "id": 7, "topic": "t", "headers": {"X-A": "b"}, "body": "x"})
    out = server.receive_data(data, time.monotonic())
    assert out.events == [Message([b"", b"PUT", b"ID", b"7", b"TOPIC", b"t", b"X-A", b"b", b"", b"x"])]
    reply = server.send(Message([b"", b"OK", b"ID", b"7"])).data
    (ok,) = session.feed(reply)
    assert ADAPTER.matches(normalize({"verb": "OK", "id": 7}), ok)[0]


def test_a_replayed_message_and_a_forged_vouch_are_refused_by_the_reference() -> None:
    session, server, greeting = _session_and_curve_server()
    with pytest.raises(ValueError_):
        session.encode({"zmtp": "replay"})  # no message sent yet
    (hello,) = session.encode({"zmtp": "handshake", "server_key": "test"})
    session.feed(greeting)
    pump(session, server, hello + session.outgoing())
    (data,) = session.encode({"verb": "NOOP", "id": "once"})
    assert session.encode({"zmtp": "replay"}) == [data]  # octet for octet: its short nonce reused
    assert server.receive_data(data, time.monotonic()).events == [Message([b"", b"NOOP", b"ID", b"once"])]
    assert server.receive_data(data, time.monotonic()).events[-1].code == "bad-nonce"

    session, server, greeting = _session_and_curve_server()
    (hello,) = session.encode({"zmtp": "handshake", "server_key": "test", "vouch": "forged"})
    session.feed(greeting)
    frames, events = pump(session, server, hello + session.outgoing())
    assert events[-1].code == "bad-vouch"


def test_wrong_server_key_is_reported_by_the_server_not_the_session() -> None:
    session, server, greeting = _session_and_curve_server()
    (hello,) = session.encode({"zmtp": "handshake", "server_key": "wrong"})
    session.feed(greeting)
    frames, events = pump(session, server, hello + session.outgoing())
    assert frames == [] and events[-1].code == "bad-box"


def test_null_session_against_curve_server_reports_the_mismatch() -> None:
    session = new_reader("zmtp")
    session.encode({"zmtp": "handshake", "mechanism": "NULL"})
    frames = session.feed(encode_greeting(Greeting("CURVE", True, 3, 1)))
    assert [f.fields for f in frames] == [{"zmtp": "closed", "code": "mechanism-mismatch"}]


def test_raw_mode_reports_the_targets_greeting_and_commands() -> None:
    session = new_reader("zmtp")
    server = Connection("ROUTER", NullConfig())
    data = server.start(time.monotonic()).data
    data += server.receive_data(encode_greeting(Greeting("NULL", False, 3, 1)), time.monotonic()).data
    frames = session.feed(data[:5]) + session.feed(data[5:])
    assert [f.fields.get("name", f.fields["zmtp"]) for f in frames] == ["greeting", "READY"]
    assert frames[0].fields["mechanism"] == "NULL"


def test_sends_before_a_handshake_are_not_sent_and_noted() -> None:
    session = new_reader("zmtp")
    assert session.encode({"verb": "NOOP"}) == []
    with pytest.raises(ValueError_):
        session.encode({"zmtp": "handshake", "mechanism": "PLAIN"})


def test_fields_to_frames() -> None:
    assert message_frames({"verb": "SUB", "positional": ["a", {"hex": "00ff"}]}) == [b"", b"SUB", b"", b"a", b"\x00\xff"]
    assert message_frames({"verb": "SUB", "separator": True}) == [b"", b"SUB", b""]
    assert message_frames({"verb": "PUT", "headers": ["TOPIC", "t", "X-A"]}) == [b"", b"PUT", b"TOPIC", b"t", b"X-A"]
    assert message_frames({"verb": "NOOP", "delimiter": False, "id": 5}) == [b"NOOP", b"ID", b"5"]
    assert message_frames({"frames": ["", "NOOP"]}) == [b"", b"NOOP"]


def test_frames_to_fields_and_matching() -> None:
    frame = message_frame([b"", b"MESSAGE", b"TOPIC", b"t", b"X-B", b"2", b"X-A", b"1", b"", b"p1", b"p2"])
    f = frame.fields
    assert f["verb"] == "MESSAGE" and f["topic"] == "t" and f["parts"] == 2 and f["payload"] == b"p1p2"
    assert f["header_list"] == ["TOPIC", "t", "X-B", "2", "X-A", "1"]
    # headers: the same set in any order; header_list: exactly this order
    assert ADAPTER.matches(normalize({"headers": {"X-A": 1, "X-B": 2, "TOPIC": "t"}}), frame)[0]
    assert not ADAPTER.matches(normalize({"headers": {"X-A": 1, "TOPIC": "t"}}), frame)[0]
    assert not ADAPTER.matches(normalize({"header_list": ["TOPIC", "t", "X-A", "1", "X-B", "2"]}), frame)[0]
    broken = message_frame([b"", b"PUT", b"TOPIC"]).fields
    assert broken["malformed"] == "odd-headers" and broken["verb"] == "PUT"
    assert message_frame([b"OK", b"ID", b"1"]).fields["delimiter"] is False


@pytest.mark.parametrize("spec, wire", [
    ({"hex": "00 ff 20 7f 80"}, b"\x00\xff\x20\x7f\x80"),
    ({"utf8": "caf\u00e9"}, "caf\u00e9".encode()),
])
def test_binary_ids_and_topics_are_compared_byte_for_byte(spec: dict, wire: bytes) -> None:
    # {hex}/{utf8} used to reach the range matcher, which took a dict with no bounds as "anything"
    for key, name in (("id", b"ID"), ("topic", b"TOPIC")):
        right = message_frame([b"", b"OK", name, wire])
        wrong = message_frame([b"", b"OK", name, wire[:-1] + b"\x01"])
        assert ADAPTER.matches(normalize({key: spec}), right)[0]
        assert not ADAPTER.matches(normalize({key: spec}), wrong)[0]


def test_frame_check_names_the_bad_field() -> None:
    case = {"steps": [{"send": {"verb": "PUT", "topik": "t"}}, {"expect": {"verb": "OK", "idd": 1}},
                      {"send": {"zmtp": "handshake", "mechanism": None}}, {"expect": {"zmtp": "reddy"}}]}
    problems = frame_check(case)
    assert [p for p, _ in problems] == [("steps", 0, "send", "topik"), ("steps", 1, "expect", "idd"),
                                        ("steps", 2, "send", "mechanism"), ("steps", 3, "expect", "zmtp")]
