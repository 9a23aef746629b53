"""Turn conformance/schemas/record.schema.json into Spark SQL checks.

The checks are derived from the schema file rather than written by hand so
the job and the schema cannot drift apart. Only the JSON Schema keywords the
record schema uses are understood; any other keyword raises, because ignoring
it would silently accept records the schema rejects.

Values arrive as Spark VARIANTs (``try_parse_json``), which keep the JSON
type of every field: the plain JSON reader would turn the number 1 into the
string "1" and so could not tell an ill-typed field from a good one.

Lines as the writers write them take a fast path: a string-typed parse, and
a proof of the line's shape and every field's JSON type, either by comparing
the line with the writers' layouts of that parse (``fast_layout_match``) or,
failing that, by one regular expression (``fast_line_pattern``); only the
lines neither proves are parsed into VARIANTs.

The checks are built as SQL text: composing them from Column objects costs
thousands of round trips to the JVM for the same expression.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F

from conformance.record_format import SCHEMA_PATH

_ANNOTATIONS = {"title", "description", "format", "$comment", "default", "examples", "$id", "$schema"}
_FIELD_KEYWORDS = {"type", "const", "enum", "minLength", "minimum", "pattern", "$ref", "oneOf"} | _ANNOTATIONS
_FIELD_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_INT_TYPES = "('BIGINT', 'INT', 'SMALLINT', 'TINYINT')"
_NUMBER = "({t} IN {ints} OR {t} LIKE 'DECIMAL%' OR {t} IN ('DOUBLE', 'FLOAT'))"


def default_schema_path() -> Path:
    return SCHEMA_PATH


def load_schema(path: Path | None = None) -> dict[str, Any]:
    schema = json.loads((path or default_schema_path()).read_text(encoding="utf-8"))
    unknown = set(schema) - _FIELD_KEYWORDS - {"required", "properties", "additionalProperties", "$defs"}
    if unknown or schema.get("type") != "object" or schema.get("additionalProperties", True) is not True:
        raise ValueError(f"record schema uses unsupported top-level keywords or shape: {sorted(unknown)}")
    for name in schema["properties"]:
        if not _FIELD_NAME.match(name):
            raise ValueError(f"field name {name!r} cannot be used in a JSON path")
    return schema


def sql_string(text: str) -> str:
    """A Spark SQL string literal (backslash escapes are on by default)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if ref is None:
        return schema
    if not ref.startswith("#/$defs/"):
        raise ValueError(f"unsupported $ref {ref!r}")
    return _resolve(root["$defs"][ref.removeprefix("#/$defs/")], root)


class _Field:
    """SQL for one field: its variant in the parsed struct and its helper columns."""

    def __init__(self, name: str, fields: str) -> None:
        self.variant = f"`{fields}`.`{name}`"
        self.type, self.text, self.number = (f"`_{k}_{name}`" for k in "tsn")
        self.shown = f"substring(to_json({self.variant}), 1, 80)"

    def type_is(self, json_type: str) -> str:
        t = self.type
        number = _NUMBER.format(t=t, ints=_INT_TYPES)
        match json_type:
            case "string":
                return f"{t} = 'STRING'"
            case "number":
                return number
            case "integer":
                # JSON Schema counts 1.0 as an integer.
                return f"({t} IN {_INT_TYPES} OR ({number} AND {self.number} = floor({self.number})))"
            case "null":
                return f"{t} = 'VOID'"
            case "boolean":
                return f"{t} = 'BOOLEAN'"
            case "object":
                return f"{t} LIKE 'OBJECT%'"
            case "array":
                return f"{t} LIKE 'ARRAY%'"
        raise ValueError(f"unsupported JSON type {json_type!r}")

    def equals(self, value: Any) -> str:
        if value is None:
            return self.type_is("null")
        if isinstance(value, bool):
            raise ValueError("boolean const/enum values are not supported")
        if isinstance(value, str):
            return f"({self.type} = 'STRING' AND {self.text} = {sql_string(value)})"
        return f"({self.type_is('number')} AND {self.number} = {float(value)!r})"


