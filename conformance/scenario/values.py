"""Values inside steps: payload specs, millisecond expressions, repeat variables."""

from __future__ import annotations

import ast
import json
import keyword
import operator
import re
import secrets
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache, partial
from typing import Any, Callable, Iterator

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.Mod: operator.mod, ast.FloorDiv: operator.floordiv}


class ValueError_(Exception):
    """A value in a step that cannot be evaluated."""


@lru_cache(maxsize=1024)
def _parse(expr: str) -> ast.Expression:
    return ast.parse(expr.lstrip("= "), mode="eval")  # cached: a repeat evaluates the same text thousands of times


def _check(node: ast.AST, expr: str, names: list[str]) -> None:
    """Integer arithmetic over names, nothing else; collects the names, left to right."""
    if isinstance(node, ast.Expression):
        _check(node.body, expr, names)
    elif isinstance(node, ast.Constant) and isinstance(node.value, int):
        pass
    elif isinstance(node, ast.Name):
        names.append(node.id)
    elif isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        _check(node.left, expr, names)
        _check(node.right, expr, names)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        _check(node.operand, expr, names)
    else:
        raise ValueError_(f"only integer arithmetic is allowed: {expr!r}")


@lru_cache(maxsize=1024)
def _compiled(expr: str) -> tuple[Any, tuple[str, ...]]:
    """The checked expression as code, and the names it reads.  Cached and compiled, not walked
    per call: a repeat of 70,000 steps evaluates the same few texts 140,000 times."""
    try:
        tree = _parse(expr)
    except SyntaxError as exc:
        raise ValueError_(f"not an expression: {expr!r}") from exc
    names: list[str] = []
    _check(tree, expr, names)
    return compile(tree, "<scenario expression>", "eval"), tuple(dict.fromkeys(names))


_NO_BUILTINS = {"__builtins__": {}}


def evaluate(expr: str, names: dict[str, int]) -> int:
    """Integer arithmetic over names: '= i % 65535 + 1'.  Nothing else is allowed."""
    code, needed = _compiled(expr)
    for name in needed:
        if name not in names:
            raise ValueError_(f"unknown name {name!r} in {expr!r}")
    # only int constants, names and + - * % // (checked above), no builtins: nothing else can run
    return eval(code, _NO_BUILTINS, names)  # noqa: S307


def expression_problems(value: Any, path: tuple = ()) -> list[tuple[tuple, str]]:
    """Every '= expr' string (in nested dicts/lists) that is not integer arithmetic, with its path:
    the loader reports them before the case runs (which names exist is only known then)."""
    if isinstance(value, str) and value.startswith("="):
        try:
            _compiled(value)
        except ValueError_ as exc:
            return [(path, str(exc))]
        return []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    return [problem for key, item in items for problem in expression_problems(item, path + (key,))]


_HAS_EXPRESSION: dict[int, tuple[Any, bool]] = {}  # id -> (the scenario's own dict or list, kept alive; answer)


def has_expression(value: Any) -> bool:
    """Whether a scenario's step holds an '= expr' anywhere; remembered per step (a repeat asks
    65,535 times of the same few steps)."""
    if isinstance(value, str):
        return value.startswith("=")
    if not isinstance(value, (dict, list)):
        return False
    known = _HAS_EXPRESSION.get(id(value))
    if known is not None and known[0] is value:
        return known[1]
    items = value.values() if isinstance(value, dict) else value
    answer = any(has_expression(item) for item in items)
    _HAS_EXPRESSION[id(value)] = (value, answer)
    return answer


def substitute(value: Any, names: dict[str, int]) -> Any:
    """Replace '= expr' strings (in nested dicts/lists) by their value; a part that holds none is
    returned as it is (not copied)."""
    if isinstance(value, str):
        return evaluate(value, names) if value.startswith("=") else value
    if not isinstance(value, (dict, list)):
        return value
    known = _TEMPLATES.get(id(value))
    if known is None or known[0] is not value:
        known = _TEMPLATES[id(value)] = (value, _template(value))
    return known[1](names)


_TEMPLATES: dict[int, tuple[Any, Callable[[dict[str, int]], Any]]] = {}  # id -> (the step, kept alive; builder)


