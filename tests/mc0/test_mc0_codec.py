"""The mc0 codec: messages <-> ZMTP frames, the stable error codes, the test keys."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reference_impl.common.errors import CodecError
from reference_impl.mc0 import codec, testkeys
from reference_impl.mc0.codec import Mc0Message, decode_message, encode_message, salvage_id
from reference_impl.zmtp.z85 import z85_encode

FAST = settings(max_examples=200, deadline=None)


def test_spec_examples_round_trip() -> None:
    cases = {
        (b"", b"NOOP", b"ID", b"1234"): Mc0Message(b"NOOP", ((b"ID", b"1234"),)),
        (b"", b"OK", b"ID", b"1234"): codec.ok(b"1234"),
        (b"", b"SUB", b"", b"topic1", b"topic2"): Mc0Message(b"SUB", (), (b"topic1", b"topic2")),
        (b"", b"PUT", b"TOPIC", b"topic1", b"", b"body"): Mc0Message(b"PUT", ((b"TOPIC", b"topic1"),), (b"body",)),
        (b"", b"CONNECT", b"VERSION", b"0.1", b"TTL", b"1000"): Mc0Message(b"CONNECT", ((b"VERSION", b"0.1"), (b"TTL", b"1000"))),
        (b"", b"ERROR", b"MESSAGE", b"why"): codec.error(b"why"),
    }
    for frames, msg in cases.items():
        assert decode_message(list(frames)) == msg
        assert encode_message(msg) == list(frames)


def test_separator_and_empty_values_are_told_apart() -> None:
    # an empty frame where a key goes is the separator; where a value goes it is an empty value
    assert decode_message([b"", b"PUT", b"TOPIC", b"", b"", b"x"]) == Mc0Message(b"PUT", ((b"TOPIC", b""),), (b"x",))
    assert decode_message([b"", b"SUB", b""]).positional == ()
    assert decode_message([b"", b"SUB"]).positional is None


def test_delivery_keeps_x_headers_in_order_after_topic() -> None:
    msg = codec.delivery(b"t", [(b"X-B", b"2"), (b"X-A", b"1")], [b"p1", b"p2"])
    assert encode_message(msg) == [b"", b"MESSAGE", b"TOPIC", b"t", b"X-B", b"2", b"X-A", b"1", b"", b"p1", b"p2"]


def test_error_puts_the_id_first() -> None:
    assert encode_message(codec.error(b"bad", b"7")) == [b"", b"ERROR", b"ID", b"7", b"MESSAGE", b"bad"]


@pytest.mark.parametrize("frames,code", [
    ([], "empty"),
    ([b"NOOP"], "no-delimiter"),
    ([b""], "no-verb"),
    ([b"", b"", b"ID", b"1"], "no-verb"),
    ([b"", b"PUT", b"TOPIC", b"t", b"X-A"], "odd-headers"),
    ([b"", b"SUB", b"topic1"], "odd-headers"),
])
def test_invalid_messages_have_stable_codes(frames: list[bytes], code: str) -> None:
    with pytest.raises(CodecError) as err:
        decode_message(frames)
    assert err.value.code == code


def test_encoder_refuses_what_would_read_back_differently() -> None:
    with pytest.raises(CodecError):
        encode_message(Mc0Message(b""))
    with pytest.raises(CodecError):
        encode_message(Mc0Message(b"PUT", ((b"", b"x"),)))


def test_salvage_id_reads_the_leading_pairs_of_a_broken_message() -> None:
    assert salvage_id([b"", b"NOOP", b"ID", b"5", b"X-A"]) == b"5"
    assert salvage_id([b"", b"NOOP", b"X-A", b"1", b"ID", b"6", b"odd"]) == b"6"
    assert salvage_id([b"", b"NOOP", b"X-A"]) is None
    assert salvage_id([b"", b"SUB", b"", b"ID", b"7"]) is None  # positional, not a header


frame = st.binary(max_size=40)
key = st.binary(min_size=1, max_size=12)
messages = st.builds(
    Mc0Message,
    st.binary(min_size=1, max_size=12),
    st.lists(st.tuples(key, frame), max_size=6).map(tuple),
    st.one_of(st.none(), st.lists(frame, max_size=5).map(tuple)),
)


@FAST
@given(messages)
def test_round_trip(msg: Mc0Message) -> None:
    assert decode_message(encode_message(msg)) == msg


@FAST
@given(st.lists(frame, max_size=12))
def test_any_frames_decode_or_fail_with_a_code(frames: list[bytes]) -> None:
    try:
        msg = decode_message(frames)
    except CodecError as exc:
        assert exc.code in {"empty", "no-delimiter", "no-verb", "odd-headers"}
    else:
        assert encode_message(msg) == frames


def test_test_keys_are_the_man_page_pairs() -> None:
    assert z85_encode(testkeys.SERVER.public) == "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"
    assert z85_encode(testkeys.CLIENT.public) == "Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID"
    assert testkeys.WRONG_SERVER.public not in (testkeys.SERVER.public, testkeys.CLIENT.public)


def test_secret_files_in_every_form(tmp_path) -> None:
    secret = z85_encode(testkeys.SERVER.secret)
    zcert = tmp_path / "server.key_secret"
    zcert.write_text(f'#   ZeroMQ CURVE **Secret** Certificate\ncurve\n    public-key = "{z85_encode(testkeys.SERVER.public)}"\n'
                     f'    secret-key = "{secret}"\n')
    assert testkeys.load_secret_file(zcert) == testkeys.SERVER
    assert testkeys.parse_secret(secret + "\n") == testkeys.SERVER
    assert testkeys.parse_secret(testkeys.SERVER.secret.hex()) == testkeys.SERVER
    with pytest.raises(CodecError):
        testkeys.parse_secret("not a key")
