"""The text grammars of Micromessage2 and the extension registry.

Extension list (handshake):  ``name[:key=value,key=value]`` joined by ``;``.
  We emit no trailing ``;`` and accept one.  ``name`` and ``key`` are FIELD
  (``[a-z0-9-]+``, 7-bit lower case); values are percent-encoded.  Unknown
  properties are kept and ignored by whoever reads them.
MESSAGE properties:  ``key:value;`` pairs; key FIELD, value any printable ASCII
  but ``;`` (a FILTER_VALUE, see ``parse_filter_value``).  We emit the final
  ``;`` and accept its absence.
COMMAND payload:  ``name;key=value,key=value``; name and key FIELD, values
  percent-encoded; we emit ``name`` alone when there are no arguments.

Raw characters allowed in a percent-encoded value: RFC 3986 unreserved
characters and ``!$&'()*+/?@``; ``,;=:`` and everything else must be encoded.
We encode everything but the unreserved characters.

Stable CodecError codes:
  bad-name            extension or command name empty or not FIELD
  bad-property        a property/argument that is not ``key=value`` (``key:value``
                      for MESSAGE properties) or whose key is not FIELD
  bad-value           a value with a raw character that must be encoded, a broken
                      ``%XX`` escape, a non-UTF-8 result, or a malformed FILTER_VALUE
  duplicate-extension an extension named twice in one list
  duplicate-property  a key given twice in one property set
  bad-max-count       batch-ack ``max-count`` not an integer in 1..65535
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Iterable, Mapping
from urllib.parse import quote, unquote_to_bytes

from reference_impl.common.errors import CodecError

REGISTERED = frozenset({"json", "dotnet", "ack", "batch-ack", "pubsub"})
DEFAULT_MAX_COUNT = 10

_FIELD = re.compile(r"[a-z0-9-]+")
_ENCODED_VALUE = re.compile(r"(?:[A-Za-z0-9\-._~!$&'()*+/?@]|%[0-9A-Fa-f]{2})*")
_PROPERTY_VALUE = re.compile(r"[\x21-\x3a\x3c-\x7e]+")  # printable ASCII but ';'
_DIGITS = re.compile(r"[0-9]+")
_NUMBER = re.compile(r"-?[0-9]+")
_DATE = re.compile(r"[0-9]+(?:\.[0-9]+)?")


def is_field(text: str) -> bool:
    return _FIELD.fullmatch(text) is not None


def is_vendor(name: str) -> bool:
    """Vendor extensions are named ``x-...``; official ones come with a minor version."""
    return name.startswith("x-") and is_field(name)


@dataclass(frozen=True)
class Extension:
    name: str
    properties: Mapping[str, str] = field(default_factory=dict)


def percent_decode(text: str) -> str:
    if _ENCODED_VALUE.fullmatch(text) is None:
        raise CodecError("bad-value", f"{text!r} is not a percent-encoded value")
    try:
        return unquote_to_bytes(text).decode("utf-8")
    except UnicodeDecodeError:
        raise CodecError("bad-value", f"{text!r} does not decode to UTF-8") from None


def percent_encode(text: str) -> str:
    return quote(text, safe="")


def _name(text: str) -> str:
    if not is_field(text):
        raise CodecError("bad-name", f"{text!r} is not a FIELD ([a-z0-9-]+)")
    return text


def _key_value_pairs(text: str, pair_sep: str, kv_sep: str) -> dict[str, str]:
    """``key<kv_sep>value`` items joined by ``pair_sep``, values percent-encoded."""
    pairs: dict[str, str] = {}
    for item in text.split(pair_sep):
        key, sep, value = item.partition(kv_sep)
        if not sep or not is_field(key):
            raise CodecError("bad-property", f"{item!r} is not FIELD{kv_sep}value")
        if key in pairs:
            raise CodecError("duplicate-property", f"{key!r} given twice")
        pairs[key] = percent_decode(value)
    return pairs


def _format_pairs(pairs: Mapping[str, str], pair_sep: str, kv_sep: str) -> str:
    for key in pairs:
        if not is_field(key):
            raise CodecError("bad-property", f"key {key!r} is not a FIELD")
    return pair_sep.join(f"{key}{kv_sep}{percent_encode(value)}" for key, value in pairs.items())


# --- extension lists ----------------------------------------------------------------


def parse_extension(text: str) -> Extension:
    name, colon, props = text.partition(":")
    _name(name)
    if not colon:
        return Extension(name)
    if not props:
        raise CodecError("bad-property", f"{text!r}: ':' must be followed by key=value")
    return Extension(name, _key_value_pairs(props, ",", "="))


def parse_extension_list(text: str) -> list[Extension]:
    if text == "":
        return []
    items = text.split(";")
    if items[-1] == "" and len(items) > 1:
        items.pop()  # one trailing ';' is accepted
    return _unique([parse_extension(item) for item in items])


def _unique(extensions: list[Extension]) -> list[Extension]:
    seen: set[str] = set()
    for ext in extensions:
        if ext.name in seen:
            raise CodecError("duplicate-extension", f"{ext.name!r} listed twice")
        seen.add(ext.name)
    return extensions


def format_extension_list(extensions: Iterable[Extension]) -> str:
    parts = []
    for ext in extensions:
        _name(ext.name)
        props = _format_pairs(ext.properties, ",", "=")
        parts.append(f"{ext.name}:{props}" if props else ext.name)
    return ";".join(parts)


def as_extension_list(spec: str | Iterable[str | Extension]) -> list[Extension]:
    """A whole list (``"json;ack"``) or items (``["json", "batch-ack:max-count=3"]``) as Extensions."""
    if isinstance(spec, str):
        return parse_extension_list(spec)
    return _unique([item if isinstance(item, Extension) else parse_extension(item) for item in spec])


def batch_ack_window(ext: Extension) -> int:
    raw = ext.properties.get("max-count")
    if raw is None:
        return DEFAULT_MAX_COUNT
    if _DIGITS.fullmatch(raw) is None or not 1 <= int(raw) <= 65535:
        raise CodecError("bad-max-count", f"max-count {raw!r} is not an integer in 1..65535")
    return int(raw)


# --- MESSAGE properties -------------------------------------------------------------


def parse_properties(text: str) -> dict[str, str]:
    """``key:value;`` pairs; values are returned as sent (FILTER_VALUE text, or plain as in the spec's example)."""
    if text == "":
        return {}
    body = text[:-1] if text.endswith(";") else text
    pairs: dict[str, str] = {}
    for item in body.split(";"):
        key, sep, value = item.partition(":")
        if not sep or not is_field(key):
            raise CodecError("bad-property", f"{item!r} is not FIELD:value")
        if _PROPERTY_VALUE.fullmatch(value) is None:
            raise CodecError("bad-value", f"{key}: value {value!r} is empty or not printable ASCII without ';'")
        if key in pairs:
            raise CodecError("duplicate-property", f"{key!r} given twice")
        pairs[key] = value
    return pairs


def format_properties(pairs: Mapping[str, str]) -> str:
    for key, value in pairs.items():
        if not is_field(key):
            raise CodecError("bad-property", f"key {key!r} is not a FIELD")
        if _PROPERTY_VALUE.fullmatch(value) is None:
            raise CodecError("bad-value", f"{key}: value {value!r} is empty or not printable ASCII without ';'")
    return "".join(f"{key}:{value};" for key, value in pairs.items())


FilterValue = tuple[str, int | float | str]  # ("number" | "date" | "text", value)


def parse_filter_value(text: str) -> FilterValue:
    """N<long>, D<epoch seconds[.fraction]>, T<percent-encoded text>."""
    prefix, rest = text[:1], text[1:]
    if prefix == "N" and _NUMBER.fullmatch(rest):
        return "number", int(rest)
    if prefix == "D" and _DATE.fullmatch(rest):
        return "date", float(rest)
    if prefix == "T":
        return "text", percent_decode(rest)
    raise CodecError("bad-value", f"{text!r} is not N<number>, D<epoch> or T<text>")


def format_filter_value(kind: str, value: int | float | str) -> str:
    if kind == "number" and isinstance(value, int):
        return f"N{value}"
    if kind == "date" and isinstance(value, (int, float)) and value >= 0 and math.isfinite(value):
        # Shortest repr that reads back exactly, written without an exponent.
        return "D" + format(Decimal(repr(float(value))), "f")
    if kind == "text" and isinstance(value, str):
        return "T" + percent_encode(value)
    raise CodecError("bad-value", f"cannot write {value!r} as a {kind} filter value")


# --- COMMAND payload ----------------------------------------------------------------


@dataclass(frozen=True)
class Command:
    name: str
    arguments: Mapping[str, str] = field(default_factory=dict)


def parse_command(text: str) -> Command:
    name, _, args = text.partition(";")
    _name(name)
    return Command(name, _key_value_pairs(args, ",", "=") if args else {})


def format_command(command: Command) -> str:
    _name(command.name)
    args = _format_pairs(command.arguments, ",", "=")
    return f"{command.name};{args}" if args else command.name
