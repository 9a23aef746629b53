"""Property tests (hypothesis) for the MTL codecs and state machines: round trips, and nothing but
CodecError out of a decoder whatever the octets."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from reference_impl.common.errors import CodecError
from reference_impl.mtl import codec, control, sasl
from reference_impl.mtl.codec import (
    Confirm, Content, Dismiss, Lease, Ping, Pong, Reject, Response, Summon, decode_data, encode_data,
)
from reference_impl.mtl.connection import ControlOptions, ControlSession, Profile
from reference_impl.mtl.service import TEST_USERS

FAST = settings(max_examples=300, deadline=None)
U64 = st.integers(0, 2**64 - 1)
printable = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=40)
pairs = st.lists(st.tuples(printable, printable), max_size=8).map(tuple)
commands = st.one_of(
    st.builds(Lease, U64, printable), st.builds(Response, U64, st.integers(100, 999)),
    st.builds(Summon, U64, printable), st.builds(Dismiss, U64, printable),
    st.builds(Content, U64, printable, pairs, st.binary(max_size=64)),
    st.builds(Confirm, U64, st.booleans()), st.builds(Reject, U64, st.booleans(), st.booleans()),
    st.just(Ping()), st.just(Pong()),
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
frames = st.lists(st.binary(max_size=40), max_size=5)
CREDENTIALS = sasl.Credentials(TEST_USERS)


def _strict_json(data: bytes) -> object:
    def refuse(name: str) -> None:
        raise ValueError(name)

    return json.loads(data.decode("utf-8"), parse_constant=refuse)


# -- data commands and field tables ------------------------------------------------------

@FAST
@given(commands)
def test_every_command_round_trips(command) -> None:
    assert decode_data(encode_data(command)) == command


@FAST
@given(frames)
def test_data_decoder_takes_any_frames(parts) -> None:
    try:
        command = decode_data(parts)
    except CodecError:
        return
    assert codec.encode_header(command) == parts[0]


@FAST
@given(pairs)
def test_field_table_round_trips(table) -> None:
    assert codec.decode_field_table(codec.encode_field_table(table)) == table


@FAST
@given(st.binary(max_size=80))
def test_field_table_decoder_takes_any_octets(data) -> None:
    try:
        table = codec.decode_field_table(data)
    except CodecError:
        return
    assert codec.encode_field_table(table) == data


# -- control -----------------------------------------------------------------------------

@FAST
@given(st.text(min_size=1, max_size=30), json_values)
def test_control_request_round_trips(name, body) -> None:
    assert control.decode_request(control.encode_request(name, body)) == control.Request(name, body)


@FAST
@given(st.integers(200, 599), json_values.filter(lambda v: v is not None))  # None asks for the default body
def test_control_reply_round_trips(code, body) -> None:
    assert control.decode_reply(control.encode_reply(code, body)) == control.Reply(code, body)


@FAST
@given(frames)
def test_control_decoders_take_any_frames(parts) -> None:
    for decode in (control.decode_request, control.decode_reply, control.split_envelope):
        try:
            decode(parts)
        except CodecError:
            pass


numbers = st.from_regex(r"\A-?(0|[1-9][0-9]{0,3})(\.[0-9]{1,3})?([eE][+-]?[0-9]{1,4})?\Z")


@FAST
@given(st.one_of(st.binary(max_size=60), numbers.map(str.encode)))
def test_what_decode_json_accepts_encodes_back_as_json(data) -> None:
    """A body the decoder takes must be one the encoder can write as RFC 8259 JSON (1e400 is not a float)."""
    try:
        value = control.decode_json(data)
    except CodecError:
        return
    assert _strict_json(control.encode_json(value)) == value


# -- SASL --------------------------------------------------------------------------------

@FAST
@given(st.binary(max_size=60))
def test_plain_decoder_takes_any_octets(data) -> None:
    try:
        authzid, authcid, password = sasl.decode_plain(data)
    except CodecError:
        return
    assert sasl.plain_response(authcid, password, authzid) == data


@FAST
@given(st.text(max_size=40))
def test_base64_decoder_takes_any_text(text) -> None:
    try:
        data = sasl.b64decode(text)
    except CodecError:
        return
    assert sasl.b64decode(sasl.b64encode(data)) == data


@FAST
@given(st.sampled_from(sasl.MECHANISMS), st.lists(st.binary(max_size=80), min_size=1, max_size=4))
def test_sasl_server_takes_any_responses(mechanism, responses) -> None:
    server = sasl.SaslServer(mechanism, CREDENTIALS)
    for response in responses:
        step = server.step(response)
        assert isinstance(step, sasl.Step)
        assert step.user is None or step.user in TEST_USERS
        if step.done:
            break


# -- the control state machine -----------------------------------------------------------

NAMES = ["Connection.Open", "connection.authorize", "Connection.Profile", "CONNECTION.READER", "Connection.Writer",
         "Connection.Close", ""]
bodies = st.one_of(
    json_values,
    st.fixed_dictionaries({"protocol": st.fixed_dictionaries({"name": st.sampled_from(["MTL", "mtl", "X"]),
                                                              "version": st.sampled_from([1, 1.0, True, 2, "1"])})}),
    st.fixed_dictionaries({"mechanism": st.sampled_from(["PLAIN", "plain", "SCRAM-SHA-256", "X"]),
                           "response": st.sampled_from(["AGFsaWNlAHdvbmRlcmxhbmQ=", "", "!!", "biws"])}),
    st.fixed_dictionaries({"profile": st.sampled_from(["test", "TEST", "confirm-test", "none"])}),
    st.fixed_dictionaries({"resources": st.lists(st.sampled_from(["resource", "other"]), max_size=2),
                           "confirm": st.sampled_from(["none", "full", "FULL", "x"])}),
)


@FAST
@given(st.booleans(), st.lists(st.tuples(st.sampled_from(NAMES), bodies), max_size=10))
def test_control_session_answers_every_request(anonymous, requests) -> None:
    profiles = (Profile("test"), Profile("confirm-test", confirm_models=frozenset({"none", "full"})))
    options = ControlOptions(CREDENTIALS, profiles, anonymous=anonymous, auth_ttl=None)
    session = ControlSession(options, lambda kind, profile, resources, confirm: (5556, "lease"))
    for now, (name, body) in enumerate(requests):
        reply = session.handle(control.Request(name, body), float(now))
        assert reply.code in {200, 201, 202, 400, 401, 402, 403, 501}
        assert control.decode_reply(control.encode_reply(reply.code, reply.body)) == reply
