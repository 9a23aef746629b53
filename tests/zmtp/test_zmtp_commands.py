"""ZMTP commands, metadata and Z85: hand-computed bytes, round trips and noise."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from zmq.utils import z85 as pyzmq_z85

from reference_impl.common.errors import CodecError
from reference_impl.zmtp.commands import (
    Cancel, Command, Error, Metadata, Ping, Pong, Ready, Subscribe, decode_command, encode_command,
)
from reference_impl.zmtp.z85 import z85_decode, z85_encode

# RFC 23 "Worked Example", octets 2-42 of the client's READY: the body after flags 04 and size 41.
RFC23_DEALER_READY = (
    b"\x05READY" + b"\x0bSocket-Type" + b"\x00\x00\x00\x06DEALER" + b"\x08Identity" + b"\x00\x00\x00\x00"
)


def test_ready_matches_rfc23_worked_example() -> None:
    ready = Ready(Metadata.of([("Socket-Type", b"DEALER"), ("Identity", b"")]))
    assert len(RFC23_DEALER_READY) == 41
    assert encode_command(ready) == RFC23_DEALER_READY
    assert decode_command(RFC23_DEALER_READY) == ready


def test_metadata_names_are_case_insensitive() -> None:
    metadata = Metadata.of({"Socket-Type": b"ROUTER"})
    assert metadata.get("socket-type") == b"ROUTER"
    assert metadata.get("SOCKET-TYPE") == b"ROUTER"
    assert metadata.get("Identity") is None


@pytest.mark.parametrize("command, body", [
    (Error(b"oops"), b"\x05ERROR\x04oops"),
    (Subscribe(b"A"), b"\x09SUBSCRIBEA"),
    (Cancel(b""), b"\x06CANCEL"),
    (Ping(600, b"ctx"), b"\x04PING\x02\x58ctx"),  # 600 tenths = 60 s = 0x0258
    (Pong(b"ctx"), b"\x04PONGctx"),
    (Command("JOIN", b"g"), b"\x04JOINg"),
])
def test_hand_computed_bodies(command: object, body: bytes) -> None:
    assert encode_command(command) == body
    assert decode_command(body) == command


@pytest.mark.parametrize("body, code", [
    (b"", "bad-command-name"),
    (b"\x00", "bad-command-name"),
    (b"\x03AB", "bad-command-name"),
    (b"\x02A-", "bad-command-name"),
    (b"\x05READY\x03abc\x00\x00\x00\x05ab", "truncated-property"),
    (b"\x05READY\x00\x00\x00\x00\x00", "bad-property-name"),
    (b"\x05ERROR", "bad-error"),
    (b"\x04PING\x00", "bad-ping"),
    (b"\x04PING\x00\x00" + bytes(17), "bad-ping"),
    (b"\x04PONG" + bytes(17), "bad-pong"),
])
def test_malformed_bodies(body: bytes, code: str) -> None:
    with pytest.raises(CodecError) as info:
        decode_command(body)
    assert info.value.code == code


names = st.from_regex(r"[A-Za-z0-9_.+-]{1,40}", fullmatch=True)
metadata_strategy = st.builds(Metadata.of, st.lists(st.tuples(names, st.binary(max_size=300)), max_size=6))
command_strategy = st.one_of(
    st.builds(Ready, metadata_strategy),
    st.builds(Error, st.binary(max_size=255)),
    st.builds(Subscribe, st.binary(max_size=100)),
    st.builds(Cancel, st.binary(max_size=100)),
    st.builds(Ping, st.integers(0, 0xFFFF), st.binary(max_size=16)),
    st.builds(Pong, st.binary(max_size=16)),
    st.builds(Command, st.from_regex(r"[A-Za-z]{1,20}", fullmatch=True).filter(
        lambda n: n not in {"READY", "ERROR", "SUBSCRIBE", "CANCEL", "PING", "PONG"}), st.binary(max_size=50)),
)


@settings(max_examples=150, deadline=None)
@given(command_strategy)
def test_roundtrip(command: object) -> None:
    assert decode_command(encode_command(command)) == command


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([b"\x05READY", b"\x05ERROR", b"\x04PING", b"\x04PONG", b""]), st.binary(max_size=60))
def test_random_bodies_raise_only_codec_errors(prefix: bytes, data: bytes) -> None:
    try:
        decode_command(prefix + data)
    except CodecError:
        pass


def test_z85_rfc32_example_and_pyzmq() -> None:
    # RFC 32: the 8 octets 86 4F D2 6F B5 59 F7 5B encode to "HelloWorld".
    assert z85_encode(bytes.fromhex("864FD26FB559F75B")) == "HelloWorld"
    assert z85_decode("HelloWorld") == bytes.fromhex("864FD26FB559F75B")
    key = bytes(range(32))
    assert z85_encode(key) == pyzmq_z85.encode(key).decode()
    with pytest.raises(CodecError):
        z85_decode("Hell~World")
