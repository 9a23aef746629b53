"""The mc0 vector files: valid against the schemas and the reference codec and broker, covering every
verb and every error code; and a codec with a planted bug fails them."""

from __future__ import annotations

import json

import pytest

from conformance.paths import vectors_dir
from conformance.vectors import mc0 as adapter
from conformance.vectors.check import check_file, main as check_main
from reference_impl.common.errors import CodecError
from reference_impl.mc0 import broker as mc0_broker
from reference_impl.mc0 import codec
from reference_impl.mc0.codec import Mc0Message

FILES = sorted((vectors_dir() / "mc0").glob("*.json"))


def _tests():
    for path in FILES:
        doc = json.loads(path.read_text())
        for group in doc["testGroups"]:
            for test in group["tests"]:
                yield path.name, group, test


def _failures(paths=FILES) -> list[str]:
    return [f"{o.name}: {o.detail}" for path in paths for o in check_file(path) if not o.ok]


def test_files_flags_and_sources() -> None:
    assert {p.name for p in FILES} >= {"messages.json", "requests.json", "replies.json"}
    docs = [json.loads(p.read_text()) for p in FILES]
    assert sum(d["numberOfTests"] for d in docs) >= 100
    flags = {f for _, _, t in _tests() for f in t["flags"]}
    assert {"SPEC_ERRATUM", "SPEC_EXAMPLE", "PROFILE_READING", "MALFORMED", "LEGACY_VERSION"} <= flags
    assert all(t.get("source") and t["comment"] for _, _, t in _tests())
    assert {t["result"] for _, _, t in _tests()} == {"valid", "invalid", "acceptable"}


def test_every_verb_has_a_valid_message_vector() -> None:
    verbs = {bytes.fromhex(t["message"]["verb"]) for _, g, t in _tests()
             if g["context"]["kind"] == "message" and t["result"] == "valid"}
    assert codec.CLIENT_VERBS | codec.BROKER_VERBS <= verbs
    served = {bytes.fromhex(t["message"]["verb"]) for _, g, t in _tests()
              if g["context"]["kind"] == "request" and t["result"] == "valid"}
    assert served == codec.CLIENT_VERBS


def test_every_error_code_has_a_vector() -> None:
    codes = {(g["context"]["kind"], t["error"]) for _, g, t in _tests() if t["result"] == "invalid"}
    message_codes = {c for k, c in codes if k == "message"}
    assert {"no-delimiter", "no-verb", "odd-headers", "empty-key", "truncated", "trailing-bytes", "not-a-message"} \
        <= message_codes
    request_codes = {c for k, c in codes if k == "request"}
    assert {"unknown-verb", "repeated-header", "bad-version", "bad-ttl", "no-separator", "no-topics", "no-topic"} \
        <= request_codes
    # undefined reserved headers are left open (MAY): acceptable, with the reference's code named
    assert any(t.get("error") == "undefined-header" and t["result"] == "acceptable" for _, _, t in _tests())


def test_versions_as_profiles_pins_them() -> None:
    verdicts = {}
    for _, g, t in _tests():
        if g["context"]["kind"] != "request":
            continue
        frames = adapter.frames_of(bytes.fromhex(t["wire"]))
        if frames[1:2] == [b"CONNECT"] and b"VERSION" in frames[2::2]:
            at = frames.index(b"VERSION", 2)
            verdicts[frames[at + 1]] = t["result"]
    assert verdicts[b"0.3"] == verdicts[b"0.2"] == "valid"
    assert verdicts[b"0.1"] == verdicts[b"0.4"] == "invalid"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_vector_file(path) -> None:
    failures = [o for o in check_file(path) if not o.ok]
    assert not failures, "\n".join(f"{o.name}: {o.detail}" for o in failures)


def test_cli_checks_mc0(capsys) -> None:
    assert check_main(["-v", str(vectors_dir() / "mc0")]) == 0  # -v: every vector, not one line per file
    out = capsys.readouterr().out
    assert "messages.json#1" in out and "replies.json#1" in out and " 0 failed" in out


