"""The rsio adapter: frames by fields encode to the bytes docs/profiles/rsio.md gives, the reader
decodes a target's stream as a subscriber must (elementSize, packing, joined parts), and
scenario mistakes are reported with the field that is wrong.

Expected bytes are computed by hand from docs/profiles/rsio.md (type varint, then the fields; LEB128
varints; String and bytes length-prefixed), not taken from the codec's output.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.protocols import adapter_for
from conformance.protocols.base import Frame
from conformance.protocols.rsio import RsioReader
from conformance.scenario.loader import BrokenCase, load_file
from reference_impl.common.errors import CodecError

ADAPTER = adapter_for("rsio")


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", ""))


@pytest.mark.parametrize("spec,wire", [
    ({"type": "clientHello", "version": 0, "extensions": []}, "01 00 00"),
    ({"type": "serverHello", "version": 0, "extensions": [5, 300]}, "02 00 02 05 ac02"),
    ({"type": "subscribe", "publisher": "test/range/3", "subscriber": 1, "initialDemand": 3},
     "04 0c 746573742f72616e67652f33 01 03"),
    ({"type": "request", "subscriber": 1, "demand": 2**63 - 1}, "05 01 ffffffffffffffff7f"),
    ({"type": "cancel", "subscriber": 200}, "06 c801"),
    ({"type": "subscribed", "subscriber": 1, "elementSize": 4}, "07 01 04"),
    ({"type": "onNext", "subscriber": 1, "u64": 3}, "08 01 08 0000000000000003"),
    ({"type": "onNext", "subscriber": 1, "elementSize": 4, "element": {"size": 4, "offset": 1}}, "08 01 01020304"),
    ({"type": "onNextPacked", "subscriber": 1, "elements": [{"hex": "0102"}, {"hex": "0203"}]}, "0b 01 02 0102 0203"),
    ({"type": "onNextPart", "subscriber": 1, "element": 7, "data": "ab"}, "0c 01 07 02 6162"),
    ({"type": "onNextLastPart", "subscriber": 1, "element": 7, "data": "c"}, "0d 01 07 01 63"),
    ({"type": "onComplete", "subscriber": 1}, "09 01"),
    ({"type": "onError", "subscriber": 1, "error": "x"}, "0a 01 01 78"),
    ({"type": "goodbye", "reason": ""}, "03 00"),
    ({"type": 70, "hex": "01"}, "46 01"),
    ({"type": 300, "hex": "00"}, "ac02 00"),
    ({"type": "request", "hex": "01 8100"}, "05 01 8100"),
    ({"batch": [{"type": "cancel", "subscriber": 1}, {"type": "request", "subscriber": 2, "demand": 1}]}, "06 01 05 02 01"),
])
def test_frames_by_fields_encode_to_the_profile_bytes(spec: dict, wire: str) -> None:
    assert ADAPTER.encode(spec, "tcp") == [h(wire)]


def _feed_bytewise(reader: RsioReader, data: bytes) -> list[Frame]:
    frames = []
    for i in range(len(data)):
        frames += reader.feed(data[i:i + 1])
    return frames


def test_reader_delimits_fixed_size_elements_by_the_streams_element_size() -> None:
    # subscribed(1, 4); onNext(1, 00010203) without a length; onNextPacked(1, 2 x 4 bytes)
    frames = _feed_bytewise(RsioReader(), h("07 01 04  08 01 00010203  0b 01 02 01020304 05060708  09 01"))
    assert [f.fields["type"] for f in frames] == ["subscribed", "onNext", "onNextPacked", "onNextPacked", "onComplete"]
    assert [f.fields.get("value") for f in frames[1:4]] == [h("00010203"), h("01020304"), h("05060708")]
    assert [(f.fields["count"], f.fields["index"]) for f in frames[2:4]] == [(2, 0), (2, 1)]


def test_reader_joins_interleaved_parts_per_stream_and_element() -> None:
    data = h("0c 01 00 02 6162  0c 02 00 01 78  0d 01 00 01 63  0d 02 00 01 79")
    frames = RsioReader().feed(data)
    assert [(f.fields["subscriber"], f.fields["value"], f.fields["parts"]) for f in frames] == [
        (1, b"abc", 2), (2, b"xy", 2)]


def test_reader_gives_u64_of_eight_byte_elements() -> None:
    (frame,) = RsioReader().feed(h("08 01 08 0000000000000103"))
    assert frame.fields["u64"] == 0x103


@pytest.mark.parametrize("data,code", [
    ("46 01", "unknown-extension-type"),        # type 70: no extension is ever active for the suite
    ("0e", "unknown-type"),                     # type 14 is assigned to nothing
    ("05 8100 01", "varint-overlong"),          # encoders emit minimal varints
    ("05 01 80808080808080808001", "varint-too-large"),
])
def test_reader_refuses_what_a_target_must_not_send(data: str, code: str) -> None:
    with pytest.raises(CodecError) as err:
        RsioReader().feed(h(data))
    assert err.value.code == code


def test_reader_is_bounded() -> None:
    with pytest.raises(CodecError) as err:  # a length past the bound is refused before its bytes arrive
        RsioReader(max_message=64).feed(h("08 01 8008"))
    assert err.value.code == "too-large"
    with pytest.raises(CodecError) as err:
        RsioReader(max_open_parts=1).feed(h("0c 01 00 01 61  0c 01 01 01 62"))
    assert err.value.code == "too-many-partial-elements"
    with pytest.raises(CodecError) as err:
        RsioReader(max_element=3).feed(h("0c 01 00 02 6162  0d 01 00 02 6364"))
    assert err.value.code == "element-too-large"
    reader = RsioReader()
    assert reader.feed(h("08 01 08 0000")) == [] and reader.pending == 5


def test_element_matches_whatever_carried_it() -> None:
    spec = ADAPTER.normalize({"type": "element", "subscriber": 1, "value": {"size": 3, "offset": 1}})
    packed = RsioReader().feed(h("07 01 03  0b 01 01 010203"))[1]
    joined = RsioReader().feed(h("0c 01 00 01 01  0d 01 00 02 0203"))[0]
    wrong = RsioReader().feed(h("08 01 03 010204"))[0]
    assert ADAPTER.matches(spec, packed)[0] and ADAPTER.matches(spec, joined)[0]
    ok, why = ADAPTER.matches(spec, wrong)
    assert not ok and "value" in why
    assert not ADAPTER.matches(spec, RsioReader().feed(h("09 01"))[0])[0]
    assert ADAPTER.matches(ADAPTER.normalize({"type": "onNextLastPart", "parts": {"min": 2}}), joined)[0]


def _broken(tmp_path: Path, step: str) -> str:
    path = tmp_path / "scenarios" / "rsio" / "x.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "protocol: rsio\nfamily: x\ncases:\n"
        "  - id: rsio/x/y\n    title: t\n    spec: s\n    requirement: MUST\n    steps:\n"
        "      - macro: hello\n"
        f"      - {step}\n")
    (case,) = load_file(path, ADAPTER.frame_check).cases
    assert isinstance(case, BrokenCase)
    return case.error


@pytest.mark.parametrize("step,needle", [
    ('send: {type: subscribe, publisher: "test/range/1", initialdemand: 1}', "'initialdemand'"),
    ("send: {type: onNxt, subscriber: 1}", "'onNxt'"),
    ("expect: {type: subscribed, subscriber: 1, elementsize: 4}", "'elementsize'"),
    ("expect: {any_of: [{type: onError, reason: x}, {closed: true}]}", "'reason'"),
    ('send: {type: request, subscriber: 1, hex: "01"}', "hex"),
    ("send: {type: 70}", "hex"),
    ("send: {batch: [{type: cancel, subscribr: 1}]}", "'subscribr'"),
])
def test_scenario_mistakes_name_the_field(tmp_path: Path, step: str, needle: str) -> None:
    error = _broken(tmp_path, step)
    assert needle in error and "x.yaml:10" in error, error
