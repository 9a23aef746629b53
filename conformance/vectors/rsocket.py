"""RSocket vector adapter: plain-JSON frame objects <-> reference codec.

JSON form (vectors/schema/rsocket-message.schema.json): ``type`` is the frame
name of Protocol.md (``SETUP`` ... ``EXT``); the other keys are the dataclass
fields of reference_impl/rsocket/codec.py in camelCase.  Byte fields are
lower-case hex, ``metadata`` is null when M is clear; 63-bit positions are
decimal strings (beyond JavaScript's safe integers); flags are booleans.

Context: ``framing`` is ``websocket`` (the wire is one frame, no prefix: a
WebSocket message) or ``tcp`` (the wire is one frame with its 24-bit length
prefix); ``maxFrame`` bounds the TCP decoder.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from reference_impl.rsocket import codec

_NAMES = {cls: codec.FRAME_NAMES[number] for cls, number in codec.FRAME_TYPES.items()}
_BY_NAME = {name: cls for cls, name in _NAMES.items()}
_BYTES = {"metadata", "data", "resume_token", "token", "payload"}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word.title() for word in rest)


def frame_to_json(frame: codec.Frame) -> dict[str, Any]:
    obj: dict[str, Any] = {"type": _NAMES[type(frame)]}
    for f in fields(frame):
        value = getattr(frame, f.name)
        if f.name in _BYTES:
            value = None if value is None else value.hex()
        elif "position" in f.name:
            value = str(value)
        obj[_camel(f.name)] = value
    return obj


def frame_from_json(obj: dict[str, Any]) -> codec.Frame:
    cls = _BY_NAME[obj["type"]]
    kwargs = {}
    for f in fields(cls):
        value = obj[_camel(f.name)]
        if f.name in _BYTES:
            value = None if value is None else bytes.fromhex(value)
        elif "position" in f.name:
            value = int(value)
        kwargs[f.name] = value
    return cls(**kwargs)


def decode_frame(context: dict[str, Any], wire: bytes) -> codec.Frame:
    if context.get("framing", "websocket") == "tcp":
        return codec.decode_tcp_exact(wire, context.get("maxFrame", codec.MAX_FRAME))
    return codec.decode_websocket(wire)


def decode(context: dict[str, Any], wire: bytes) -> dict[str, Any]:
    return frame_to_json(decode_frame(context, wire))


def encode(context: dict[str, Any], message: dict[str, Any]) -> bytes:
    frame = frame_from_json(message)
    if context.get("framing", "websocket") == "tcp":
        return codec.encode_tcp(frame)
    return codec.encode_frame(frame)
