"""Vector adapter for ZMTP 3.x (reference_impl.zmtp).

Group contexts (documented in vectors/schema/zmtp-message.schema.json, ``$defs/context``):

- ``{"kind": "greeting"}``: the 64-octet greeting.
- ``{"kind": "frame", "maxFrame": N}``: one frame; ``maxFrame`` defaults to the codec's.
- ``{"kind": "command"}``: one command frame holding a ZMTP command (READY, ERROR, PING, ...).
- ``{"kind": "plain-command"}``: one command frame of the PLAIN handshake (HELLO, WELCOME, INITIATE).
- ``{"kind": "curve-command", "sender": "client"|"server", "keys": {...}}``: one frame of
  the CURVE handshake or traffic; ``keys`` holds every key the boxes need.
- ``{"kind": "curve-cookie", "keys": {...}}``: the 96-octet cookie inside WELCOME.

Bytes travel as lower-case hex; metadata as ``[{"name": ..., "value": hex}]``.
"""

from __future__ import annotations

from typing import Any

from reference_impl.common.errors import CodecError, IncompleteFrame
from reference_impl.zmtp import curve, plain
from reference_impl.zmtp.codec import DEFAULT_MAX_FRAME, LONG, Frame, decode_frame, encode_frame
from reference_impl.zmtp.commands import (
    Cancel, Command, Error, Metadata, Ping, Pong, Ready, Subscribe, decode_command, encode_command,
    split_command,
)
from reference_impl.zmtp.greeting import Greeting, decode_greeting, encode_greeting


def decode(context: dict[str, Any], wire: bytes) -> dict[str, Any]:
    kind = context["kind"]
    try:
        if kind == "greeting":
            g = decode_greeting(wire)
            return {"major": g.major, "minor": g.minor, "mechanism": g.mechanism, "asServer": g.as_server}
        if kind == "curve-cookie":
            client_transient, server_transient_secret = curve.open_cookie(wire, _key(context, "cookieKey"))
            return {"cookieNonce": wire[:16].hex(), "clientTransientPublic": client_transient.hex(),
                    "serverTransientSecret": server_transient_secret.hex()}
        frame = _one_frame(wire, context.get("maxFrame", DEFAULT_MAX_FRAME))
    except IncompleteFrame:
        raise CodecError("truncated", "the wire ends inside the item") from None
    if kind == "frame":
        return {"more": frame.more, "command": frame.command, "long": bool(wire[0] & LONG), "body": frame.body.hex()}
    if kind == "curve-command":
        return _decode_curve(context, frame)
    if not frame.command:
        raise CodecError("not-a-command", "a message frame where a command was expected")
    if kind == "plain-command":
        return _decode_plain(frame.body)
    if kind == "command":
        return _command_fields(decode_command(frame.body))
    raise ValueError(f"unknown context kind {kind!r}")


def encode(context: dict[str, Any], message: dict[str, Any]) -> bytes:
    kind = context["kind"]
    if kind == "greeting":
        return encode_greeting(Greeting(message["mechanism"], message["asServer"], message["major"], message["minor"]))
    if kind == "frame":
        frame = Frame(bytes.fromhex(message["body"]), message["more"], message["command"])
        return encode_frame(frame, long=message["long"])
    if kind == "command":
        return _command_frame(encode_command(_command_from_fields(message)))
    if kind == "plain-command":
        return _command_frame(_encode_plain(message))
    if kind == "curve-command":
        return _encode_curve(context, message)
    if kind == "curve-cookie":
        return curve.make_cookie(_key(context, "cookieKey"), bytes.fromhex(message["cookieNonce"]),
                                 bytes.fromhex(message["clientTransientPublic"]),
                                 bytes.fromhex(message["serverTransientSecret"]))
    raise ValueError(f"unknown context kind {kind!r}")


def _one_frame(wire: bytes, max_frame: int) -> Frame:
    frame, used = decode_frame(wire, max_frame)
    if used != len(wire):
        raise CodecError("trailing-bytes", f"{len(wire) - used} octets after the frame")
    return frame


def _command_frame(body: bytes) -> bytes:
    return encode_frame(Frame(body, command=True))


# -- ZMTP commands -----------------------------------------------------------------

def _properties(metadata: Metadata) -> list[dict[str, str]]:
    return [{"name": name, "value": value.hex()} for name, value in metadata.properties]


def _metadata(fields: list[dict[str, str]]) -> Metadata:
    return Metadata.of((p["name"], bytes.fromhex(p["value"])) for p in fields)


def _command_fields(command: Any) -> dict[str, Any]:
    match command:
        case Ready(metadata):
            return {"name": "READY", "properties": _properties(metadata)}
        case Error(reason):
            return {"name": "ERROR", "reason": reason.hex()}
        case Subscribe(topic):
            return {"name": "SUBSCRIBE", "topic": topic.hex()}
        case Cancel(topic):
            return {"name": "CANCEL", "topic": topic.hex()}
        case Ping(ttl, context):
            return {"name": "PING", "ttl": ttl, "context": context.hex()}
        case Pong(context):
            return {"name": "PONG", "context": context.hex()}
    return {"name": command.name, "data": command.data.hex()}


