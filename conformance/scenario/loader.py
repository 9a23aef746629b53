"""Load scenario files, validating each against the schema.

Errors name the file, the line and the field.  A broken case does not stop
the others of its file; a broken file does not stop the other files.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from conformance.registry import NAMES
from conformance.scenario.values import expression_problems

_SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schemas" / "scenario.schema.json"
MAX_FILE_BYTES = 4 * 1024 * 1024


class ScenarioError(Exception):
    """A scenario file or case that cannot be used, with where and why."""


@dataclass
class Case:
    id: str
    title: str
    spec: str
    requirement: str
    steps: list[dict[str, Any]]
    protocol: str
    family: str
    path: Path
    line: int
    section: str = ""
    profile: str = ""
    spec_file: str = ""
    transports: list[str] = field(default_factory=list)
    role: str = "server"
    client_testcase: str | None = None
    client_exit: int | None = None
    timeout_ms: int | str = 15000  # milliseconds, or millis() of the target's parameters
    noise: list[dict[str, Any]] | None = None
    fault: dict[str, Any] | None = None
    serial: bool = False  # changes the target's shared state: never overlaps another serial case (--jobs)

    @property
    def spec_ref(self) -> str:
        return f"{self.spec_file}#{self.section}" if self.section else self.spec_file


@dataclass
class BrokenCase:
    """A case that failed validation; it is reported as an ERROR, the rest run."""

    id: str
    path: Path
    line: int
    error: str
    protocol: str = ""
    family: str = ""


@dataclass
class ScenarioFile:
    path: Path
    protocol: str
    family: str
    cases: list[Case | BrokenCase]


@lru_cache(maxsize=1)
def _schema() -> dict[str, Any]:
    schema = json.loads(_SCHEMA_PATH.read_text())
    # the protocols are the registry's (the file's enum is a static copy for readers outside Python)
    schema["properties"]["protocol"]["enum"] = list(NAMES)
    return schema


@lru_cache(maxsize=4)  # one per kind, not one per case: building one resolves the schema again
def _validator(ref: str | None = None) -> jsonschema.Draft202012Validator:
    schema = _schema()
    if ref is not None:
        schema = {"$ref": f"#/$defs/{ref}", "$defs": schema["$defs"]}
    return jsonschema.Draft202012Validator(schema)


#: libyaml's parser when PyYAML has it (about 5x faster than the pure-Python one), else the same in Python.
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _parse_yaml(text: str, loader_class: type = _YAML_LOADER) -> tuple[yaml.Node | None, Any]:
    """The node tree (for line numbers) and the document built from it: one parse, as yaml.safe_load.

    A file libyaml refuses is parsed again by the pure-Python loader, whose error messages say more
    ("found character '\\t' ..."); the line is the same either way."""
    loader = loader_class(text)
    try:
        node = loader.get_single_node()
        return node, (loader.construct_document(node) if node is not None else None)
    except yaml.YAMLError:
        if loader_class is yaml.SafeLoader:
            raise
    finally:
        loader.dispose()
    return _parse_yaml(text, yaml.SafeLoader)


class _LineIndex:
    """Maps a path inside the YAML document to the line it starts on."""

    def __init__(self, node: yaml.Node | None) -> None:
        self.lines: dict[tuple, int] = {}
        if node is not None:
            self._walk(node, ())

    def _walk(self, node: yaml.Node, path: tuple) -> None:
        self.lines[path] = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                k = key.value
                self.lines[path + (k,)] = key.start_mark.line + 1
                self._walk(value, path + (k,))
                self.lines[path + (k,)] = key.start_mark.line + 1
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                self._walk(item, path + (i,))

    def line_of(self, path: tuple) -> int:
        while path and path not in self.lines:
            path = path[:-1]
        return self.lines.get(path, 1)


def _describe(error: jsonschema.ValidationError, prefix: tuple) -> tuple[tuple, str]:
    # best_match picks the most specific error; for oneOf on steps we say which keys were seen.
    path = prefix + tuple(error.absolute_path)
    where = "/".join(str(p) for p in path) or "(top level)"
    message = error.message
    if error.validator == "oneOf" and isinstance(error.instance, dict):
        message = f"a step needs exactly one of send, expect, expect_close, expect_silence, sleep_ms, keep_alive, close, macro, repeat, connect, accept, use, expect_exit (got keys: {', '.join(map(str, error.instance))})"
    return path, f"field {where}: {message}"


def load_file(path: Path, frame_check=None, shared_state_use=None) -> ScenarioFile:
    """Load one file.  ``frame_check(case_dict) -> list[(path, message)]`` lets the
    protocol adapter check frame field names inside send/expect steps;
    ``shared_state_use(case_dict) -> (path, what) | None`` names the first step that touches
    state the target shares between connections, which only a `serial` case may do."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise ScenarioError(f"{path}: larger than {MAX_FILE_BYTES} bytes")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioError(f"{path}: cannot read: {exc}") from exc
    try:
        node, doc = _parse_yaml(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark else ""
        raise ScenarioError(f"{path}{line}: not valid YAML: {getattr(exc, 'problem', exc)}") from exc
    if not isinstance(doc, dict):
        raise ScenarioError(f"{path}:1: a scenario file is a mapping with protocol, family and cases")
    lines = _LineIndex(node)
    error = jsonschema.exceptions.best_match(_validator().iter_errors(doc))
    if error is not None:
        where, message = _describe(error, ())
        raise ScenarioError(f"{path}:{lines.line_of(where)}: {message}")
    defaults = doc.get("defaults", {})
    cases: list[Case | BrokenCase] = []
    seen: set[str] = set()
    for index, raw in enumerate(doc["cases"]):
        prefix = ("cases", index)
        line = lines.line_of(prefix)
        case_id = raw.get("id", f"<case {index}>") if isinstance(raw, dict) else f"<case {index}>"
        problem = _case_problem(raw, prefix, doc, lines, seen, frame_check)
        if problem is None and shared_state_use is not None:
            problem = _unmarked_shared_state(raw, defaults, prefix, lines, shared_state_use)
        if problem:
            cases.append(BrokenCase(str(case_id), path, line, f"{path}:{problem}", doc["protocol"], doc["family"]))
            continue
        seen.add(raw["id"])
        cases.append(Case(
            id=raw["id"], title=raw["title"], spec=raw["spec"], requirement=raw["requirement"],
            steps=raw["steps"], protocol=doc["protocol"], family=doc["family"], path=path, line=line,
            section=raw.get("section", ""), profile=raw.get("profile", ""), spec_file=doc.get("spec_file", ""),
            transports=raw.get("transports", defaults.get("transports", [])),
            role=raw.get("role", "server"), client_testcase=raw.get("client_testcase"),
            client_exit=raw.get("client_exit"),
            timeout_ms=raw.get("timeout_ms", defaults.get("timeout_ms", 15000)),
            noise=raw.get("noise", defaults.get("noise")), fault=raw.get("fault"),
            serial=raw.get("serial", defaults.get("serial", False)),
        ))
    return ScenarioFile(path, doc["protocol"], doc["family"], cases)


def _unmarked_shared_state(raw, defaults, prefix, lines, shared_state_use) -> str | None:
    """A case that touches the target's shared state must say so: run beside another such case it
    could see that case's messages (or take its lease), a verdict that depends on the schedule."""
    if raw.get("serial", defaults.get("serial", False)):
        return None
    found = shared_state_use(raw)
    if found is None:
        return None
    full = prefix + tuple(found[0])
    return (f"{lines.line_of(full)}: field {'/'.join(map(str, full))}: this step {found[1]}, state the target "
            "shares between connections: mark the case `serial: true` so that it never runs beside another such case")


def _case_problem(raw, prefix, doc, lines, seen, frame_check) -> str | None:
    error = jsonschema.exceptions.best_match(_validator("case").iter_errors(raw))
    if error is not None:
        where, message = _describe(error, prefix)
        return f"{lines.line_of(where)}: {message}"
    expected_prefix = f"{doc['protocol']}/{doc['family']}/"
    if not raw["id"].startswith(expected_prefix):
        return f"{lines.line_of(prefix + ('id',))}: field {'/'.join(map(str, prefix))}/id: case id {raw['id']!r} must start with {expected_prefix!r}"
    if raw["id"] in seen:
        return f"{lines.line_of(prefix + ('id',))}: field {'/'.join(map(str, prefix))}/id: case id {raw['id']!r} used twice"
    if raw.get("role") == "client" and not raw.get("client_testcase"):
        return f"{lines.line_of(prefix)}: field {'/'.join(map(str, prefix))}: a client-role case needs client_testcase"
    for sub_path, message in expression_problems(raw):
        full = prefix + sub_path
        return f"{lines.line_of(full)}: field {'/'.join(map(str, full))}: {message}"
    if frame_check is not None:
        for sub_path, message in frame_check(raw):
            full = prefix + tuple(sub_path)
            return f"{lines.line_of(full)}: field {'/'.join(map(str, full))}: {message}"
    return None
