"""Vector adapter for 11/MTL (reference_impl.mtl).

Group contexts (documented in vectors/schema/mtl-message.schema.json, ``$defs/context``):

- ``{"kind": "data"}``: one data command as a DEALER sends it (and a ROUTER to a
  DEALER): its ZMTP frames, header then body, MORE set on all but the last.
  Message ``{"command": "lease"|..., "seq", fields of that command}``; a Content body
  and an unused body are hex (``body``).
- ``{"kind": "field-table"}``: a field table alone (docs/profiles/mtl.md: Shortint count, pairs
  of short strings); message ``{"properties": [[name, value], ...]}``.
- ``{"kind": "control-request"}``: a control request as a REQ sends it: the empty
  delimiter frame, the command name, the JSON body; message ``{"command", "body"}``
  (the body as parsed JSON).
- ``{"kind": "control-reply"}``: a reply as it reaches the REQ (the routing id is the
  ROUTER's business, the delimiter is on the wire); message ``{"code", "body"}``.
- ``{"kind": "sasl-plain"}``: an RFC 4616 message; ``{"authzid", "authcid", "password"}``.
- ``{"kind": "scram-client-first"}`` / ``{"kind": "scram-client-final"}``: the client
  messages for ``{"user", "password", "nonce", "serverFirst"}`` (encode direction).
- ``{"kind": "scram-server-final", "user", "password", "nonce", "serverFirst"}``: a
  server-final message; valid when it proves the password (``{"verified": true}``),
  else ``bad-server-signature``.

Invalid input raises CodecError with the codec's code; the ZMTP layer adds
``truncated`` (the wire ends inside a frame) and ``trailing-bytes``.
"""

from __future__ import annotations

from typing import Any

from reference_impl.common.errors import CodecError
from reference_impl.mtl import codec, control, sasl
from reference_impl.zmtp.codec import decode_message as _frames
from reference_impl.zmtp.codec import encode_message as _message

_NAMES = {t: t.name.lower() for t in codec.DataType}


def command_to_dict(command: codec.DataCommand, body: bytes) -> dict[str, Any]:
    out: dict[str, Any] = {"command": _NAMES[codec.TYPE_OF[type(command)]]}
    for name in ("seq", "lease", "code", "resource", "multiple", "recycle"):
        if hasattr(command, name):
            out[name] = getattr(command, name)
    if isinstance(command, codec.Content):
        out["properties"] = [list(p) for p in command.properties]
    if not isinstance(command, codec.Response):
        out["body"] = body.hex()
    return out


def dict_to_command(message: dict[str, Any]) -> codec.DataCommand:
    kind = message["command"]
    seq = message.get("seq", 0)
    if kind == "lease":
        return codec.Lease(seq, message["lease"])
    if kind == "response":
        return codec.Response(seq, message["code"])
    if kind == "summon":
        return codec.Summon(seq, message["resource"])
    if kind == "dismiss":
        return codec.Dismiss(seq, message["resource"])
    if kind == "content":
        return codec.Content(seq, message["resource"], codec.properties_from(message["properties"]),
                             bytes.fromhex(message.get("body", "")))
    if kind == "confirm":
        return codec.Confirm(seq, message["multiple"])
    if kind == "reject":
        return codec.Reject(seq, message["multiple"], message["recycle"])
    if kind == "ping":
        return codec.Ping()
    if kind == "pong":
        return codec.Pong()
    raise CodecError("field-range", f"unknown command {kind!r}")


def decode(context: dict[str, Any], wire: bytes) -> dict[str, Any]:
    kind = context["kind"]
    if kind == "data":
        parts = _frames(wire)
        command = codec.decode_data(parts)
        return command_to_dict(command, parts[1])
    if kind == "field-table":
        return {"properties": [list(p) for p in codec.decode_field_table(wire)]}
    if kind == "control-request":
        envelope, rest = control.split_envelope(_frames(wire))
        if envelope != [b""]:
            raise CodecError("no-delimiter", "a REQ sends exactly one empty delimiter first")
        request = control.decode_request(rest)
        return {"command": request.command, "body": request.body}
    if kind == "control-reply":
        envelope, rest = control.split_envelope(_frames(wire))
        if envelope != [b""]:
            raise CodecError("no-delimiter", "a reply to a REQ starts with exactly one empty delimiter")
        reply = control.decode_reply(rest)
        return {"code": reply.code, "body": reply.body}
    if kind == "sasl-plain":
        authzid, authcid, password = sasl.decode_plain(wire)
        return {"authzid": authzid, "authcid": authcid, "password": password}
    if kind == "scram-server-final":
        ok = sasl.scram_server_final_ok(context["user"], context["password"], context["nonce"],
                                        context["serverFirst"].encode(), wire)
        if not ok:
            raise CodecError("bad-server-signature", "the server-final message does not prove the password")
        return {"verified": True}
    raise ValueError(f"unknown context kind {kind!r}")


def encode(context: dict[str, Any], message: dict[str, Any]) -> bytes:
    kind = context["kind"]
    if kind == "data":
        command = dict_to_command(message)
        header = codec.encode_header(command)
        body = bytes.fromhex(message["body"]) if "body" in message else codec.encode_body(command)
        return _message([header, body])
    if kind == "field-table":
        return codec.encode_field_table(codec.properties_from(message["properties"]))
    if kind == "control-request":
        return _message([b""] + control.encode_request(message["command"], message["body"]))
    if kind == "control-reply":
        return _message([b""] + control.encode_reply(message["code"], message["body"]))
    if kind == "sasl-plain":
        return sasl.plain_response(message["authcid"], message["password"], message["authzid"])
    if kind == "scram-client-first":
        return sasl.ScramClientExchange(message["user"], "", message["nonce"]).client_first()
    if kind == "scram-client-final":
        return sasl.scram_client_final(message["user"], message["password"], message["nonce"],
                                       message["serverFirst"].encode())
    raise ValueError(f"unknown context kind {kind!r}")