def _command_from_fields(message: dict[str, Any]) -> Any:
    name = message["name"]
    if "data" in message:
        return Command(name, bytes.fromhex(message["data"]))
    match name:
        case "READY":
            return Ready(_metadata(message["properties"]))
        case "ERROR":
            return Error(bytes.fromhex(message["reason"]))
        case "SUBSCRIBE":
            return Subscribe(bytes.fromhex(message["topic"]))
        case "CANCEL":
            return Cancel(bytes.fromhex(message["topic"]))
        case "PING":
            return Ping(message["ttl"], bytes.fromhex(message["context"]))
        case "PONG":
            return Pong(bytes.fromhex(message["context"]))
    raise ValueError(f"no fields known for command {name!r}")


# -- PLAIN ---------------------------------------------------------------------------

def _decode_plain(body: bytes) -> dict[str, Any]:
    name, data = split_command(body)
    if name == "HELLO":
        username, password = plain.decode_hello(data)
        return {"name": "HELLO", "username": username.hex(), "password": password.hex()}
    if name == "WELCOME":
        if data:
            raise CodecError("bad-welcome", f"WELCOME carries {len(data)} unexpected octets")
        return {"name": "WELCOME"}
    if name == "INITIATE":
        return {"name": "INITIATE", "properties": _properties(Metadata.decode(data))}
    return _command_fields(decode_command(body))


def _encode_plain(message: dict[str, Any]) -> bytes:
    name = message["name"]
    if name == "HELLO":
        return plain.encode_hello(bytes.fromhex(message["username"]), bytes.fromhex(message["password"]))
    if name == "WELCOME":
        return plain.WELCOME
    if name == "INITIATE":
        return plain.encode_initiate(_metadata(message["properties"]))
    return encode_command(_command_from_fields(message))


# -- CURVE ---------------------------------------------------------------------------

def _key(context: dict[str, Any], name: str) -> bytes:
    return bytes.fromhex(context["keys"][name])


def _pair(context: dict[str, Any], prefix: str) -> curve.KeyPair:
    return curve.KeyPair(_key(context, prefix + "Public"), _key(context, prefix + "Secret"))


def _transient_key(context: dict[str, Any]) -> bytes:
    return curve.shared_key(_key(context, "serverTransientPublic"), _key(context, "clientTransientSecret"))


def _message_prefix(context: dict[str, Any]) -> bytes:
    return curve.CLIENT_MESSAGE_PREFIX if context["sender"] == "client" else curve.SERVER_MESSAGE_PREFIX


def _decode_curve(context: dict[str, Any], frame: Frame) -> dict[str, Any]:
    name, _ = split_command(frame.body)
    if name == "MESSAGE":
        nonce, inner = curve.decode_message(frame.body, _message_prefix(context), _transient_key(context))
        return {"name": "MESSAGE", "nonce": nonce, "more": inner.more, "command": inner.command,
                "body": inner.body.hex()}
    if not frame.command:
        raise CodecError("not-a-command", f"{name} in a message frame")
    if name == "HELLO":
        hello = curve.decode_hello(frame.body, _key(context, "serverSecret"))
        return {"name": "HELLO", "clientTransientPublic": hello.client_transient.hex(), "nonce": hello.nonce}
    if name == "WELCOME":
        welcome = curve.decode_welcome(frame.body, _key(context, "serverPublic"), _key(context, "clientTransientSecret"))
        return {"name": "WELCOME", "welcomeNonce": welcome.nonce.hex(),
                "serverTransientPublic": welcome.server_transient.hex(), "cookie": welcome.cookie.hex()}
    if name == "INITIATE":
        initiate = curve.decode_initiate(frame.body, _key(context, "cookieKey"), _key(context, "serverPublic"))
        return {"name": "INITIATE", "cookie": initiate.cookie.hex(), "nonce": initiate.nonce,
                "clientPublic": initiate.client_public.hex(), "vouchNonce": initiate.vouch_nonce.hex(),
                "properties": _properties(initiate.metadata)}
    if name == "READY":
        nonce, metadata = curve.decode_ready(frame.body, _transient_key(context))
        return {"name": "READY", "nonce": nonce, "properties": _properties(metadata)}
    return _command_fields(decode_command(frame.body))


def _encode_curve(context: dict[str, Any], message: dict[str, Any]) -> bytes:
    name = message["name"]
    if name == "MESSAGE":
        inner = Frame(bytes.fromhex(message["body"]), message["more"], message["command"])
        # Framed as libzmq frames it: no COMMAND flag (see reference_impl.zmtp.curve).
        return encode_frame(Frame(curve.encode_message(inner, message["nonce"], _message_prefix(context),
                                                       _transient_key(context))))
    if name == "HELLO":
        body = curve.encode_hello(_pair(context, "clientTransient"), _key(context, "serverPublic"), message["nonce"])
    elif name == "WELCOME":
        body = curve.encode_welcome(_key(context, "serverSecret"), _key(context, "clientTransientPublic"),
                                    bytes.fromhex(message["welcomeNonce"]),
                                    bytes.fromhex(message["serverTransientPublic"]), bytes.fromhex(message["cookie"]))
    elif name == "INITIATE":
        body = curve.encode_initiate(bytes.fromhex(message["cookie"]), message["nonce"], _pair(context, "client"),
                                     _pair(context, "clientTransient"), _key(context, "serverPublic"),
                                     _key(context, "serverTransientPublic"), bytes.fromhex(message["vouchNonce"]),
                                     _metadata(message["properties"]))
    elif name == "READY":
        body = curve.encode_ready(message["nonce"], _metadata(message["properties"]), _transient_key(context))
    else:
        body = encode_command(_command_from_fields(message))
    return _command_frame(body)
