"""rsio vector adapter: plain-JSON message objects <-> reference codec.

JSON form (vectors/schema/rsio-message.schema.json): ``type`` is the draft's
message name; field names are the draft's; every integer field (Id, Long,
varint) is a decimal string, since values up to 2^63-1 exceed JavaScript's
safe integers; byte fields are lower-case hex; onNextPacked lists its
elements (count = number of items); an extension message is
``{"type": "extension", "messageType": "64", "fields": [{"varint": "5"},
{"string": "x"}, {"bytes": "00ff"}]}``.

Context keys (all optional): ``elementSizes`` maps a subscriber Id (string)
to the elementSize announced for it in subscribed; ``extensions`` maps an
extension message type (string) to its field layout (list of "varint",
"string", "bytes"); ``maxMessage`` overrides the decoder's size bound.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from reference_impl.rsio.codec import (
    CORE_TYPES,
    DEFAULT_MAX_MESSAGE,
    ExtensionMessage,
    Message,
    decode_exact,
    encode_message,
)

_NAMES = {
    1: "clientHello", 2: "serverHello", 3: "goodbye", 4: "subscribe", 5: "request",
    6: "cancel", 7: "subscribed", 8: "onNext", 9: "onComplete", 10: "onError",
    11: "onNextPacked", 12: "onNextPart", 13: "onNextLastPart",
}
_CLASSES = {name: CORE_TYPES[t] for t, name in _NAMES.items()}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word.title() for word in rest)


def _to_json(kind: str, value: Any) -> Any:
    if kind == "varint":
        return str(value)
    if kind == "ids":
        return [str(v) for v in value]
    if kind == "packed":
        return [v.hex() for v in value]
    if kind in ("bytes", "element"):
        return value.hex()
    return value


def _from_json(kind: str, value: Any) -> Any:
    if kind == "varint":
        return int(value)
    if kind == "ids":
        return tuple(int(v) for v in value)
    if kind == "packed":
        return tuple(bytes.fromhex(v) for v in value)
    if kind in ("bytes", "element"):
        return bytes.fromhex(value)
    return value


def message_to_json(message: Message) -> dict[str, Any]:
    if isinstance(message, ExtensionMessage):
        return {"type": "extension", "messageType": str(message.type), "fields": [
            {"varint": str(v)} if isinstance(v, int) else
            {"string": v} if isinstance(v, str) else {"bytes": v.hex()}
            for v in message.fields]}
    obj: dict[str, Any] = {"type": _NAMES[message.TYPE]}
    for f, kind in zip(fields(message), message.LAYOUT):
        obj[_camel(f.name)] = _to_json(kind, getattr(message, f.name))
    return obj


def message_from_json(obj: dict[str, Any]) -> Message:
    if obj["type"] == "extension":
        values: list[int | str | bytes] = []
        for item in obj["fields"]:
            (kind, value), = item.items()
            values.append(int(value) if kind == "varint" else
                          value if kind == "string" else bytes.fromhex(value))
        return ExtensionMessage(int(obj["messageType"]), tuple(values))
    cls = _CLASSES[obj["type"]]
    return cls(*(_from_json(kind, obj[_camel(f.name)]) for f, kind in zip(fields(cls), cls.LAYOUT)))


def _element_sizes(context: dict[str, Any]) -> dict[int, int]:
    return {int(sid): size for sid, size in context.get("elementSizes", {}).items()}


def decode(context: dict[str, Any], wire: bytes) -> dict[str, Any]:
    sizes = _element_sizes(context)
    layouts = {int(t): tuple(layout) for t, layout in context.get("extensions", {}).items()}
    message = decode_exact(wire, max_message=context.get("maxMessage", DEFAULT_MAX_MESSAGE),
                           element_size=lambda sid: sizes.get(sid, 0), layouts=layouts)
    return message_to_json(message)


def encode(context: dict[str, Any], message: dict[str, Any]) -> bytes:
    element_size = _element_sizes(context).get(int(message.get("subscriber", "0")), 0)
    return encode_message(message_from_json(message), element_size=element_size)
