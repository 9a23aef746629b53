"""Vector adapter for Micromessage2: plain-JSON ``message`` objects <-> the reference codec.

Contexts (``form``), documented with the shapes in
vectors/schema/micromessage2-message.schema.json:
  handshake       one handshake message
  frame           exactly one frame
  stream          frames back to back; ``start: "handshake"`` reads the first item
                  in handshake position (a handshake, or the ERROR sent instead)
  fragments       the frames of one split payload, joined (decode) or split with
                  ``fragment_size`` (encode)
  extension-list  the handshake extension-list text
  properties      MESSAGE properties text
  command         COMMAND payload text
  filter-value    one FILTER_VALUE
Frame-carrying forms take an optional ``max_frame``.
"""

from __future__ import annotations

from typing import Any

from reference_impl.common.errors import CodecError
from reference_impl.micromessage2 import codec, extensions
from reference_impl.micromessage2.codec import (
    CommandFrame, ErrorFrame, ExtensionFrame, Frame, Handshake, MessageFrame,
)


def _frame_to_json(frame: Frame | Handshake) -> dict[str, Any]:
    if isinstance(frame, Handshake):
        return {"kind": "handshake", "major": frame.major, "minor": frame.minor, "flags": frame.flags,
                "identity": frame.identity, "required": frame.required, "optional": frame.optional}
    common = {"continued": frame.continued, "payload": frame.payload.hex()}
    if isinstance(frame, MessageFrame):
        return {"kind": "message", "seq": frame.seq, "destination": frame.destination,
                "properties": frame.properties, **common}
    if isinstance(frame, ExtensionFrame):
        return {"kind": "extension", "id": frame.ext_id, **common}
    if isinstance(frame, CommandFrame):
        return {"kind": "command", **common}
    return {"kind": "error", **common}


def _frame_from_json(m: dict[str, Any]) -> Frame:
    payload = bytes.fromhex(m["payload"])
    continued = m.get("continued", False)
    kind = m["kind"]
    if kind == "message":
        return MessageFrame(m["seq"], m["destination"], m["properties"], payload, continued)
    if kind == "extension":
        return ExtensionFrame(m["id"], payload, continued)
    if kind == "command":
        return CommandFrame(payload, continued)
    return ErrorFrame(payload, continued)


def _handshake_from_json(m: dict[str, Any]) -> Handshake:
    return Handshake(m["major"], m["minor"], m["identity"], m["required"], m["optional"], m["flags"])


def _text(wire: bytes) -> str:
    if not wire.isascii():
        raise CodecError("non-ascii", "the text forms are 7-bit ASCII")
    return wire.decode("ascii")


def _decode_stream(context: dict[str, Any], wire: bytes) -> list[Frame | Handshake]:
    decoder = codec.StreamDecoder(context.get("max_frame", codec.DEFAULT_MAX_FRAME))
    decoder.feed(wire)
    items: list[Frame | Handshake] = []
    if context.get("start") == "handshake":
        first = decoder.next_handshake()
        if first is None:
            raise CodecError("truncated", "the stream ends inside the handshake")
        items.append(first)
    while (frame := decoder.next_frame()) is not None:
        items.append(frame)
    if decoder.buffered:
        raise CodecError("truncated", f"{decoder.buffered} bytes at the end do not complete a frame")
    return items


def decode(context: dict[str, Any], wire: bytes) -> dict[str, Any]:
    form = context["form"]
    max_frame = context.get("max_frame", codec.DEFAULT_MAX_FRAME)
    if form == "handshake":
        return _frame_to_json(codec.decode_handshake(wire, max_frame))
    if form == "frame":
        return _frame_to_json(codec.decode_frame(wire, max_frame))
    if form == "stream":
        return {"items": [_frame_to_json(item) for item in _decode_stream(context, wire)]}
    if form == "fragments":
        return _frame_to_json(codec.join(codec.decode_frames(wire, max_frame)))
    if form == "extension-list":
        return {"extensions": [{"name": e.name, "properties": dict(e.properties)}
                               for e in extensions.parse_extension_list(_text(wire))]}
    if form == "properties":
        return {"properties": extensions.parse_properties(_text(wire))}
    if form == "command":
        command = extensions.parse_command(_text(wire))
        return {"name": command.name, "arguments": dict(command.arguments)}
    if form == "filter-value":
        kind, value = extensions.parse_filter_value(_text(wire))
        return {"type": kind, "value": value}
    raise ValueError(f"unknown form {form!r}")


def encode(context: dict[str, Any], message: dict[str, Any]) -> bytes:
    form = context["form"]
    if form == "handshake":
        return codec.encode_handshake(_handshake_from_json(message))
    if form == "frame":
        return codec.encode_frame(_frame_from_json(message))
    if form == "stream":
        return b"".join(codec.encode_handshake(_handshake_from_json(item)) if item["kind"] == "handshake"
                        else codec.encode_frame(_frame_from_json(item)) for item in message["items"])
    if form == "fragments":
        fragments = codec.split(_frame_from_json(message), context.get("fragment_size", codec.MAX_FRAGMENT))
        return b"".join(codec.encode_frame(f) for f in fragments)
    if form == "extension-list":
        return extensions.format_extension_list(
            extensions.Extension(e["name"], e["properties"]) for e in message["extensions"]).encode("ascii")
    if form == "properties":
        return extensions.format_properties(message["properties"]).encode("ascii")
    if form == "command":
        return extensions.format_command(extensions.Command(message["name"], message["arguments"])).encode("ascii")
    if form == "filter-value":
        return extensions.format_filter_value(message["type"], message["value"]).encode("ascii")
    raise ValueError(f"unknown form {form!r}")
