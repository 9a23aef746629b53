"""MTL's data connections in `conformance interop` (conformance/images/interop_mtl.py): the 202
reply's port rewritten on hand-made ZMTP frames (RFC 23 octet by octet, not the reference's
encoders), and in-process pairs (no engine) whose data connections cross the monitor."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

from conformance.images.implementations import Implementation
from conformance.images.interop import REFERENCE, run_interop, run_pair
from conformance.images.interop_mtl import LeasePortRewriter
from conformance.images.interop_zmtp import mtl
from reference_impl.mtl.codec import Response, Summon
from reference_impl.mtl.server import MtlServer
from reference_impl.mtl.service import Broker, BrokerOptions

MORE, LONG, COMMAND = 0x01, 0x02, 0x04
NULL_GREETING = b"\xff" + bytes(8) + b"\x7f" + b"\x03\x01" + b"NULL".ljust(20, b"\x00") + b"\x00" + bytes(31)
CURVE_GREETING = b"\xff" + bytes(8) + b"\x7f" + b"\x03\x01" + b"CURVE".ljust(20, b"\x00") + b"\x01" + bytes(31)
READY = bytes([COMMAND, 28]) + b"\x05READY" + b"\x0bSocket-Type" + b"\x00\x00\x00\x06ROUTER"
REFERENCE_IMPL = Implementation(name=REFERENCE, image="", kind="reference", protocols=("mtl",))


def reply(code: bytes, body: bytes) -> bytes:
    """A REQ reply as a ROUTER sends it: the empty delimiter, the code, the JSON (short frames)."""
    return bytes([MORE, 0]) + bytes([MORE, len(code)]) + code + bytes([0, len(body)]) + body


def rewritten(stream: bytes, chunk: int, new_port: int) -> tuple[bytes, list[int]]:
    rewriter, out, seen = LeasePortRewriter(), bytearray(), []
    for at in range(0, len(stream), chunk):
        for piece in rewriter.feed(stream[at:at + chunk]):
            if isinstance(piece, bytes):
                out += piece
            else:
                seen.append(piece.port)
                out += piece.with_port(new_port)
    return bytes(out), seen


def test_the_202_port_is_replaced_and_its_frame_resized_nothing_else_changes() -> None:
    lease = b'{"status":"Data Lease","port":40000,"lease":"abc"}'  # 50 octets
    before = NULL_GREETING + READY + reply(b"201", b'{"port":40000}') + reply(b"202", lease)
    for chunk in (1, 7, len(before)):  # a frame cut across reads waits for its end
        out, seen = rewritten(before, chunk, 5)
        assert seen == [40000]  # the 201 (no lease) is left as it is
        # the last frame: flags 0, size 50 - 4 = 46, the digits 5 in place of 40000
        assert out == before[:-52] + b"\x00\x2e" + b'{"status":"Data Lease","port":5,"lease":"abc"}'
        assert len(before) - len(out) == 4


def test_a_body_that_outgrows_the_short_form_gets_a_long_frame() -> None:
    body = b'{"status":"Data Lease","port":80,"lease":"' + b"x" * 210 + b'"}'
    assert len(body) == 254
    before = NULL_GREETING + READY + reply(b"202", body)
    out, _ = rewritten(before, 3, 45678)
    # RFC 23: LONG (0x02) and an 8-octet size, 257
    assert out[-266:-257] == b"\x02\x00\x00\x00\x00\x00\x00\x01\x01"
    assert out[-257:] == body.replace(b'"port":80,', b'"port":45678,')
    assert out[:-266] == before[:-256]


def test_a_202_with_two_port_members_is_forwarded_as_it_is_and_noted() -> None:
    lease = b'{"status":"Data Lease","port":40000,"extra":{"port":40000}}'
    before = NULL_GREETING + READY + reply(b"202", lease)
    rewriter = LeasePortRewriter()
    pieces = rewriter.feed(before)
    assert b"".join(pieces) == before and all(isinstance(p, bytes) for p in pieces)
    assert len(rewriter.skipped) == 1 and "40000" in rewriter.skipped[0] and "not monitored" in rewriter.skipped[0]


def test_under_curve_nothing_is_rewritten_and_the_note_says_why() -> None:
    rewriter = LeasePortRewriter()
    data = CURVE_GREETING + bytes([COMMAND, 3]) + b"abc"
    assert b"".join(rewriter.feed(data)) == data
    assert "CURVE" in rewriter.note and "not monitored" in rewriter.note


def test_reference_pair_data_connections_cross_the_monitor(tmp_path: Path) -> None:
    document = run_interop("mtl", [REFERENCE_IMPL], tmp_path, ["test-profile", "scram"], log=lambda line: None)
    cases = {c["case"]: c for c in document["pairs"][0]["cases"]}
    for case in ("test-profile", "scram"):
        assert cases[case]["verdict"] == "passed", cases[case]
        wire = (tmp_path / cases[case]["wire"]).read_text()
        # a writer and a reader lease: two rewrites, two data connections, their frames counted
        assert wire.count("the 202 reply's data port") == 2 and "rewritten to" in wire
        data = [line for line in wire.splitlines() if "monitor: 2 data connections" in line]
        assert data and int(data[0].split(", ")[1].split()[0]) > 0, data
        assert "data connection 2, server to client" in wire


class _AnswersSummonTwice(Broker):
    """A Summon answered twice: the second Response echoes a sequence no command awaits any more.
    The reference client keeps it unread and passes: only the data connection's monitor sees it."""

    def _on_command(self, s, cmd, now, out):
        super()._on_command(s, cmd, now, out)
        if isinstance(cmd, Summon):
            out.send(s.key, Response(cmd.seq, 200))