def _json_types(schema: dict[str, Any], root: dict[str, Any]) -> set[str]:
    """The JSON types a field may take, to know which typed views it needs."""
    schema = _resolve(schema, root)
    types: set[str] = set()
    if "type" in schema:
        types |= set(schema["type"] if isinstance(schema["type"], list) else [schema["type"]])
    for value in [*schema.get("enum", []), *([schema["const"]] if "const" in schema else [])]:
        types.add("string" if isinstance(value, str) else "null" if value is None else "number")
    for option in schema.get("oneOf", []):
        types |= _json_types(option, root)
    return types


def _violations(schema: dict[str, Any], root: dict[str, Any], f: _Field) -> list[tuple[str, str]]:
    """(SQL condition true when violated, reason) pairs, in the order they are reported."""
    schema = _resolve(schema, root)
    unknown = set(schema) - _FIELD_KEYWORDS
    if unknown:
        raise ValueError(f"unsupported schema keywords {sorted(unknown)}")
    found: list[tuple[str, str]] = []
    if "oneOf" in schema:
        holds = [_all_hold(_violations(option, root, f)) for option in schema["oneOf"]]
        matched = " + ".join(f"(CASE WHEN {h} THEN 1 ELSE 0 END)" for h in holds)
        found.append((f"({matched}) != 1", "matches none (or several) of its allowed forms"))
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        found.append((f"NOT ({' OR '.join(f.type_is(t) for t in types)})", f"expected {' or '.join(types)}"))
    if "const" in schema:
        found.append((f"NOT {f.equals(schema['const'])}", f"must be {json.dumps(schema['const'])}"))
    if "enum" in schema:
        ok = " OR ".join(f.equals(v) for v in schema["enum"])
        found.append((f"NOT ({ok})", "must be one of " + ", ".join(map(str, schema["enum"]))))
    if "minLength" in schema:
        n = int(schema["minLength"])
        found.append((f"({f.type} = 'STRING' AND char_length({f.text}) < {n})", f"shorter than {n}"))
    if "minimum" in schema:
        m = float(schema["minimum"])
        found.append((f"({f.type_is('number')} AND {f.number} < {m!r})", f"less than {schema['minimum']}"))
    if "pattern" in schema:
        found.append(
            (
                f"({f.type} = 'STRING' AND NOT {f.text} RLIKE {sql_string(schema['pattern'])})",
                "does not match the required pattern",
            )
        )
    return found


def _all_hold(violations: list[tuple[str, str]]) -> str:
    return "(" + " AND ".join(f"NOT coalesce({v}, true)" for v, _ in violations) + ")" if violations else "true"


# Spark's JSON reader accepts single quotes and NaN by default; JSON does not.
JSON_OPTIONS = {"allowSingleQuotes": "false", "allowNonNumericNumbers": "false"}


def fields_struct(schema: dict[str, Any]) -> str:
    """DDL for from_json: every declared field as a VARIANT.

    One from_json call (with JSON_OPTIONS) splits a line into its fields; a JSON null arrives as
    a VARIANT null (type VOID) and a missing field as SQL NULL, so presence
    and type are both still known. Invalid JSON and non-objects arrive with
    every field NULL.
    """
    return "struct<" + ", ".join(f"`{name}`: variant" for name in schema["properties"]) + ">"


def texts_struct(schema: dict[str, Any]) -> str:
    """DDL for from_json: every declared field as a string (a non-string value arrives as its JSON text)."""
    return "struct<" + ", ".join(f"`{name}`: string" for name in schema["properties"]) + ">"


