"""The RSocket vector files: valid against the schemas and the reference codec."""

from __future__ import annotations

import json

import pytest

from conformance.paths import vectors_dir
from conformance.vectors import rsocket as adapter
from conformance.vectors.check import check_file, main as check_main
from reference_impl.rsocket.codec import FrameError

FILES = sorted((vectors_dir() / "rsocket").glob("*.json"))


def _tests():
    for path in FILES:
        for group in json.loads(path.read_text())["testGroups"]:
            for test in group["tests"]:
                yield path.name, group, test


def test_enough_vectors_valid_and_invalid() -> None:
    results = [t["result"] for _, _, t in _tests()]
    assert len(results) >= 150
    assert results.count("valid") >= 50 and results.count("invalid") >= 50


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_vector_file(path) -> None:
    failures = [o for o in check_file(path) if not o.ok]
    assert not failures, "\n".join(f"{o.name}: {o.detail}" for o in failures)


def test_every_frame_type_has_valid_and_invalid_vectors() -> None:
    types = {"SETUP", "LEASE", "KEEPALIVE", "REQUEST_RESPONSE", "REQUEST_FNF", "REQUEST_STREAM",
             "REQUEST_CHANNEL", "REQUEST_N", "CANCEL", "PAYLOAD", "ERROR", "METADATA_PUSH",
             "RESUME", "RESUME_OK", "EXT"}
    valid = {t["message"]["type"] for _, _, t in _tests() if t["result"] == "valid"}
    assert valid == types
    # the frame type of an invalid wire is in its header word (byte 4 of a frame, 7 on TCP)
    invalid = set()
    for _, group, test in _tests():
        wire = bytes.fromhex(test["wire"])
        at = 7 if group["context"].get("framing") == "tcp" else 4
        if test["result"] == "invalid" and len(wire) > at:
            invalid.add(wire[at] >> 2)
    assert set(range(0x01, 0x0F)) | {0x3F} <= invalid


def test_ignorable_flag_matches_the_decoder() -> None:
    """IGNORABLE vectors are the frames a receiver must drop and keep serving."""
    for name, group, test in _tests():
        if test["result"] != "invalid":
            continue
        with pytest.raises(FrameError) as err:
            adapter.decode(group["context"], bytes.fromhex(test["wire"]))
        assert err.value.ignorable is ("IGNORABLE" in test["flags"]), f"{name}#{test['tcId']}"


def test_every_flag_is_set_in_some_valid_vector() -> None:
    seen = set()
    for _, _, t in _tests():
        if t["result"] == "valid":
            m = t["message"]
            seen |= {k for k in ("ignore", "follows", "complete", "next", "lease", "respond",
                                 "metadataFlag") if m.get(k)}
            if m.get("metadata") is not None:
                seen.add("M")
            if m.get("resumeToken") is not None:
                seen.add("R")
    assert seen == {"ignore", "follows", "complete", "next", "lease", "respond", "metadataFlag",
                    "M", "R"}


def test_checker_cli_runs_the_rsocket_folder(capsys) -> None:
    assert check_main(["-q", str(vectors_dir() / "rsocket")]) == 0
    assert "0 failed" in capsys.readouterr().out
