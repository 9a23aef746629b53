"""The RSocket adapter: frames by fields encode to the bytes of Protocol.md's layouts, the reader
joins fragments and refuses invalid frames, and scenario mistakes name the field that is wrong.

Expected bytes are computed by hand from Protocol.md ("Frame Header Format": 31-bit stream id, then
6-bit type, I, M and 8 flag bits; one section per frame type) and CompositeMetadata.md, not taken
from the codec's output.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.protocols import adapter_for
from conformance.protocols.rsocket import RSocketReader
from conformance.scenario.loader import BrokenCase, load_file
from reference_impl.common.errors import CodecError

ADAPTER = adapter_for("rsocket")


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", ""))


@pytest.mark.parametrize("spec,frame", [
    # type 0x04 << 10 = 0x1000
    ({"type": "REQUEST_RESPONSE", "stream": 1, "data": "hi"}, "00000001 1000 6869"),
    # type 0x06 << 10 | M (0x100) = 0x1900; n, 24-bit metadata length, metadata, data
    ({"type": "REQUEST_STREAM", "stream": 3, "n": 5, "metadata": "m", "data": "x"}, "00000003 1900 00000005 000001 6d 78"),
    # type 0x0A << 10 | C (0x40) | N (0x20) = 0x2860
    ({"type": "PAYLOAD", "stream": 5, "data": "ok", "next": True, "complete": True}, "00000005 2860 6f6b"),
    # type 0x03 << 10 | R (0x80) = 0x0c80; 63-bit last received position
    ({"type": "KEEPALIVE", "respond": True, "data": "d"}, "00000000 0c80 0000000000000000 64"),
    # type 0x0B << 10 = 0x2c00; error code INVALID_SETUP = 0x00000001
    ({"type": "ERROR", "stream": 0, "code": "INVALID_SETUP", "data": "x"}, "00000000 2c00 00000001 78"),
    # version 1.0, keepalive 30000 (0x7530), lifetime 90000 (0x15f90), two MIME types with a 1-byte length
    ({"type": "SETUP"}, "00000000 0400 0001 0000 00007530 00015f90 0a 746578742f706c61696e 0a 746578742f706c61696e"),
    # type 0x3F << 10 | I (0x200) = 0xfe00; extended type 7
    ({"type": "EXT", "ignore": True, "extended_type": 7, "payload": {"hex": "01"}}, "00000000 fe00 00000007 01"),
    # METADATA_PUSH: M always set, no metadata length
    ({"type": "METADATA_PUSH", "metadata": "m"}, "00000000 3100 6d"),
    ({"type": "CANCEL", "stream": 9}, "00000009 2400"),
    ({"type": "REQUEST_N", "stream": 9, "n": 2147483647}, "00000009 2000 7fffffff"),
    # raw: type 0x30 << 10 | I = 0xc200, then the body as given
    ({"type": 0x30, "ignore": True, "hex": "01"}, "00000000 c200 01"),
    ({"type": "METADATA_PUSH", "flags": 0, "hex": "6d"}, "00000000 3000 6d"),
    # composite metadata: 0x80|0x7E, 24-bit length, bytes; then "a/b" with length-1 = 2
    ({"type": "REQUEST_FNF", "stream": 1, "composite": [{"mime": 0x7E, "data": {"hex": "01"}}, {"mime": "a/b", "data": "z"}]},
     "00000001 1500 00000d fe 000001 01 02 612f62 000001 7a"),
])
def test_frames_by_fields_encode_to_the_spec_layouts(spec: dict, frame: str) -> None:
    wire = h(frame)
    assert ADAPTER.encode(spec, "ws") == [wire]
    assert ADAPTER.encode(spec, "tcp") == [len(wire).to_bytes(3, "big") + wire]


def test_batch_and_part() -> None:
    one = h("000008 00000001 1000 6869")
    batch = {"batch": [{"type": "REQUEST_RESPONSE", "stream": 1, "data": "hi"}] * 2}
    assert ADAPTER.encode(batch, "tcp") == [one + one]
    assert ADAPTER.encode(batch, "ws") == [one[3:], one[3:]]
    assert ADAPTER.encode({"type": "REQUEST_RESPONSE", "stream": 1, "data": "hi", "part": [0, 2]}, "tcp") == [one[:2]]
    assert ADAPTER.encode({"frame": "00000001 1000 6869"}, "tcp") == [one]


def test_the_reader_joins_fragments_in_any_chunks() -> None:
    reader = RSocketReader("tcp")
    wire = (h("00000b 00000002 29a0 000001 6d 61")        # PAYLOAD F|N|M, metadata "m", data "a"
            + h("000007 00000002 28a0 62")                 # PAYLOAD F|N, data "b"
            + h("000007 00000002 2860 63"))                # PAYLOAD C|N, data "c"
    frames = [f for i in range(len(wire)) for f in reader.feed(wire[i:i + 1])]
    assert len(frames) == 1
    fields = frames[0].fields
    assert (fields["type"], fields["stream"], fields["metadata"], fields["data"]) == ("PAYLOAD", 2, b"m", b"abc")
    assert fields["complete"] and fields["next"] and fields["fragments"] == 3 and fields["parity"] == "even"


def test_the_reader_refuses_metadata_after_data_in_fragments() -> None:
    reader = RSocketReader("ws")
    reader.feed(h("00000002 28a0 61"))  # F|N, data "a"
    with pytest.raises(CodecError, match="metadata"):
        reader.feed(h("00000002 29a0 000001 6d"))  # F|N|M: metadata after data began


@pytest.mark.parametrize("wire", [
    "000008 00000002 2800 6869",       # PAYLOAD with neither C nor N
    "00000a 00000001 1100 000010 6162",  # metadata length past the end
    "000003 000000",                   # a length shorter than the header
])
def test_the_reader_refuses_invalid_frames(wire: str) -> None:
    with pytest.raises(CodecError):
        RSocketReader("tcp").feed(h(wire))


def test_a_websocket_text_message_is_not_a_frame() -> None:
    with pytest.raises(CodecError):
        RSocketReader("ws").feed("hello")


def test_matching_by_names_and_payload_specs() -> None:
    [frame] = RSocketReader("ws").feed(h("00000000 2c00 00000002 6e6f"))
    assert ADAPTER.matches(ADAPTER.normalize({"type": "error", "code": "UNSUPPORTED_SETUP", "data": "no"}), frame)[0]
    assert not ADAPTER.matches(ADAPTER.normalize({"type": "ERROR", "code": "INVALID_SETUP"}), frame)[0]
    [payload] = RSocketReader("ws").feed(h("00000001 2860 6f6b"))
    assert ADAPTER.matches(ADAPTER.normalize({"type": "PAYLOAD", "metadata": None}), payload)[0]
    assert not ADAPTER.matches(ADAPTER.normalize({"type": "PAYLOAD", "metadata": "x"}), payload)[0]


SCENARIO = """\
protocol: rsocket
family: handshake
spec_file: rsocket/Protocol.md
cases:
  - id: rsocket/handshake/typo
    title: t
    spec: s
    requirement: MUST
    steps:
      - send: {type: REQUEST_RESPONSE, strem: 1}
      - expect: {type: PAYLOAD}
  - id: rsocket/handshake/bad-code
    title: t
    spec: s
    requirement: MUST
    steps:
      - expect: {type: ERROR, code: NOT_A_CODE}
  - id: rsocket/handshake/fine
    title: t
    spec: s
    requirement: MUST
    steps:
      - macro: setup
      - expect: {type: ERROR, code: {in: [INVALID_SETUP, 0x202]}}
