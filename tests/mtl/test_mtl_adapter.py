"""The MTL adapter (fields <-> ZMTP bytes, matching) and the runner's channels and saved values."""

from __future__ import annotations

import asyncio
import base64
import textwrap

import pytest

from conformance.protocols import adapter_for
from conformance.protocols.base import Frame
from conformance.protocols.mtl import ADAPTER, control_parts, data_parts, frame_check, to_frame
from conformance.protocols.zmtp_channel import ZmtpReader, encode_parts, encode_zmtp
from conformance.scenario.loader import Case, load_file
from reference_impl.common.errors import CodecError
from reference_impl.mtl import control
from reference_impl.mtl.codec import Content, Summon, encode_data
from reference_impl.mtl.server import start_server
from reference_impl.zmtp.commands import Metadata, Ready, encode_command
from reference_impl.zmtp.codec import Frame as ZFrame, encode_frame
from reference_impl.zmtp.greeting import Greeting, encode_greeting
from suite_helpers import Grade, run_case


def test_registered() -> None:
    assert adapter_for("mtl") is ADAPTER and ADAPTER.transports == ("zmtp",)


def test_control_request_fields() -> None:
    assert control_parts({"command": "Connection.Profile", "body": {"profile": "test"}}) == [
        b"", b"Connection.Profile", b'{"profile":"test"}']
    assert control_parts({"command": "X", "json": "{bad", "delimiter": False}) == [b"X", b"{bad"]
    plain = control_parts({"command": "Connection.Authorize", "mechanism": "PLAIN", "user": "alice",
                           "password": "wonderland"})
    assert control.decode_json(plain[2]) == {"mechanism": "PLAIN",
                                             "response": base64.b64encode(b"\0alice\0wonderland").decode()}