# A JSON value of one type, as the whole-line pattern of the fast path matches it. Possessive
# quantifiers: the pattern never backtracks into a value, so it stays linear in the line.
_JSON_VALUE = {
    "string": r'"(?:[^"\\\x00-\x1f]++|\\(?:["\\/bfnrt]|u[0-9A-Fa-f]{4}))*+"',
    "integer": r"-?+(?:0|[1-9][0-9]*+)",
    "number": r"-?+(?:0|[1-9][0-9]*+)(?:\.[0-9]++)?+(?:[eE][+-]?+[0-9]++)?+",
    "null": "null",
}
_WS = "[ \t]*+"


def _fast_kind(schema: dict[str, Any], root: dict[str, Any]) -> str | None:
    """A field's one JSON type besides null in the fast path (string, integer or number); None
    when its types are ambiguous there (a string-typed parse cannot tell a string from a number)."""
    types = _json_types(schema, root)
    if "integer" in types and "number" in types:
        types = types - {"integer"}
    kinds = types - {"null"}
    if len(kinds) != 1 or not kinds <= {"string", "integer", "number"}:
        return None
    return next(iter(kinds))


def _fast_type(schema: dict[str, Any], root: dict[str, Any]) -> tuple[str, str] | None:
    """A field's (value pattern, SQL for its JSON type) in the fast path; None when its types are
    ambiguous there."""
    kind = _fast_kind(schema, root)
    if kind is None:
        return None
    spark_type = {"string": "STRING", "integer": "BIGINT", "number": "DOUBLE"}[kind]
    nullable = "null" in _json_types(schema, root)
    pattern = "|".join(_JSON_VALUE[t] for t in [kind, *(["null"] if nullable else [])])
    return f"(?:{pattern})", spark_type


class _FastField(_Field):
    """A field in the fast path: its JSON type is known from the line's pattern, its text and
    number come from the string-typed parse."""

    def __init__(self, name: str, spark_type: str, nullable: bool) -> None:
        known = f"'{spark_type}'"
        self.type = f"(CASE WHEN `_s_{name}` IS NULL THEN 'VOID' ELSE {known} END)" if nullable else known
        self.text = f"`_s_{name}`"
        self.number = f"try_cast(`_s_{name}` AS DOUBLE)"


def fast_line_pattern(schema: dict[str, Any]) -> str | None:
    """A regular expression a line matches only if it is one JSON object holding exactly the
    schema's fields, in schema order or sorted (as json.dumps(sort_keys=True) writes them), each
    of a JSON type its field allows. None when some field's types cannot be told apart this way."""
    values = {}
    for name, field_schema in schema["properties"].items():
        fast = _fast_type(field_schema, schema)
        if fast is None:
            return None
        values[name] = fast[0]
    orders = [list(schema["properties"]), sorted(schema["properties"])]
    members = [
        f"{_WS},{_WS}".join(f'"{name}"{_WS}:{_WS}{values[name]}' for name in order)
        for order in ([orders[0]] if orders[0] == orders[1] else orders)
    ]
    return f"^{_WS}\\{{{_WS}(?:{'|'.join(f'(?:{m})' for m in members)}){_WS}\\}}{_WS}\\z"


# How the writers lay a record out: compact in schema order (the benchmark's generator, and
# to_json of a Parquet row written in schema order), and json.dumps(sort_keys=True), as
# conformance.records writes. A line in any other layout is left to the pattern.
_LAYOUTS = ((False, ",", ":"), (True, ", ", ": "))


def _layout(schema: dict[str, Any], order: list[str], comma: str, colon: str) -> str:
    """SQL: the record of the ``_s_`` texts written in ``order`` with these separators, each string
    text quoted as it is (NULL where a non-nullable field's text is NULL)."""
    parts = []
    for i, name in enumerate(order):
        field_schema = schema["properties"][name]
        text = f"`_s_{name}`"
        value = f"concat('\"', {text}, '\"')" if _fast_kind(field_schema, schema) == "string" else text
        if "null" in _json_types(field_schema, schema):
            value = f"coalesce({value}, 'null')"
        parts += [sql_string(("{" if i == 0 else comma) + json.dumps(name) + colon), value]
    return f"concat({', '.join(parts)}, '}}')"