"""


def test_scenario_mistakes_name_the_field(tmp_path: Path) -> None:
    path = tmp_path / "scenarios" / "rsocket" / "t.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(SCENARIO)
    cases = {c.id: c for c in load_file(path, ADAPTER.frame_check).cases}
    assert isinstance(cases["rsocket/handshake/typo"], BrokenCase) and "strem" in cases["rsocket/handshake/typo"].error
    assert isinstance(cases["rsocket/handshake/bad-code"], BrokenCase) and "NOT_A_CODE" in cases["rsocket/handshake/bad-code"].error
    assert not isinstance(cases["rsocket/handshake/fine"], BrokenCase)


def test_a_request_n_between_fragments_is_credit_not_part_of_the_message() -> None:
    reader = RSocketReader("ws")
    assert reader.feed(h("00000002 28a0 61")) == []            # PAYLOAD F|N "a"
    [credit] = reader.feed(h("00000002 2000 00000003"))        # REQUEST_N 3 on the same stream
    assert credit.fields["type"] == "REQUEST_N" and credit.fields["n"] == 3
    [payload] = reader.feed(h("00000002 2860 62"))             # PAYLOAD C|N "b"
    assert payload.fields["data"] == b"ab" and payload.fields["fragments"] == 2


def test_any_other_frame_between_fragments_is_refused() -> None:
    reader = RSocketReader("ws")
    reader.feed(h("00000002 28a0 61"))
    with pytest.raises(CodecError, match="between fragments"):
        reader.feed(h("00000002 1000 78"))  # a REQUEST_RESPONSE on the stream mid-message
