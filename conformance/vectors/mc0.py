"""Vector adapter for mc0 0.3 (reference_impl.mc0).

Every vector's ``wire`` is one ZMTP message: its frames, each a flags octet
(MORE on all but the last; LONG for the 8-octet size form), a size and the
body.  The first frame is the empty delimiter a DEALER sends (docs/profiles/mc0.md
"mc0"), then ``VERB KEY1 VAL1 ... ['' POSITIONAL ...]``.

Group contexts (documented in vectors/schema/mc0-message.schema.json, ``$defs/context``):

- ``{"kind": "message"}``: the message structure alone (reference_impl.mc0.codec).
  Message ``{"verb": hex, "headers": [[key hex, value hex], ...], "positional":
  null | [hex, ...]}``: ``positional`` is null when the separator is absent and
  a (maybe empty) list when it is present.  Codes: ``no-delimiter``,
  ``no-verb``, ``odd-headers`` (decode), ``no-verb``, ``empty-key`` (encode).
- ``{"kind": "request"}``: a client request as a broker judges it: valid (same
  message shape) when a broker serves it, else the codec's code or the
  broker's (reference_impl.mc0.broker.Refused): ``unknown-verb``,
  ``undefined-header``, ``repeated-header``, ``bad-version``, ``bad-ttl``,
  ``no-separator``, ``no-topics``, ``no-topic``.
- ``{"kind": "exchange"}``: the request sent to a fresh broker by a client
  subscribed to nothing; message ``{"replies": [{"verb": "OK"|"ERROR"|"MESSAGE",
  "id": hex|null}, ...]}``: what comes back to the sender, with the ``ID`` each
  reply carries.  An ERROR's description is free text and is not compared.
  Optional: ``"before": [hex, ...]`` requests the same client sent first (their
  replies are not compared); ``"reconnect": true`` then a new connection takes
  over the client's handle (the carrier attaches it again before detaching the
  old one, as a ROUTER keyed by routing id may) and sends the request.

The ZMTP layer adds ``truncated`` (the wire ends inside a frame or before the
last one), ``trailing-bytes``, ``not-a-message`` (a command frame) and ZMTP's
own codes (``bad-flags``).
"""

from __future__ import annotations

from typing import Any

from reference_impl.common.errors import CodecError
from reference_impl.mc0 import broker as mc0_broker
from reference_impl.mc0 import codec
from reference_impl.zmtp.codec import decode_message as frames_of
from reference_impl.zmtp.codec import encode_message as wire_of


def message_to_dict(msg: codec.Mc0Message) -> dict[str, Any]:
    return {
        "verb": msg.verb.hex(),
        "headers": [[k.hex(), v.hex()] for k, v in msg.headers],
        "positional": None if msg.positional is None else [p.hex() for p in msg.positional],
    }


def dict_to_message(message: dict[str, Any]) -> codec.Mc0Message:
    positional = message.get("positional")
    return codec.message(
        bytes.fromhex(message["verb"]),
        [(bytes.fromhex(k), bytes.fromhex(v)) for k, v in message.get("headers", [])],
        None if positional is None else [bytes.fromhex(p) for p in positional],
    )


def _exchange(context: dict[str, Any], frames: list[bytes]) -> dict[str, Any]:
    broker = mc0_broker.Broker()
    peer = "client"
    broker.attach(peer, 0.0)
    for earlier in context.get("before", []):
        broker.receive(peer, frames_of(bytes.fromhex(earlier)), 0.0)
    if context.get("reconnect"):
        broker.attach(peer, 0.0)  # a new connection under the same handle, before the old one is detached
    replies = []
    for send in broker.receive(peer, frames, 0.0):
        if send.peer != peer:
            continue
        reply = codec.decode_message(send.frames)
        replies.append({"verb": reply.verb.decode("ascii", "replace"),
                        "id": None if reply.id is None else reply.id.hex()})
    return {"replies": replies}


def decode(context: dict[str, Any], wire: bytes) -> dict[str, Any]:
    kind = context["kind"]
    frames = frames_of(wire)
    if kind == "message":
        return message_to_dict(codec.decode_message(frames))
    if kind == "request":
        msg = codec.decode_message(frames)
        try:
            mc0_broker.check_request(msg)
        except mc0_broker.Refused as refused:
            raise CodecError(refused.code, refused.description) from None
        return message_to_dict(msg)
    if kind == "exchange":
        return _exchange(context, frames)
    raise ValueError(f"unknown context kind {kind!r}")


def encode(context: dict[str, Any], message: dict[str, Any]) -> bytes:
    kind = context["kind"]
    if kind in ("message", "request"):
        return wire_of(codec.encode_message(dict_to_message(message)))
    raise ValueError(f"context kind {kind!r} has no encode direction")