def fast_layout_match(schema: dict[str, Any], raw: str) -> str | None:
    """SQL true when the line is, byte for byte, a writer's layout of its own string-typed parse
    (the ``_s_`` texts), each number text a JSON number of its field's kind. None when some
    field's types cannot be told apart.

    This proves what ``fast_line_pattern`` proves, without a pattern over the whole line. A line
    without a backslash holds no escapes, so its strings' texts hold no quote, backslash or
    control character (the parser refuses raw ones) and the layout is the record's exact JSON:
    equal to it, the line is one object with exactly the schema's fields, no duplicate, nothing
    after it, each string field quoted and each number field a bare number. A string field that
    held a number or a literal, or a number field that held a string, would differ from the
    layout by its quotes; a number field holding true, false, an object or an array fails its
    number pattern. Lines it does not prove (escapes, other layouts, numbers Spark re-spells,
    such as 1e-05) go to the pattern.
    """
    fields = schema["properties"]
    kinds = {name: _fast_kind(field_schema, schema) for name, field_schema in fields.items()}
    if None in kinds.values():
        return None
    numbers = [
        f"(`_s_{name}` IS NULL OR `_s_{name}` RLIKE {sql_string(f'^(?:{_JSON_VALUE[kind]})' + chr(92) + 'z')})"
        for name, kind in kinds.items() if kind != "string"
    ]
    layouts = [_layout(schema, sorted(fields) if by_name else list(fields), comma, colon)
               for by_name, comma, colon in _LAYOUTS]
    equal = " OR ".join(f"`{raw}` = {layout}" for layout in layouts)
    return " AND ".join([f"NOT contains(`{raw}`, '\\\\')", f"coalesce({equal}, false)", *numbers])


def fast_valid(schema: dict[str, Any]) -> str | None:
    """SQL true for a line that matched fast_line_pattern (column ``_shape``) and whose fields pass
    every check; the rest go through the full checks. Needs the ``_s_`` text columns."""
    holds = []
    for name, field_schema in schema["properties"].items():
        fast = _fast_type(field_schema, schema)
        if fast is None:
            return None
        f = _FastField(name, fast[1], "null" in _json_types(field_schema, schema))
        holds.append(_all_hold(_violations(field_schema, schema, f)))
    return " AND ".join(["`_shape`", *holds])


def fast_number(name: str, kind: str) -> Column:
    return F.expr(f"try_cast(`_s_{name}` AS {kind})")


def _texts(schema: dict[str, Any], raw: str) -> list[list[Column]]:
    """Every field's text, from a parse of the line with string-typed fields (``_s_`` columns).

    The checks read a field's text only where its JSON type is string, and there this and the
    VARIANT parse agree. Casting each VARIANT to string instead costs several times more.
    """
    texts = F.from_json(F.col(raw), texts_struct(schema), JSON_OPTIONS).alias("_texts")
    return [[texts], [F.col("_texts")[name].alias(f"_s_{name}") for name in schema["properties"]]]


def fast_columns(schema: dict[str, Any], raw: str) -> list[list[Column]]:
    """Columns to add, one select per inner list, for the fast path: the ``_s_`` texts and
    ``_fast``, true for a line written the usual way (exactly the schema's fields, in schema or
    sorted order) whose values pass every check.

    The line's shape and every field's JSON type are proven by comparing it with the writers'
    layouts of its string-typed parse (a copy and a compare), else by one regular expression over
    the line (several times the cost); the value checks run over the parse. Nothing here parses
    into VARIANTs: the lines this rejects (``_fast`` false) go through ``full_columns`` in a frame
    of their own, so the full checks are not compiled into the code that reads every line.
    """
    (texts,), strings = _texts(schema, raw)
    pattern, layout, fast = fast_line_pattern(schema), fast_layout_match(schema, raw), fast_valid(schema)
    if not (pattern and layout and fast):
        return [[texts], strings, [F.lit(False).alias("_fast")]]
    shape = F.expr(f"CASE WHEN {layout} THEN true ELSE `{raw}` RLIKE {sql_string(pattern)} END").alias("_shape")
    # never NULL: a line is either in the fast frame or in the other one
    return [[texts], strings, [shape], [F.expr(f"coalesce({fast}, false)").alias("_fast")]]


