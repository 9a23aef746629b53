"""Values inside steps: payload specs, millisecond expressions, repeat variables."""

from __future__ import annotations

import ast
import operator
from functools import lru_cache
from typing import Any

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.Mod: operator.mod, ast.FloorDiv: operator.floordiv}


class ValueError_(Exception):
    """A value in a step that cannot be evaluated."""


@lru_cache(maxsize=1024)
def _parse(expr: str) -> ast.Expression:
    return ast.parse(expr.lstrip("= "), mode="eval")  # cached: a repeat evaluates the same text thousands of times


def evaluate(expr: str, names: dict[str, int]) -> int:
    """Integer arithmetic over names: '= i % 65535 + 1'.  Nothing else is allowed."""
    try:
        tree = _parse(expr)
    except SyntaxError as exc:
        raise ValueError_(f"not an expression: {expr!r}") from exc

    def walk(node: ast.AST) -> int:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in names:
                raise ValueError_(f"unknown name {node.id!r} in {expr!r}")
            return names[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](walk(node.left), walk(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -walk(node.operand)
        raise ValueError_(f"only integer arithmetic is allowed: {expr!r}")

    return walk(tree)


def substitute(value: Any, names: dict[str, int]) -> Any:
    """Replace '= expr' strings (in nested dicts/lists) by their value."""
    if isinstance(value, str) and value.startswith("="):
        return evaluate(value, names)
    if isinstance(value, dict):
        return {k: substitute(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, names) for v in value]
    return value


def millis(value: int | str, params: dict[str, int]) -> int:
    """'heartbeat_timeout_ms + 2000' -> that parameter plus 2000."""
    if isinstance(value, int):
        return value
    name, _, extra = value.partition("+")
    name = name.strip()
    if name not in params:
        raise ValueError_(f"unknown target parameter {name!r} (known: {', '.join(sorted(params))})")
    return params[name] + (int(extra) if extra.strip() else 0)


@lru_cache(maxsize=256)
def _pattern_block(offset: int) -> bytes:
    return bytes((offset + i) % 256 for i in range(256))


def pattern_bytes(size: int, offset: int = 0) -> bytes:
    """Byte i is (offset + i) mod 256: the test services' pattern."""
    block = _pattern_block(offset % 256)  # cached: repeat steps match thousands of small payloads
    reps, rest = divmod(size, 256)
    return block * reps + block[:rest]


def build_payload(spec: Any) -> bytes:
    if spec is None:
        return b""
    if isinstance(spec, str):
        return spec.encode("utf-8")
    if isinstance(spec, dict):
        if "hex" in spec:
            return bytes.fromhex(spec["hex"].replace(" ", ""))
        if "utf8" in spec:
            return spec["utf8"].encode("utf-8")
        if "size" in spec:
            return pattern_bytes(spec["size"], spec.get("offset", 0))
    raise ValueError_(f"a payload is a string, {{hex: ...}}, {{utf8: ...}} or {{size: N}}; got {spec!r}")


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
    return data[:limit].hex() + ("..." if len(data) > limit else "")
