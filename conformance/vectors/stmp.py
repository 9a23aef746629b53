"""Vector adapter for STMP: JSON ``context``/``message`` <-> reference codec calls.

Contexts (``context["form"]``):

- ``binary-stream``: one message as sent on TCP (PS present when ENCODING != 0).
- ``binary-message``: one WebSocket binary message (no PS).
- ``text``: one WebSocket text message; ``wire`` is its UTF-8 bytes.
- ``first-byte``: ``wire`` is one byte; message ``{"class": "text"|"binary"}``.
- ``versions-binary`` / ``versions-text``: a negotiation payload; message
  ``{"versions": ["major.minor", ...]}``.

``context["maxPayload"]`` (optional) is passed to the decoder as ``max_payload``.
Messages are ``{"kind": ..., fields of that kind, "payload": hex | null}``
(see vectors/schema/stmp-message.schema.json).  Invalid input raises
:class:`CodecError`; the adapter itself only adds ``text-syntax`` for a text
message that is not UTF-8 (a WebSocket text frame must be).
"""

from __future__ import annotations

from typing import Any

from reference_impl.common.errors import CodecError
from reference_impl.stmp import codec

_KIND_NAMES = {codec.Ping: "ping", codec.Request: "request", codec.Notify: "notify", codec.Response: "response"}


def _limit(context: dict[str, Any]) -> dict[str, int]:
    return {"max_payload": context["maxPayload"]} if "maxPayload" in context else {}


def _payload_to_json(payload: bytes | None) -> str | None:
    return None if payload is None else bytes(payload).hex()


def message_to_dict(msg: codec.Message) -> dict[str, Any]:
    kind = _KIND_NAMES[type(msg)]
    if kind == "ping":
        return {"kind": "ping"}
    out: dict[str, Any] = {"kind": kind}
    if kind in ("request", "response"):
        out["id"] = int(msg.id)  # type: ignore[union-attr]
    if kind in ("request", "notify"):
        out["action"] = int(msg.action)  # type: ignore[union-attr]
    if kind == "response":
        out["status"] = int(msg.status)  # type: ignore[union-attr]
    out["encoding"] = int(msg.encoding)  # type: ignore[union-attr]
    out["payload"] = _payload_to_json(msg.payload)  # type: ignore[union-attr]
    return out


def dict_to_message(message: dict[str, Any]) -> codec.Message:
    kind = message.get("kind")
    if kind == "ping":
        return codec.Ping()
    payload_hex = message.get("payload")
    payload = None if payload_hex is None else bytes.fromhex(payload_hex)
    try:
        if kind == "request":
            return codec.Request(message["id"], message["action"], message["encoding"], payload)
        if kind == "notify":
            return codec.Notify(message["action"], message["encoding"], payload)
        if kind == "response":
            return codec.Response(message["id"], message["status"], message["encoding"], payload)
    except KeyError as exc:
        raise CodecError("field-range", f"{kind} without field {exc}") from exc
    raise CodecError("field-range", f"unknown kind {kind!r}")


def _versions_to_json(versions: list[tuple[int, int]]) -> dict[str, Any]:
    return {"versions": [f"{major}.{minor}" for major, minor in versions]}


def _versions_from_json(message: dict[str, Any]) -> list[tuple[int, int]]:
    out = []
    for v in message["versions"]:
        major, _, minor = v.partition(".")
        out.append((int(major), int(minor)))
    return out


def decode(context: dict[str, Any], wire: bytes) -> dict[str, Any]:
    form = context["form"]
    if form == "binary-stream":
        return message_to_dict(codec.decode_binary(wire, with_ps=True, **_limit(context)))
    if form == "binary-message":
        return message_to_dict(codec.decode_binary(wire, with_ps=False, **_limit(context)))
    if form == "text":
        try:
            text = wire.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CodecError("text-syntax", f"text message is not UTF-8: {exc}") from exc
        return message_to_dict(codec.decode_text(text, **_limit(context)))
    if form == "first-byte":
        if len(wire) != 1:
            raise CodecError("truncated" if not wire else "trailing-bytes", "first-byte vectors carry one byte")
        return {"class": codec.classify_first_byte(wire[0])}
    if form in ("versions-binary", "versions-text"):
        return _versions_to_json(codec.decode_versions(wire, text=form == "versions-text"))
    raise ValueError(f"unknown STMP vector form {form!r}")


def encode(context: dict[str, Any], message: dict[str, Any]) -> bytes:
    form = context["form"]
    if form == "binary-stream":
        return codec.encode_binary(dict_to_message(message), with_ps=True)
    if form == "binary-message":
        return codec.encode_binary(dict_to_message(message), with_ps=False)
    if form == "text":
        return codec.encode_text(dict_to_message(message)).encode("utf-8")
    if form in ("versions-binary", "versions-text"):
        return codec.encode_versions(_versions_from_json(message), text=form == "versions-text")
    raise ValueError(f"STMP vector form {form!r} has no encoder")