def _template(value: Any) -> Callable[[dict[str, int]], Any]:
    """A function building ``value`` with its '= expr' parts evaluated: the step is walked once,
    not on each of a repeat's 65,535 rounds."""
    if isinstance(value, str) and value.startswith("="):
        name = value.lstrip("= ").strip()
        if name.isidentifier() and not keyword.iskeyword(name):  # '= i': the value itself, as eval gives it
            return lambda names: names[name] if name in names else evaluate(value, names)
        return partial(evaluate, value)
    if not has_expression(value):
        return lambda names: value
    if isinstance(value, dict):
        parts = [(key, _template(item)) for key, item in value.items()]
        return lambda names: {key: build(names) for key, build in parts}
    builders = [_template(item) for item in value]
    return lambda names: [build(names) for build in builders]


def millis(value: int | str, params: dict[str, int]) -> int:
    """'heartbeat_timeout_ms + 2000' -> that parameter plus 2000; '= 4 * heartbeat_interval_ms + 9000'
    -> integer arithmetic over the target's parameters (both forms are one expression)."""
    if isinstance(value, int):
        return value
    if not value.startswith("="):  # the plain form names a parameter: say which exist
        for name in _compiled(value)[1]:
            if name not in params:
                raise ValueError_(f"unknown target parameter {name!r} (known: {', '.join(sorted(params))})")
    return evaluate(value, params)


@lru_cache(maxsize=256)
def _pattern_block(offset: int) -> bytes:
    return bytes((offset + i) % 256 for i in range(256))


def pattern_bytes(size: int, offset: int = 0) -> bytes:
    """Byte i is (offset + i) mod 256: the test services' pattern."""
    block = _pattern_block(offset % 256)  # cached: repeat steps match thousands of small payloads
    reps, rest = divmod(size, 256)
    return block * reps + block[:rest]


#: the case run ``{unique: TEXT}`` payloads belong to: its id and a nonce (the runner's unique_payloads)
_UNIQUE_SCOPE: ContextVar[str] = ContextVar("unique_scope", default="no-case " + secrets.token_hex(6))
#: the end of a ``{unique: TEXT}`` payload: " [<case id> <12 hex digits>]"
UNIQUE_SUFFIX = re.compile(rb" \[[!-Z^-~]+ [0-9a-f]{12}\]\Z")


@contextmanager
def unique_payloads(case_id: str) -> Iterator[None]:
    """``{unique: TEXT}`` payloads inside belong to one run of the case ``case_id``: a fresh scope."""
    token = _UNIQUE_SCOPE.set(f"{re.sub(r'[^!-Z^-~]', '_', case_id)} {secrets.token_hex(6)}")
    try:
        yield
    finally:
        _UNIQUE_SCOPE.reset(token)


def build_payload(spec: Any) -> bytes:
    if spec is None:
        return b""
    if isinstance(spec, str):
        return spec.encode("utf-8")
    if isinstance(spec, bytes):  # a field an earlier expect saved (save: {token: resume_token})
        return spec
    if isinstance(spec, dict):
        if "hex" in spec:
            return bytes.fromhex(spec["hex"].replace(" ", ""))
        if "utf8" in spec:
            return spec["utf8"].encode("utf-8")
        if "unique" in spec:
            # a body no other case, run or capture holds, so that a capture shows which Content is which
            # (trace/rules/mtl_contents.py): the text, then the case run's scope
            return f"{spec['unique']} [{_UNIQUE_SCOPE.get()}]".encode("utf-8")
        if "size" in spec:
            return pattern_bytes(spec["size"], spec.get("offset", 0))
    raise ValueError_(f"a payload is a string, {{hex: ...}}, {{utf8: ...}}, {{unique: ...}}, {{size: N}} or saved "
                      f"bytes; got {spec!r}")


def payload_matches(spec: Any, data: bytes | None) -> tuple[bool, str]:
    if isinstance(spec, dict) and "len" in spec:
        n = 0 if data is None else len(data)
        return n == spec["len"], f"payload length {n}, expected {spec['len']}"
    if isinstance(spec, dict) and spec.get("any"):
        return True, ""
    expected = build_payload(spec)
    data = data or b""
    if data == expected:
        return True, ""
    return False, f"payload {short(data)} ({len(data)} bytes), expected {short(expected)} ({len(expected)} bytes)"


def short(data: bytes, limit: int = 24) -> str:
    """``data`` for a message: printable UTF-8 as a quoted string of up to 2 x ``limit`` characters
    (what a case wrote, such as a Content body naming its case, reads as written), anything else as
    hex of up to ``limit`` bytes."""
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError:
        text = ""
    if text and text.isprintable():
        return json.dumps(text[:2 * limit], ensure_ascii=False) + ("..." if len(text) > 2 * limit else "")
    return data[:limit].hex() + ("..." if len(data) > limit else "")
