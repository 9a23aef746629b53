"""MTL control-flow messages (11/MTL "Control Flow"): JSON commands over REQ -> ROUTER.

    request:  frame 0 command name (e.g. "Connection.Open"), frame 1 JSON body
    reply:    frame 0 status code (three digits, 2xx-5xx), frame 1 JSON body

On the wire a REQ socket puts an empty delimiter frame before these, and a
ROUTER hands the server the routing id before that: :func:`split_envelope`
separates the envelope (everything up to and including the first empty
frame) from the request.

Readings pinned here (docs/profiles/mtl.md): command names compare
case-insensitively (:func:`command_key`); bodies are compared as parsed JSON,
never as bytes.  A request is *ill-formed* (``CodecError``: ``no-delimiter``,
``frame-count``, ``bad-name``, ``bad-json``) when its frames cannot be read as
a command name and a JSON text; the server drops those silently.  Anything
else is *well-formed*, even a JSON body that is not an object, and gets a
reply.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from reference_impl.common.errors import CodecError

OPEN = "connection.open"
AUTHORIZE = "connection.authorize"
PROFILE = "connection.profile"
READER = "connection.reader"
WRITER = "connection.writer"

#: The spec's status texts (its 501 body spells "Not implemented").
STATUS_TEXT = {
    200: "OK", 201: "Ready", 202: "Data Lease", 400: "Bad Request", 401: "Unauthorized", 402: "Challenged",
    403: "Forbidden", 501: "Not implemented",
}


@dataclass(frozen=True)
class Request:
    command: str
    body: Any

    @property
    def key(self) -> str:
        return command_key(self.command)


@dataclass(frozen=True)
class Reply:
    code: int
    body: Any

    @property
    def status(self) -> str | None:
        return self.body.get("status") if isinstance(self.body, dict) else None


def command_key(name: str) -> str:
    """Command names are case-insensitive: compare by this key."""
    return name.casefold()


def split_envelope(frames: list[bytes]) -> tuple[list[bytes], list[bytes]]:
    """(envelope incl. the empty delimiter, request frames) of a message a ROUTER received."""
    for i, frame in enumerate(frames):
        if frame == b"":
            return list(frames[:i + 1]), list(frames[i + 1:])
    raise CodecError("no-delimiter", "no empty delimiter frame: not a REQ request")


def encode_json(body: Any) -> bytes:
    """Compact JSON; NaN and infinities have no JSON form (``bad-json``)."""
    try:
        return json.dumps(body, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")
    except ValueError as exc:
        raise CodecError("bad-json", f"no JSON form: {exc}") from None


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"the number {text[:24]} is out of the range of a double")
    return value


def decode_json(data: bytes) -> Any:
    """A JSON text (RFC 8259: UTF-8, no NaN/Infinity) parsed.

    A number past the range of a double (``1e400``) is refused, as RFC 8259
    section 9 lets a parser do: read as infinity it could not be written back
    as JSON (found by the property test in tests/mtl/test_mtl_properties.py).
    """
    try:
        return json.loads(bytes(data).decode("utf-8"), parse_constant=_no_constants, parse_float=_finite_float)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise CodecError("bad-json", f"not a JSON text: {exc}") from None


def encode_request(command: str, body: Any) -> list[bytes]:
    return [command.encode("utf-8"), encode_json(body)]


def decode_request(frames: list[bytes]) -> Request:
    if len(frames) != 2:
        raise CodecError("frame-count", f"a control request has 2 frames (name, body), not {len(frames)}")
    try:
        name = bytes(frames[0]).decode("utf-8")
    except UnicodeDecodeError:
        raise CodecError("bad-name", "the command name is not UTF-8 text") from None
    return Request(name, decode_json(frames[1]))


def encode_reply(code: int, body: Any | None = None) -> list[bytes]:
    if isinstance(code, bool) or not isinstance(code, int) or not 200 <= code <= 599:
        raise CodecError("bad-code", f"a status code is three digits 2xx-5xx, not {code!r}")
    if body is None:
        body = {"status": STATUS_TEXT.get(code, "Error")}
    return [b"%d" % code, encode_json(body)]


def decode_reply(frames: list[bytes]) -> Reply:
    if len(frames) != 2:
        raise CodecError("frame-count", f"a control reply has 2 frames (status, body), not {len(frames)}")
    code = bytes(frames[0])
    if len(code) != 3 or not all(0x30 <= b <= 0x39 for b in code) or not 0x32 <= code[0] <= 0x35:
        raise CodecError("bad-code", f"a status code is three digits 2xx-5xx, not {code[:16]!r}")
    return Reply(int(code), decode_json(frames[1]))


def error_reply(code: int, **extra: Any) -> Reply:
    return Reply(code, {"status": STATUS_TEXT.get(code, "Error"), **extra})
