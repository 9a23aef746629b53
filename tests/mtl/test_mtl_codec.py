"""The MTL codecs: data commands, field encodings, control messages, SASL."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given, strategies as st

from reference_impl.common.errors import CodecError
from reference_impl.mtl import codec, control, sasl
from reference_impl.mtl.codec import (
    Confirm, Content, Dismiss, Lease, Ping, Pong, Reject, Response, Summon, decode_data, encode_data,
)

U64 = 2**64 - 1


@pytest.mark.parametrize("command", [
    Lease(1, "abc"), Lease(U64, ""), Response(7, 200), Response(0, 403), Summon(2, "resource"), Dismiss(3, "r" * 255),
    Content(4, "resource", (("a", "b"), ("a", "c")), b"\x00body"), Content(0, "", (), b""), Confirm(5, True),
    Confirm(U64, False), Reject(6, False, True), Reject(6, True, False), Ping(), Pong(),
])
def test_every_command_round_trips(command) -> None:
    frames = encode_data(command)
    assert len(frames) == 2
    assert decode_data(frames) == command


def test_bytes_by_hand() -> None:
    assert encode_data(Summon(2, "resource")) == [b"\x03" + (2).to_bytes(8, "big") + b"\x08resource", b""]
    assert encode_data(Response(1, 200)) == [b"\x02" + bytes(7) + b"\x01", b"200"]
    header = encode_data(Content(1, "r", (("k", "v"),), b"x"))[0]
    assert header == b"\x05" + bytes(7) + b"\x01" + b"\x01r" + b"\x00\x01" + b"\x01k\x01v"
    assert encode_data(Reject(1, True, False))[0][-2:] == b"\x01\x00"


@pytest.mark.parametrize("frames,code", [
    ([b"\x08"], "frame-count"), ([b"\x08", b"", b""], "frame-count"), ([b"", b""], "empty-header"),
    ([b"\x0a", b""], "unknown-type"), ([b"\x00", b""], "unknown-type"),
    ([b"\x01" + bytes(7), b""], "truncated"), ([b"\x03" + bytes(8) + b"\x05abc", b""], "truncated"),
    ([b"\x05" + bytes(8) + b"\x00", b""], "truncated"), ([b"\x05" + bytes(8) + b"\x00\x00\x01", b""], "truncated"),
    ([b"\x08\x00", b""], "trailing-bytes"), ([b"\x06" + bytes(8) + b"\x01\x01", b""], "trailing-bytes"),
    ([b"\x06" + bytes(8) + b"\x02", b""], "bad-boolean"), ([b"\x07" + bytes(8) + b"\x00\xff", b""], "bad-boolean"),
    ([b"\x01" + bytes(8) + b"\x02a\x00", b""], "bad-short-string"), ([b"\x02" + bytes(8), b"2000"], "bad-code"),
    ([b"\x02" + bytes(8), b"abc"], "bad-code"),
])
def test_ill_formed_commands(frames, code) -> None:
    with pytest.raises(CodecError) as err:
        decode_data(frames)
    assert err.value.code == code


def test_unused_body_is_ignored() -> None:
    assert decode_data([b"\x08", b"anything"]) == Ping()


@pytest.mark.parametrize("command,code", [
    (Lease(2**64, "x"), "field-range"), (Lease(-1, "x"), "field-range"), (Summon(1, "x" * 256), "bad-short-string"),
    (Summon(1, "caf\u00e9"), "bad-short-string"), (Summon(1, "a\nb"), "bad-short-string"),
    (Response(1, 42), "bad-code"), (Confirm(1, 1), "field-range"),  # type: ignore[arg-type]
])
def test_encoder_refuses_out_of_range(command, code) -> None:
    with pytest.raises(CodecError) as err:
        encode_data(command)
    assert err.value.code == code


printable = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=255)


@given(seq=st.integers(0, U64), resource=printable, pairs=st.lists(st.tuples(printable, printable), max_size=20),
       body=st.binary(max_size=512))
def test_content_round_trips(seq, resource, pairs, body) -> None:
    content = Content(seq, resource, tuple(pairs), body)
    assert decode_data(encode_data(content)) == content


@given(st.lists(st.binary(max_size=40), min_size=0, max_size=4))
def test_decoder_never_crashes(frames) -> None:
    try:
        decode_data(frames)
    except CodecError:
        pass


def test_field_table_alone() -> None:
    assert codec.decode_field_table(b"\x00\x01\x01k\x01v") == (("k", "v"),)
    with pytest.raises(CodecError) as err:
        codec.decode_field_table(b"\x00\x00\x00")
    assert err.value.code == "trailing-bytes"


# -- control ---------------------------------------------------------------------

def test_request_and_reply() -> None:
    assert control.split_envelope([b"id", b"", b"Connection.Open", b"{}"]) == ([b"id", b""], [b"Connection.Open", b"{}"])
    request = control.decode_request([b"CONNECTION.open", b'{"a": [1, 2]}'])
    assert request.key == control.OPEN and request.body == {"a": [1, 2]}
    reply = control.decode_reply(control.encode_reply(202, {"status": "Data Lease", "port": 5556, "lease": "x"}))
    assert reply.code == 202 and reply.body["port"] == 5556
    assert control.decode_reply(control.encode_reply(501)).body == {"status": "Not implemented"}


@pytest.mark.parametrize("frames,code", [
    ([b"Connection.Open"], "frame-count"), ([b"a", b"{}", b"{}"], "frame-count"), ([b"a", b"{x"], "bad-json"),
    ([b"a", b"NaN"], "bad-json"), ([b"a", b'"\xff"'], "bad-json"), ([b"\xff", b"{}"], "bad-name"),
])
def test_ill_formed_requests(frames, code) -> None:
    with pytest.raises(CodecError) as err:
        control.decode_request(frames)
    assert err.value.code == code


def test_no_delimiter_and_bad_codes() -> None:
    with pytest.raises(CodecError):
        control.split_envelope([b"Connection.Open", b"{}"])
    for code in (b"20", b"600", b"199", b"2x0"):
        with pytest.raises(CodecError):
            control.decode_reply([code, b"{}"])
    with pytest.raises(CodecError):
        control.encode_reply(700)


# -- SASL ------------------------------------------------------------------------

def test_plain() -> None:
    assert sasl.decode_plain(sasl.plain_response("alice", "wonderland")) == ("", "alice", "wonderland")
    for bad in (b"alice", b"a\0b", b"\0\0pw"):
        with pytest.raises(CodecError):
            sasl.decode_plain(bad)
    server = sasl.SaslServer("PLAIN", sasl.Credentials({"alice": "wonderland"}))
    assert server.step(b"\0alice\0wonderland").user == "alice"
    assert server.step(b"bob\0alice\0wonderland").user is None  # authzid other than the user
    assert server.step(b"\0alice\0wrong") == sasl.Step(True)


def test_scram_rfc7677_example() -> None:
    # RFC 7677 section 3: user "user", password "pencil"
    server_first = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    final = sasl.scram_client_final("user", "pencil", "rOprNGfwEbeRWgbNEkqO", server_first)
    assert final == (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                     b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    assert sasl.scram_server_final_ok("user", "pencil", "rOprNGfwEbeRWgbNEkqO", server_first,
                                      b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
    assert not sasl.scram_server_final_ok("user", "pencil", "rOprNGfwEbeRWgbNEkqO", server_first, b"v=AAAA")


def test_scram_server_exchange() -> None:
    credentials = sasl.Credentials({"alice": "wonderland"})
    server = sasl.SaslServer(sasl.SCRAM_SHA_256, credentials)
    client = sasl.ScramClientExchange("alice", "wonderland")
    first = server.step(client.client_first())
    assert not first.done and first.challenge
    final = server.step(client.client_final(first.challenge))
    assert not final.done and client.verify_server_final(final.challenge)
    assert server.step(b"") == sasl.Step(True, "alice")


@pytest.mark.parametrize("user,password", [("alice", "wrong"), ("mallory", "wonderland")])
def test_scram_refusals(user, password) -> None:
    server = sasl.SaslServer(sasl.SCRAM_SHA_256, sasl.Credentials({"alice": "wonderland"}))
    client = sasl.ScramClientExchange(user, password)
    first = server.step(client.client_first())
    if first.done:  # an unknown user fails at once
        assert first.user is None
        return
    assert server.step(client.client_final(first.challenge)) == sasl.Step(True)


def test_base64_is_strict() -> None:
    assert sasl.b64decode(base64.b64encode(b"\0a\0b").decode()) == b"\0a\0b"
    for bad in ("not base64!", "YQ", "é"):
        with pytest.raises(CodecError):
            sasl.b64decode(bad)
