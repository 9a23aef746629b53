"""The Micromessage2 adapter: frames by field, its stateful bounded reader, scenario checks.

Expected bytes are written out by hand from the spec's layouts as docs/profiles/micromessage2.md corrects them."""

from __future__ import annotations

import asyncio
import time

import pytest

from conformance.protocols import adapter_for
from conformance.scenario.loader import BrokenCase, Case, load_file
from reference_impl.common.errors import CodecError
from suite_helpers import Grade, all_cases, run_case

MM2 = adapter_for("micromessage2")


def encode(spec: dict) -> bytes:
    return b"".join(MM2.encode(spec, "tcp"))


def test_seed_handshake_with_the_corrected_length() -> None:
    # the spec's "1 0 0 4 h u l k 0 10 json;dotnet 0 0"; docs/profiles/micromessage2.md: "json;dotnet" is 11 bytes, not 10
    data = encode({"frame": "handshake", "identity": "hulk", "required": "json;dotnet", "optional": ""})
    assert data == bytes([1, 0, 0, 4]) + b"hulk" + bytes([0, 11]) + b"json;dotnet" + bytes([0, 0])


def test_batch_ack_frame_as_profiles_corrects_it() -> None:
    # docs/profiles/micromessage2.md: the seed's "4 2 2 0 4" is wrong; the frame is 02 <id> 02 00 04
    assert encode({"frame": "extension", "id": 3, "ack": 4}) == bytes([0x02, 3, 2, 0, 4])
    assert encode({"frame": "extension", "id": 3, "ack": 4, "large": True}) == bytes([0x0A, 3, 0, 0, 0, 2, 0, 4])


def test_send_command_and_error_layouts() -> None:
    assert encode({"frame": "send", "seq": 258, "destination": "q", "properties": "a:N1;", "payload": "hi"}) == (
        bytes([0x00, 1, 2, 1]) + b"q" + bytes([0, 5]) + b"a:N1;" + bytes([2]) + b"hi")
    assert encode({"frame": "command", "name": "subscribe", "args": {"destination": "test/topic"}}) == (
        bytes([0x01, 34]) + b"subscribe;destination=test%2Ftopic")
    assert encode({"frame": "error", "reason": "bye"}) == bytes([0x04, 3]) + b"bye"
    big = encode({"frame": "send", "seq": 1, "destination": "d", "payload": {"size": 256}})
    assert big[0] == 0x08 and big[7:11] == bytes([0, 0, 1, 0])


def test_split_send_repeats_the_header_and_marks_continued() -> None:
    parts = MM2.encode({"frame": "send", "seq": 7, "destination": "d", "properties": "k:v;",
                        "payload": {"size": 5}, "split": 2}, "tcp")
    assert [p[0] for p in parts] == [0x10, 0x10, 0x00]
    assert all(p[1:11] == bytes([0, 7, 1]) + b"d" + bytes([0, 4]) + b"k:v;" for p in parts)


def feed_all(reader, *chunks: bytes) -> list[dict]:
    return [f.fields for chunk in chunks for f in reader.feed(chunk)]


SERVER_HELLO = bytes([1, 0, 0, 0, 0, 0, 0, 0])


def test_reader_handshake_then_frames_byte_by_byte() -> None:
    reader = MM2.new_reader("tcp")
    stream = SERVER_HELLO + bytes([0x00, 0, 1, 1]) + b"d" + bytes([0, 0, 1]) + b"x" + bytes([0x02, 1, 2, 0xFF, 0xFF])
    frames = feed_all(reader, *(stream[i:i + 1] for i in range(len(stream))))
    assert [f["frame"] for f in frames] == ["handshake", "message", "extension"]
    assert frames[1]["seq"] == 1 and frames[1]["payload"] == b"x" and frames[1]["large"] is False
    assert frames[2]["ack"] == 65535


def test_reader_first_item_may_be_the_error_sent_instead_of_a_hello() -> None:
    frames = feed_all(MM2.new_reader("tcp"), bytes([0x04, 2]) + b"no")
    assert frames == [dict(frames[0], frame="error", reason="no", reason_utf8=True, reason_len=2)]


def test_reader_refuses_a_4_gib_length_at_once() -> None:
    reader = MM2.new_reader("tcp")
    feed_all(reader, SERVER_HELLO)
    with pytest.raises(CodecError, match="too-large"):
        reader.feed(bytes([0x0C, 0xFF, 0xFF, 0xFF, 0xFF]))  # ERROR, LARGE, length 4 GiB - 1, no payload yet
    assert reader.pending < 16