def test_a_data_connection_rule_broken_by_the_server_is_named_in_the_verdict(tmp_path: Path) -> None:
    async def start():
        return await MtlServer(_AnswersSummonTwice(BrokerOptions())).listen("127.0.0.1", 0)

    proto = dataclasses.replace(mtl(), start_reference_server=start)
    pair = asyncio.run(run_pair(REFERENCE_IMPL, REFERENCE_IMPL, proto, "mtl", ["test-profile"], tmp_path))
    case = pair["cases"][0]
    assert pair["verdict"] == case["verdict"] == "server-broke-spec"
    assert case["exitCode"] == 0  # the client saw nothing wrong
    assert len(case["violations"]) == 1
    violation = case["violations"][0]
    assert violation.startswith("server broke mtl-response-without-command") and "data connection 2" in violation
    assert "VIOLATION data connection 2" in (tmp_path / case["wire"]).read_text()


def test_a_frame_the_server_never_finishes_is_forwarded_at_the_end() -> None:
    rewriter = LeasePortRewriter()
    cut = NULL_GREETING + READY + b"\x00\x09abc"  # a 9-octet frame, 3 octets of it
    assert b"".join(rewriter.feed(cut)) == NULL_GREETING + READY
    assert rewriter.flush() == b"\x00\x09abc"


def test_frames_that_cannot_be_read_are_forwarded_as_they_came_from_then_on() -> None:
    # RFC 23: flags 0xF0 sets reserved bits; what follows is passed on untouched for the monitor to judge
    bad = b"\xf0\x00" + reply(b"202", b'{"port":40000}')
    for chunk in (len(bad), 1):
        rewriter = LeasePortRewriter()
        out = b"".join(rewriter.feed(NULL_GREETING + READY))
        for at in range(0, len(bad), chunk):
            out += b"".join(piece for piece in rewriter.feed(bad[at:at + chunk]) if isinstance(piece, bytes))
        assert out == NULL_GREETING + READY + bad
        assert "cannot be read" in rewriter.note and "bad-flags" in rewriter.note
