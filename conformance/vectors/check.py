"""Check vector files against the reference codecs.

    python -m conformance.vectors.check [PATH ...]

A malformed vector file is reported with its path and the failing field; the
remaining files are still checked.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

import jsonschema

from conformance.paths import vectors_dir
from reference_impl.common.errors import CodecError


@dataclass(frozen=True)
class VectorOutcome:
    path: str
    tc_id: int | None
    ok: bool
    detail: str

    @property
    def name(self) -> str:
        return f"{self.path}#{self.tc_id}" if self.tc_id is not None else self.path


class VectorFileError(Exception):
    """The file itself is broken: not JSON, or not of the schema."""


@lru_cache(maxsize=None)
def _schema(name: str) -> dict[str, Any] | None:
    path = vectors_dir() / "schema" / name
    if not path.exists():
        return None
    return json.loads(path.read_text())


def _where(error: jsonschema.ValidationError) -> str:
    return "/".join(str(p) for p in error.absolute_path) or "(top level)"


def load_vector_file(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise VectorFileError(f"{path}: cannot read: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise VectorFileError(f"{path}:{exc.lineno}:{exc.colno}: not JSON: {exc.msg}") from exc
    schema = _schema("vectors.schema.json")
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(doc))
    if error is not None:
        raise VectorFileError(f"{path}: field {_where(error)}: {error.message}")
    _check_flags_and_ids(path, doc)
    message_schema = _schema(f"{doc['protocol']}-message.schema.json")
    if message_schema is not None:
        validator = jsonschema.Draft202012Validator(message_schema)
        for gi, group in enumerate(doc["testGroups"]):
            for ti, test in enumerate(group["tests"]):
                if "message" in test:
                    err = jsonschema.exceptions.best_match(validator.iter_errors(test["message"]))
                    if err is not None:
                        raise VectorFileError(
                            f"{path}: field testGroups/{gi}/tests/{ti}/message/{_where(err)} "
                            f"(tcId {test['tcId']}): {err.message}"
                        )
    return doc


def _check_flags_and_ids(path: Path, doc: dict[str, Any]) -> None:
    seen: set[int] = set()
    count = 0
    for group in doc["testGroups"]:
        for test in group["tests"]:
            count += 1
            if test["tcId"] in seen:
                raise VectorFileError(f"{path}: tcId {test['tcId']} used twice")
            seen.add(test["tcId"])
            for flag in test["flags"]:
                if flag not in doc["notes"]:
                    raise VectorFileError(f"{path}: tcId {test['tcId']}: flag {flag!r} has no entry in notes")
    if count != doc["numberOfTests"]:
        raise VectorFileError(f"{path}: numberOfTests is {doc['numberOfTests']} but the file has {count} tests")


def adapter_for(protocol: str):
    return importlib.import_module(f"conformance.vectors.{protocol}")


def check_test(adapter, group: dict[str, Any], test: dict[str, Any]) -> tuple[bool, str]:
    """Return (ok, detail) for one vector."""
    context = group["context"]
    wire = bytes.fromhex(test["wire"])
    result = test["result"]
    direction = group["direction"]
    if direction in ("decode", "roundtrip"):
        try:
            decoded = adapter.decode(context, wire)
        except CodecError as exc:
            if result == "invalid" and exc.code != test["error"]:
                return False, f"rejected with {exc.code!r}, vector says {test['error']!r}"
            if result == "valid":
                return False, f"valid vector rejected: {exc}"
        else:
            if result == "invalid":
                return False, f"invalid vector ({test['error']}) accepted as {decoded!r}"
            if "message" in test and decoded != test["message"]:
                return False, f"decoded {decoded!r}, vector says {test['message']!r}"
    if direction in ("encode", "roundtrip") and result == "valid":
        try:
            encoded = adapter.encode(context, test["message"])
        except CodecError as exc:
            return False, f"encoder refused a valid message: {exc}"
        if encoded != wire:
            return False, f"encoded {encoded.hex()}, vector says {test['wire']}"
    if direction == "encode" and result == "invalid":
        try:
            encoded = adapter.encode(context, test["message"])
        except CodecError as exc:
            if exc.code != test["error"]:
                return False, f"encoder refused with {exc.code!r}, vector says {test['error']!r}"
        else:
            return False, f"encoder accepted an invalid message: {encoded.hex()}"
    return True, "ok"


def iter_vector_files(paths: list[Path]) -> Iterator[Path]:
    for p in paths:
        if p.is_dir():
            yield from sorted(q for q in p.rglob("*.json") if "schema" not in q.relative_to(p).parts
                              and q.parent.name != "schema")
        else:
            yield p


def check_file(path: Path) -> list[VectorOutcome]:
    try:
        doc = load_vector_file(path)
        adapter = adapter_for(doc["protocol"])
    except VectorFileError as exc:
        return [VectorOutcome(str(path), None, False, str(exc))]
    except ImportError as exc:
        return [VectorOutcome(str(path), None, False, f"{path}: no codec adapter: {exc}")]
    outcomes = []
    for group in doc["testGroups"]:
        for test in group["tests"]:
            try:
                ok, detail = check_test(adapter, group, test)
            except Exception as exc:  # a crash in the codec is a finding, not a checker crash
                ok, detail = False, f"codec raised {type(exc).__name__}: {exc}"
            outcomes.append(VectorOutcome(str(path), test["tcId"], ok, detail))
    return outcomes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="conformance vectors check", description=__doc__)
    parser.add_argument("paths", nargs="*", type=Path, help="files or folders (default: all vectors)")
    volume = parser.add_mutually_exclusive_group()
    volume.add_argument("-q", "--quiet", action="store_true", help="print failures and the total only")
    volume.add_argument("-v", "--verbose", action="store_true", help="also print every vector that passed")
    args = parser.parse_args(argv)
    paths = args.paths or [vectors_dir()]
    total = failed = 0
    for path in iter_vector_files(paths):
        outcomes = check_file(path)
        file_failed = 0
        for outcome in outcomes:
            if not outcome.ok:
                file_failed += 1
                print(f"FAIL {outcome.name}: {outcome.detail}")
            elif args.verbose:
                print(f"ok   {outcome.name}")
        if not args.quiet:
            status = "FAIL" if file_failed else "ok  "
            print(f"{status} {path}: {len(outcomes) - file_failed} passed, {file_failed} failed")
        total += len(outcomes)
        failed += file_failed
    print(f"vectors: {total - failed} passed, {failed} failed")
    return 1 if failed or total == 0 else 0

if __name__ == "__main__":
    sys.exit(main())