def full_columns(schema: dict[str, Any], fields: str, raw: str) -> list[list[Column]]:
    """Columns to add, one select per inner list, before ``record_error`` can run: the ``_s_``
    texts, the line parsed into VARIANTs (``fields``) and each field's JSON type and number.

    Each field's JSON type, text and number are computed once in their own
    projection, and whether the record is valid in the next: inlined into
    the checks they would be repeated in every branch.
    """
    parsed = F.expr(
        f"from_json(`{raw}`, {sql_string(fields_struct(schema))}, "
        f"map({', '.join(f'{sql_string(k)}, {sql_string(v)}' for k, v in JSON_OPTIONS.items())}))"
    ).alias(fields)
    # JSON parsers stop after the first value, so '{...} junk' and two records
    # run together would pass; wrapped in brackets they are not one array element.
    views: list[Column] = [F.expr(f"coalesce(json_array_length('[' || `{raw}` || ']') = 1, false)").alias("_single")]
    for name, field_schema in schema["properties"].items():
        f = _Field(name, fields)
        types = _json_types(field_schema, schema)
        views.append(F.expr(f"schema_of_variant({f.variant})").alias(f"_t_{name}"))
        if types & {"number", "integer"}:
            views.append(F.expr(f"try_variant_get({f.variant}, '$', 'double')").alias(f"_n_{name}"))
    required = set(schema.get("required", []))
    holds = []
    for name, field_schema in schema["properties"].items():
        f = _Field(name, fields)
        present = f"{f.variant} IS NOT NULL"
        rules = _all_hold(_violations(field_schema, schema, f))
        holds.append(f"({present} AND {rules})" if name in required else f"(NOT ({present}) OR {rules})")
    valid = F.expr(" AND ".join(["`_single`", *holds])).alias("_valid")
    (texts,), strings = _texts(schema, raw)
    return [[texts, parsed], [*strings, *views], [valid]]


def record_error(schema: dict[str, Any], fields: str, raw: str) -> Column:
    """NULL for a valid record, else every reason it is invalid joined by '; '.

    Needs the columns of ``field_columns`` in the frame. The reasons are
    only worked out for invalid records, which are rare.
    """
    required = set(schema.get("required", []))
    errors = []
    for name, field_schema in schema["properties"].items():
        f = _Field(name, fields)
        branches = []
        for violated, reason in _violations(field_schema, schema, f):
            template = sql_string(f"field {name!r} %s: " + reason.replace("%", "%%"))
            branches.append(f"WHEN coalesce({violated}, true) THEN format_string({template}, {f.shown})")
        missing = sql_string(f"missing required field {name!r}") if name in required else "NULL"
        errors.append(f"CASE WHEN {f.variant} IS NULL THEN {missing} {' '.join(branches)} END")
    parsed = f"try_parse_json(`{raw}`)"
    return F.expr(
        f"CASE WHEN `_valid` THEN NULL "
        f"WHEN NOT `_single` OR {parsed} IS NULL THEN 'not valid JSON' "
        f"WHEN schema_of_variant({parsed}) NOT LIKE 'OBJECT%' "
        f"THEN format_string('not a JSON object (got %s)', lower(schema_of_variant({parsed}))) "
        f"ELSE nullif(concat_ws('; ', {', '.join(errors)}), '') END"
    )