def test_scram_messages_from_fields_match_rfc7677() -> None:
    first = control_parts({"command": "Connection.Authorize", "mechanism": "SCRAM-SHA-256", "scram": "client-first",
                           "user": "user", "nonce": "rOprNGfwEbeRWgbNEkqO"})
    assert base64.b64decode(control.decode_json(first[2])["response"]) == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    server_first = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    final = control_parts({"command": "Connection.Authorize", "mechanism": "SCRAM-SHA-256", "scram": "client-final",
                           "user": "user", "password": "pencil", "nonce": "rOprNGfwEbeRWgbNEkqO",
                           "challenge": base64.b64encode(server_first).decode()})
    assert base64.b64decode(control.decode_json(final[2])["response"]).endswith(
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    ack = control_parts({"command": "Connection.Authorize", "mechanism": "SCRAM-SHA-256", "scram": "ack"})
    assert control.decode_json(ack[2])["response"] == ""


def test_data_fields_allow_invalid_values() -> None:
    assert data_parts({"kind": "summon", "seq": 2, "resource": "resource"}) == encode_data(Summon(2, "resource"))
    assert data_parts({"kind": "confirm", "seq": 1, "multiple": 2})[0][-1] == 2
    assert data_parts({"kind": "reject", "seq": 1, "recycle": 7})[0][-2:] == b"\x00\x07"
    assert data_parts({"type": 0x42, "header": {"hex": "42 00"}}) == [b"\x42\x00", b""]
    assert data_parts({"kind": "ping", "extra": {"hex": "00"}})[0] == b"\x08\x00"
    assert data_parts({"kind": "response", "seq": 1, "code": 403})[1] == b"403"


def test_reader_turns_the_stream_into_frames() -> None:
    reader = ZmtpReader(to_frame)
    stream = (encode_greeting(Greeting("NULL")) + encode_frame(ZFrame(encode_command(
        Ready(Metadata.of({"Socket-Type": b"ROUTER", "Identity": b""}))), command=True))
        + encode_parts([b""] + control.encode_reply(202, {"status": "Data Lease", "port": 5556, "lease": "x"}))
        + encode_parts(encode_data(Content(3, "resource", (("k", "v"),), b"hi")), long=True))
    frames = []
    for i in range(len(stream)):  # one octet at a time
        frames += reader.feed(stream[i:i + 1])
    kinds = [f.fields["kind"] for f in frames]
    assert kinds == ["greeting", "command", "reply", "content"]
    assert frames[1].fields["socket_type"] == "ROUTER"
    assert frames[2].fields["code"] == 202 and frames[2].fields["port"] == 5556
    assert frames[3].fields["properties"] == {"k": "v"} and frames[3].fields["payload"] == b"hi"


def test_reader_refuses_invalid_target_bytes() -> None:
    reader = ZmtpReader(to_frame)
    reader.feed(encode_greeting(Greeting("NULL")))
    with pytest.raises(CodecError):
        reader.feed(encode_parts([b"\x06" + bytes(8) + b"\x05", b""]))  # Boolean 5 from the target


def frame(**fields) -> Frame:
    return Frame(fields, str(fields))


def test_matching_extensions() -> None:
    reply = frame(kind="reply", code=201, profiles=["Test", "confirm-test"], port=5556, body={"a": 1})
    assert ADAPTER.matches({"profiles": {"contains": ["test"]}}, reply)[0]
    assert not ADAPTER.matches({"profiles": {"contains": ["other"]}}, reply)[0]
    assert ADAPTER.matches({"port": {"type": "number", "min": 1}}, reply)[0]
    assert not ADAPTER.matches({"port": {"type": "string"}}, reply)[0]
    assert not ADAPTER.matches({"port": {"type": "number"}}, frame(port="5556"))[0]
    assert ADAPTER.matches({"body": {"a": 1}}, reply)[0]
    assert ADAPTER.matches({"code": {"in": [200, 201]}}, reply)[0]
    content = frame(kind="content", properties={"k": "v"}, payload=b"xyz")
    assert ADAPTER.matches({"properties": {"k": "v"}, "payload": "xyz"}, content)[0]
    assert not ADAPTER.matches({"properties": {}}, content)[0]


def test_scram_server_final_matching() -> None:
    server_first = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    spec = {"scram_server_final": {"user": "user", "password": "pencil", "nonce": "rOprNGfwEbeRWgbNEkqO",
                                   "challenge": base64.b64encode(server_first).decode()}}
    good = frame(challenge=base64.b64encode(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=").decode())
    bad = frame(challenge=base64.b64encode(b"v=6rrjTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=").decode())
    assert ADAPTER.matches(spec, good)[0]
    assert not ADAPTER.matches(spec, bad)[0]


def test_frame_check_names_unknown_fields() -> None:
    problems = frame_check({"steps": [{"send": {"kind": "summon", "sequence": 1}},
                                      {"send": {"kind": "subscribe"}},
                                      {"expect": {"kind": "reply", "cod": 200}}]})
    assert [p[0][-1] for p in problems] == ["sequence", "kind", "cod"]


def test_zmtp_steps() -> None:
    assert encode_zmtp({"zmtp": "greeting", "mechanism": None})[12:16] == b"NULL"  # YAML's bare NULL
    assert encode_zmtp({"zmtp": "ready", "socket_type": "REQ"})[:2] == b"\x04\x19"
    with pytest.raises(CodecError):
        encode_zmtp({"zmtp": "bogus"})


# -- the runner: connect / use / save ----------------------------------------------------

def _case(tmp_path, steps: str) -> Case:
    path = tmp_path / "scenarios" / "mtl" / "t.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(textwrap.dedent("""\
        protocol: mtl
        family: t
        cases:
          - id: mtl/t/case
            title: t
            spec: s
            requirement: MUST
            transports: [zmtp]
            steps:
        """) + textwrap.indent(textwrap.dedent(steps), " " * 6))
    loaded = load_file(path, frame_check)
    assert isinstance(loaded.cases[0], Case), loaded.cases[0]
    return loaded.cases[0]


async def _against_ref(case: Case):
    server = await start_server("127.0.0.1", 0, heartbeat_interval=1.0, heartbeat_timeout=3.0, redeliver_after=0.6)
    try:
        return await run_case(case, server.url, transport="zmtp")
    finally:
        await server.close()


def test_connect_use_and_save(tmp_path) -> None:
    case = _case(tmp_path, """\
        - macro: test-profile
        - send: {command: Connection.Writer, body: {resources: [resource], confirm: none}}
        - expect: {kind: reply, code: 202, save: {p: port, l: lease}}
        - connect: {channel: data, port: "= p"}
        - macro: zmtp-dealer
        - send: {kind: lease, seq: 3, lease: "= l"}
        - expect: {kind: response, seq: 3, code: 200}
        - use: main
        - send: {command: Connection.Profile, body: {profile: test}}
        - expect: {kind: reply, code: 200}
        - use: data
        - send: {kind: ping}
        - expect: {kind: pong}
        """)
    result = asyncio.run(_against_ref(case))
    assert result.grade is Grade.PASSED, result.message
    assert "channel data: tcp://127.0.0.1:" in result.log.render()


@pytest.mark.parametrize("steps,message", [
    ("- use: nowhere\n", "no channel 'nowhere'"),
    ("- connect: {channel: x, port: \"= undefined\"}\n", "port number"),
    ("- connect: {channel: main, port: 1}\n", "already open"),
])
def test_broken_channel_steps_are_errors(tmp_path, steps, message) -> None:
    steps += "- expect_close: {within_ms: 100}\n"  # a case must grade something to load
    result = asyncio.run(_against_ref(_case(tmp_path, steps)))
    assert result.grade is Grade.ERROR and message in result.message, result.message


def test_save_of_a_missing_field_is_an_error(tmp_path) -> None:
    case = _case(tmp_path, """\
        - macro: zmtp-req
        - send: {command: Connection.Open, body: {protocol: {name: MTL, version: 1}}}
        - expect: {kind: reply, code: 401, save: {x: port}}
        """)
    result = asyncio.run(_against_ref(case))
    assert result.grade is Grade.ERROR and "no field 'port'" in result.message