def test_reader_joins_fragments_and_reports_their_sizes() -> None:
    reader = MM2.new_reader("tcp")
    feed_all(reader, SERVER_HELLO)
    parts = MM2.encode({"frame": "message", "seq": 3, "destination": "d", "payload": {"size": 700}, "split": 300}, "tcp")
    frames = feed_all(reader, *parts)
    assert len(frames) == 1
    assert frames[0]["payload"] == bytes(i % 256 for i in range(700))
    assert (frames[0]["fragments"], frames[0]["max_fragment"], frames[0]["large"]) == (3, 300, True)


def test_reader_refuses_fragments_with_different_headers() -> None:
    reader = MM2.new_reader("tcp")
    feed_all(reader, SERVER_HELLO, encode({"frame": "message", "seq": 1, "destination": "d", "payload": "a", "continued": True}))
    with pytest.raises(CodecError, match="fragment-mismatch"):
        reader.feed(encode({"frame": "message", "seq": 2, "destination": "d", "payload": "b"}))


def test_a_client_targets_final_message_is_read_as_a_handshake() -> None:
    async def scenario():
        reader = MM2.new_reader("tcp")  # as the runner does, in the case's own context
        hello = feed_all(reader, SERVER_HELLO)
        MM2.encode({"frame": "handshake"}, "tcp")  # the suite, as server, answers the client's hello
        final = feed_all(reader, SERVER_HELLO, bytes([0x01, 0]))
        return hello, final

    hello, final = asyncio.run(scenario())
    assert [f["frame"] for f in hello] == ["handshake"]
    assert [f["frame"] for f in final] == ["handshake", "command"]


def test_unknown_field_names_are_reported_with_the_field(tmp_path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text(
        "protocol: micromessage2\nfamily: broken\ncases:\n"
        "  - id: micromessage2/broken/typo\n    title: t\n    spec: s\n    requirement: MUST\n"
        "    steps:\n      - send: {frame: send, sequence: 1}\n"
        "  - id: micromessage2/broken/wrong-kind-field\n    title: t\n    spec: s\n    requirement: MUST\n"
        "    steps:\n      - expect: {frame: extension, destination: x}\n"
        "  - id: micromessage2/broken/no-frame\n    title: t\n    spec: s\n    requirement: MUST\n"
        "    steps:\n      - send: {seq: 1}\n"
        "  - id: micromessage2/broken/fine\n    title: t\n    spec: s\n    requirement: MUST\n"
        "    steps:\n      - macro: handshake\n")
    cases = load_file(path, MM2.frame_check).cases
    typo, kind, no_frame, fine = cases
    assert isinstance(typo, BrokenCase) and "'sequence'" in typo.error and ":9:" in typo.error
    assert isinstance(kind, BrokenCase) and "'destination'" in kind.error and "extension frame" in kind.error
    assert isinstance(no_frame, BrokenCase) and "frame:" in no_frame.error
    assert isinstance(fine, Case)


def test_every_case_id_is_stable_and_quotes_the_spec() -> None:
    cases = all_cases("micromessage2")
    assert len(cases) >= 60
    families = {c.family for c in cases.values()}
    assert families >= {"handshake", "extension-index", "ack-wrap", "split-message", "error-disconnect", "pubsub"}
    assert all(c.spec and c.requirement in ("MUST", "SHOULD", "MAY", "INFO") for c in cases.values())


class _Hostile:
    """Answers the hello, then announces a 4 GiB ERROR payload and stalls."""

    async def start(self):
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.url = f"tcp://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"
        return self

    async def _serve(self, reader, writer):
        await reader.read(1024)
        writer.write(SERVER_HELLO + bytes([0x0C, 0xFF, 0xFF, 0xFF, 0xFF]))
        await writer.drain()
        await asyncio.sleep(30)

    async def close(self):
        self.server.close()


def test_a_target_announcing_4_gib_gets_a_grade_at_once() -> None:
    async def go():
        hostile = await _Hostile().start()
        try:
            return await run_case(all_cases("micromessage2")["micromessage2/handshake/same-version"], hostile.url)
        finally:
            await hostile.close()

    started = time.monotonic()
    result = asyncio.run(go())
    assert result.grade is Grade.FAILED and "too-large" in result.message
    assert time.monotonic() - started < 5