def test_adapter_reports_zmtp_codes() -> None:
    with pytest.raises(CodecError) as err:
        adapter.decode({"kind": "message"}, bytes.fromhex("0100"))
    assert err.value.code == "truncated"
    with pytest.raises(CodecError) as err:
        adapter.decode({"kind": "message"}, bytes.fromhex("0100000000"))
    assert err.value.code == "trailing-bytes"


# -- a wrong codec or broker fails the vectors -------------------------------------------


def _no_delimiter_needed(frames, *, delimiter=True):
    """Bug: takes a message with or without the delimiter."""
    return _REAL_DECODE(frames, delimiter=bool(frames) and frames[0] == b"")


def _empty_frame_is_always_separator(frames, *, delimiter=True):
    """Bug: the first empty frame after the verb is the separator, even where a value goes."""
    if not frames or frames[0] != b"":
        raise CodecError("no-delimiter")
    rest = list(frames[1:])
    if not rest or not rest[0]:
        raise CodecError("no-verb")
    if b"" in rest[1:]:
        cut = rest.index(b"", 1)
        head, positional = rest[1:cut], tuple(rest[cut + 1:])
    else:
        head, positional = rest[1:], None
    if len(head) % 2:
        raise CodecError("odd-headers")
    return Mc0Message(rest[0], tuple(zip(head[::2], head[1::2])), positional)


def _drops_empty_separator(msg, *, delimiter=True):
    """Bug: no separator frame when nothing follows it (SUB '' reads back as SUB)."""
    frames = _REAL_ENCODE(msg, delimiter=delimiter)
    return frames[:-1] if msg.positional == () else frames


_REAL_DECODE = codec.decode_message
_REAL_ENCODE = codec.encode_message


@pytest.mark.parametrize("bug,file", [
    ("no-delimiter-needed", "messages.json"),
    ("empty-frame-is-separator", "messages.json"),
    ("drops-empty-separator", "messages.json"),
    ("accepts-any-version", "requests.json"),
    ("every-key-counts-as-x", "requests.json"),
    ("ok-id-stripped", "replies.json"),
    ("ok-for-unknown-verb", "replies.json"),
])
def test_a_wrong_implementation_fails_some_vector(monkeypatch: pytest.MonkeyPatch, bug: str, file: str) -> None:
    if bug == "no-delimiter-needed":
        monkeypatch.setattr(codec, "decode_message", _no_delimiter_needed)
    elif bug == "empty-frame-is-separator":
        monkeypatch.setattr(codec, "decode_message", _empty_frame_is_always_separator)
    elif bug == "drops-empty-separator":
        monkeypatch.setattr(codec, "encode_message", _drops_empty_separator)
    elif bug == "accepts-any-version":
        monkeypatch.setattr(mc0_broker, "ACCEPTED_VERSIONS", _Anything())
    elif bug == "every-key-counts-as-x":
        monkeypatch.setattr(mc0_broker, "is_extension", lambda key: True)
    elif bug == "ok-id-stripped":
        monkeypatch.setattr(codec, "ok", lambda request_id: Mc0Message(codec.OK, ((codec.ID, request_id.strip()),)))
    elif bug == "ok-for-unknown-verb":
        monkeypatch.setattr(mc0_broker, "KNOWN_HEADERS", _KnowsEveryVerb(mc0_broker.KNOWN_HEADERS))
    failures = _failures([vectors_dir() / "mc0" / file])
    assert failures, f"the planted bug {bug!r} passes every vector of {file}"


class _Anything:
    def __contains__(self, item) -> bool:
        return True


class _KnowsEveryVerb(dict):
    def get(self, key, default=None):
        return super().get(key, frozenset({codec.ID, codec.TOPIC}))


def test_the_real_implementation_passes_after_the_planted_bugs() -> None:
    assert not _failures()
