"""11/MTL for the harness: ZMTP spoken by the suite, control and data commands by fields, matching.

A case talks to the control endpoint (channel ``main``) and opens data
channels with ``connect: {channel: NAME, port: "= var"}`` using the port a
202 reply announced (``expect: {code: 202, save: {port: port, lease: lease}}``).
Each channel speaks ZMTP itself (:mod:`conformance.protocols.zmtp_channel`):
the macros ``zmtp-req`` / ``zmtp-dealer`` do the NULL greeting and READY.

Send steps:

    {command: Connection.Open, body: {...}}            control request: '' delimiter, name, JSON body
    {command: ..., json: "{not json"}                   the body frame as raw text
    {command: Connection.Authorize, mechanism: PLAIN, user: alice, password: wonderland}
    {command: Connection.Authorize, mechanism: SCRAM-SHA-256, scram: client-first, user: alice, nonce: N}
    {command: Connection.Authorize, mechanism: SCRAM-SHA-256, scram: client-final, user, password, nonce,
        challenge: "= challenge"}                       # the 402's challenge, saved; computed with scramp
    {command: Connection.Authorize, mechanism: SCRAM-SHA-256, scram: ack}    # the empty final response
    {kind: lease, seq: 1, lease: "= lease"}   {kind: summon|dismiss, seq, resource}
    {kind: content, seq, resource, properties: {k: v}, payload: ...}
    {kind: confirm, seq, multiple: true}   {kind: reject, seq, multiple, recycle}   {kind: ping}  {kind: pong}
        booleans may be integers (2 is an invalid Boolean); `type: 0x42` sets the command type octet;
        `extra: {hex: ..}` appends octets to the header; `header: {hex: ..}` replaces it
    {frames: ["", "Connection.Open"]}                  any multi-part message (payload specs per part)
    {zmtp: greeting | ready | ...}                     ZMTP itself (see zmtp_channel)
    `long: true` on any message sends every frame with the 8-octet size form

Frames read: ``{kind: greeting}`` / ``{kind: command, command: READY, socket_type}`` (ZMTP);
``{kind: reply, code: 201, body: {...}, <body keys>: ...}`` for control replies (the
JSON body's keys are fields too: ``status``, ``profiles``, ``mechanisms``, ``port``,
``lease``, ``challenge``, and ``challenge_text`` is the challenge base64-decoded);
data commands as ``{kind: lease|response|summon|dismiss|content|confirm|reject|ping|pong,
seq, code, resource, properties, payload, multiple, recycle}``.

Matching adds to the shared rules: ``{contains: [...]}`` (a list holding these,
strings compared case-insensitively), ``{type: number|string|list|object}``,
``properties``/``body`` compared as parsed values, and ``scram_server_final:
{user, password, nonce, challenge}``: the frame's challenge is a SCRAM
server-final message proving the password (RFC 5802 ServerSignature).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
from dataclasses import dataclass
from typing import Any

from conformance import wirelog
from conformance.protocols.base import Frame, ProtocolAdapter, TargetFault
from conformance.protocols.frame_specs import check_frame_specs
from conformance.protocols.zmtp_channel import (
    ZMTP_MATCH_KEYS, ZMTP_SEND_KEYS, ZmtpReader, encode_parts, encode_zmtp, handshake,
)
from conformance.scenario.values import build_payload, short
from reference_impl.common.errors import CodecError
from reference_impl.mtl import codec, control, sasl
from reference_impl.mtl.codec import DataType

KINDS = {t.name.lower(): int(t) for t in DataType}
NAMES = {v: k for k, v in KINDS.items()}
CONTROL_SEND_KEYS = {"command", "body", "json", "mechanism", "user", "password", "scram", "nonce", "challenge",
                     "response", "delimiter", "long"}
DATA_SEND_KEYS = {"kind", "type", "seq", "lease", "resource", "properties", "payload", "multiple", "recycle", "code",
                  "extra", "header", "long"}
DATA_MATCH_KEYS = {"kind", "seq", "lease", "resource", "properties", "payload", "multiple", "recycle", "code"}
REPLY_KEYS = {"kind", "code", "body", "frames", "status", "profiles", "mechanisms", "mechanism", "challenge",
              "challenge_text", "port", "lease", "reason", "scram_server_final"}
_RESERVED = {"kind", "code", "body", "frames"}


# -- encoding ---------------------------------------------------------------------

def _short(value: Any) -> bytes:
    data = str(value).encode("utf-8")
    if len(data) > 255:
        raise CodecError("scenario", f"a short string is at most 255 octets, not {len(data)}")
    return bytes([len(data)]) + data


def _bool(value: Any) -> bytes:
    if isinstance(value, bool):
        return b"\x01" if value else b"\x00"
    return bytes([int(value) & 0xFF])  # any octet: invalid Booleans are test input


def _kind_number(spec: dict[str, Any]) -> int:
    if "type" in spec:
        return int(spec["type"])
    kind = str(spec.get("kind", "")).lower()
    if kind not in KINDS:
        raise CodecError("scenario", f"unknown MTL data command {spec.get('kind')!r} (known: {', '.join(KINDS)})")
    return KINDS[kind]


def data_parts(spec: dict[str, Any]) -> list[bytes]:
    """Header and body frames of a data command, built field by field (invalid values allowed)."""
    number = _kind_number(spec)
    if "header" in spec:
        header = build_payload(spec["header"])
    else:
        header = bytearray([number & 0xFF])
        if number in (1, 2, 3, 4, 5, 6, 7):
            header += codec.encode_integer(int(spec.get("seq", 1)))
        if number == 1:
            header += _short(spec.get("lease", ""))
        elif number in (3, 4):
            header += _short(spec.get("resource", "resource"))
        elif number == 5:
            header += _short(spec.get("resource", ""))
            props = spec.get("properties") or {}
            pairs = props.items() if isinstance(props, dict) else props
            pairs = list(pairs)
            header += codec.encode_shortint(len(pairs))
            for name, value in pairs:
                header += _short(name) + _short(value)
        elif number == 6:
            header += _bool(spec.get("multiple", False))
        elif number == 7:
            header += _bool(spec.get("multiple", False)) + _bool(spec.get("recycle", False))
        header = bytes(header) + build_payload(spec.get("extra"))
    if "payload" in spec:
        body = build_payload(spec["payload"])
    elif number == 2:
        body = b"%03d" % int(spec.get("code", 200))
    else:
        body = b""
    return [bytes(header), body]


def _authorize_body(spec: dict[str, Any]) -> dict[str, Any]:
    mechanism = str(spec["mechanism"])
    if "response" in spec:
        return {"mechanism": mechanism, "response": spec["response"]}
    user = str(spec.get("user", "alice"))
    wirelog.redact(spec.get("password"))  # the SASL password never shows in a wire log
    step = str(spec.get("scram", "")).lower()
    if not step:
        message = sasl.plain_response(user, str(spec.get("password", "")))
    elif step == "client-first":
        message = sasl.ScramClientExchange(user, "", str(spec["nonce"])).client_first()
    elif step == "client-final":
        # the challenge is the target's server-first message (saved from its 402): one the suite
        # cannot answer is the target's fault, not the case's
        try:
            server_first = base64.b64decode(str(spec["challenge"]), validate=True)
        except (binascii.Error, ValueError):
            raise TargetFault(f"the 402's challenge {str(spec['challenge'])[:60]!r} is not base64") from None
        try:
            message = sasl.scram_client_final(user, str(spec.get("password", "")), str(spec["nonce"]), server_first)
        except Exception as exc:  # scramp refuses a malformed one, or one that does not extend our nonce
            raise TargetFault(f"the server-first message {server_first[:80]!r} cannot be answered: {exc}") from None
    elif step == "ack":
        message = b""
    else:
        raise CodecError("scenario", f"scram is client-first, client-final or ack, not {step!r}")
    return {"mechanism": mechanism, "response": sasl.b64encode(message)}


def control_parts(spec: dict[str, Any]) -> list[bytes]:
    name = str(spec["command"]).encode("utf-8")
    if "json" in spec:
        body = str(spec["json"]).encode("utf-8")
    elif "body" in spec:
        body = control.encode_json(spec["body"])
    elif "mechanism" in spec:
        body = control.encode_json(_authorize_body(spec))
    else:
        body = b"{}"
    parts = [name, body]
    return ([b""] + parts) if spec.get("delimiter", True) else parts


def encode(spec: dict[str, Any], transport: str) -> list[bytes]:
    if "zmtp" in spec:
        return [encode_zmtp(spec)]
    if "frames" in spec:
        parts = [build_payload(p) for p in spec["frames"]]
    elif "command" in spec:
        parts = control_parts(spec)
    else:
        parts = data_parts(spec)
    return [encode_parts(parts, long=bool(spec.get("long")))]


# -- decoding -----------------------------------------------------------------------

def _reply_frame(parts: list[bytes]) -> Frame:
    reply = control.decode_reply(parts)
    fields: dict[str, Any] = {"kind": "reply", "code": reply.code, "body": reply.body, "frames": len(parts)}
    if isinstance(reply.body, dict):
        for key, value in reply.body.items():
            if key not in _RESERVED:
                fields[key] = value
        challenge = reply.body.get("challenge")
        if isinstance(challenge, str):
            try:
                fields["challenge_text"] = base64.b64decode(challenge, validate=True).decode("utf-8", "replace")
            except (binascii.Error, ValueError):
                pass
    text = control.encode_json(reply.body).decode("utf-8", "replace")
    return Frame(fields, f"MTL reply {reply.code} {text[:160]}")


def _data_frame(parts: list[bytes]) -> Frame:
    command = codec.decode_data(parts)
    kind = NAMES[int(codec.TYPE_OF[type(command)])]
    fields: dict[str, Any] = {"kind": kind}
    for name in ("seq", "lease", "code", "resource", "multiple", "recycle"):
        if hasattr(command, name):
            fields[name] = getattr(command, name)
    if isinstance(command, codec.Content):
        fields["properties"] = dict(command.properties)
        fields["payload"] = command.body
    summary = " ".join([f"MTL {kind}"] + [f"{k}={v}" for k, v in fields.items() if k not in ("kind", "payload")])
    if "payload" in fields:
        summary += f" payload={short(fields['payload'])} ({len(fields['payload'])} bytes)"
    return Frame(fields, summary)


def to_frame(parts: list[bytes]) -> Frame:
    """A control reply (REQ envelope: an empty first frame) or a data command."""
    if parts and parts[0] == b"":
        return _reply_frame(parts[1:])
    return _data_frame(parts)


def new_reader(transport: str) -> ZmtpReader:
    return ZmtpReader(to_frame)


# -- matching -------------------------------------------------------------------------

def normalize(spec: dict[str, Any]) -> dict[str, Any]:
    out = dict(spec)
    if isinstance(out.get("kind"), str):
        out["kind"] = out["kind"].lower()
    return out


_TYPES = {"number": (int, float), "string": (str,), "list": (list,), "object": (dict,), "boolean": (bool,)}


def _fold(value: Any) -> Any:
    return value.casefold() if isinstance(value, str) else value


@dataclass
class MtlAdapter(ProtocolAdapter):
    def matches(self, spec: dict[str, Any], frame: Frame) -> tuple[bool, str]:
        plain: dict[str, Any] = {}
        for key, expected in spec.items():
            actual = frame.fields.get(key)
            if key == "scram_server_final":
                ok, why = _scram_final_matches(expected, frame)
            elif key in ("properties", "body"):
                ok = key in frame.fields and actual == expected
                why = f"{key} is {actual!r}, expected {expected!r}"
            elif isinstance(expected, dict) and ("contains" in expected or "type" in expected):
                ok, why = _special(key, expected, frame)
            else:
                plain[key] = expected
                continue
            if not ok:
                return False, why
        return super().matches(plain, frame)


def _special(key: str, expected: dict[str, Any], frame: Frame) -> tuple[bool, str]:
    if key not in frame.fields:
        return False, f"no field {key!r} in {frame}"
    actual = frame.fields[key]
    if "type" in expected:
        wanted = _TYPES[expected["type"]]
        if not isinstance(actual, wanted) or (expected["type"] == "number" and isinstance(actual, bool)):
            return False, f"{key} is {actual!r} ({type(actual).__name__}), expected a JSON {expected['type']}"
    if "contains" in expected:
        if not isinstance(actual, list):
            return False, f"{key} is {actual!r}, expected a list"
        have = {_fold(a) for a in actual if isinstance(a, (str, int, float))}
        missing = [x for x in expected["contains"] if _fold(x) not in have]
        if missing:
            return False, f"{key} is {actual!r}, which lacks {missing!r}"
    return True, ""


def _scram_final_matches(expected: dict[str, Any], frame: Frame) -> tuple[bool, str]:
    challenge = frame.fields.get("challenge")
    if not isinstance(challenge, str):
        return False, f"no SCRAM server-final challenge in {frame}"
    try:
        server_first = base64.b64decode(str(expected["challenge"]), validate=True)
        server_final = base64.b64decode(challenge, validate=True)
    except (binascii.Error, ValueError):
        return False, f"challenge {challenge!r} is not base64"
    ok = sasl.scram_server_final_ok(str(expected.get("user", "alice")), str(expected["password"]),
                                    str(expected["nonce"]), server_first, server_final)
    return ok, f"the server-final message {server_final[:80]!r} does not prove the password (ServerSignature)"


def frame_check(case: dict[str, Any]) -> list[tuple[tuple, str]]:
    match_keys = ZMTP_MATCH_KEYS | DATA_MATCH_KEYS | REPLY_KEYS

    def send(spec: dict, path: tuple) -> list[tuple[tuple, str]]:
        if {"hex"} >= set(spec):
            return []
        problems = []
        if "zmtp" in spec:
            allowed = ZMTP_SEND_KEYS
        elif "frames" in spec:
            allowed = {"frames", "long"}
        elif "command" in spec:
            allowed = CONTROL_SEND_KEYS
        else:
            allowed = DATA_SEND_KEYS
            if "type" not in spec and str(spec.get("kind", "")).lower() not in KINDS:
                problems.append((path + ("kind",), f"unknown MTL data command {spec.get('kind')!r} "
                                 f"(known: {', '.join(KINDS)}); a control request names `command`"))
        return problems + unknown_fields(spec, allowed, path)

    def match(spec: dict, path: tuple) -> list[tuple[tuple, str]]:
        return unknown_fields(spec, match_keys, path)

    def unknown_fields(spec: dict, allowed: set[str], path: tuple) -> list[tuple[tuple, str]]:
        unknown = sorted(set(spec) - allowed)
        if unknown:
            return [(path + (unknown[0],), f"unknown MTL field {unknown[0]!r} (known: {', '.join(sorted(allowed))})")]
        return []

    return check_frame_specs(case, send=send, match=match, exact_fields=("body", "properties"))


# -- the reference target --------------------------------------------------------------

async def start_reference(transport: str, params: dict[str, int]):
    from reference_impl.mtl.server import start_server
    return await start_server("127.0.0.1", 0, heartbeat_interval=params["heartbeat_interval_ms"] / 1000,
                              heartbeat_timeout=params["heartbeat_timeout_ms"] / 1000,
                              redeliver_after=params["redeliver_ms"] / 1000)


async def run_reference_client(url: str, testcase: str) -> int:
    from reference_impl.mtl.client import run_client_testcase
    return await run_client_testcase(url, testcase)


def serve(args) -> int:
    if getattr(args, "transport", None) not in (None, "tcp"):
        print("conformance serve mtl: MTL runs over ZMTP on TCP (no --transport ws)")
        return 2
    if args.role == "client":
        return asyncio.run(run_reference_client(args.connect, args.testcase))
    from reference_impl.mtl.server import run_server
    options = {"redeliver_after": getattr(args, "redeliver", None), "auth_ttl": getattr(args, "auth_ttl", None)}
    run_server(args.host, args.port, data_port=getattr(args, "data_port", 0),
               heartbeat_interval=args.heartbeat_interval, heartbeat_timeout=args.heartbeat_timeout,
               anonymous=getattr(args, "anonymous", False),
               **{k: v for k, v in options.items() if v is not None})
    return 0


# -- macros ------------------------------------------------------------------------------

OPEN_BODY = {"protocol": {"name": "MTL", "version": 1}, "virtual-host": "test-env"}


def _lease_macro(kind: str, confirm: str, channel: str, summon: bool) -> list[dict[str, Any]]:
    port, lease = f"{channel}_port", f"{channel}_lease"
    steps: list[dict[str, Any]] = [
        {"send": {"command": f"Connection.{kind.title()}", "body": {"resources": ["resource"], "confirm": confirm}}},
        {"expect": {"kind": "reply", "code": 202, "save": {port: "port", lease: "lease"}}},
        {"connect": {"channel": channel, "port": f"= {port}"}},
        {"macro": "zmtp-dealer"},
        {"send": {"kind": "lease", "seq": 1, "lease": f"= {lease}"}},
        {"expect": {"kind": "response", "seq": 1, "code": 200}},
    ]
    if summon:
        steps += [{"send": {"kind": "summon", "seq": 2, "resource": "resource"}},
                  {"expect": {"kind": "response", "seq": 2, "code": 200}}]
    return steps + [{"use": "main"}]


def _profile_macro(profile: str) -> list[dict[str, Any]]:
    return [{"macro": "login"},
            {"send": {"command": "Connection.Profile", "body": {"profile": profile}}},
            {"expect": {"kind": "reply", "code": 200}}]


MACROS: dict[str, list[dict[str, Any]]] = {
    "zmtp-req": handshake("REQ"),
    "zmtp-dealer": handshake("DEALER"),
    "open": [*handshake("REQ"),
             {"send": {"command": "Connection.Open", "body": OPEN_BODY}},
             {"expect": {"any_of": [{"kind": "reply", "code": 401}, {"kind": "reply", "code": 201}]}}],
    "login": [{"macro": "open"},
              {"send": {"command": "Connection.Authorize", "mechanism": "PLAIN", "user": "alice",
                        "password": "wonderland"}},
              {"expect": {"kind": "reply", "code": 201}}],
    "test-profile": _profile_macro("test"),
    "confirm-test-profile": _profile_macro("confirm-test"),
    "writer": _lease_macro("writer", "none", "writer", summon=False),
    "writer-full": _lease_macro("writer", "full", "writer", summon=False),
    "reader": _lease_macro("reader", "none", "reader", summon=True),
    "reader-full": _lease_macro("reader", "full", "reader", summon=True),
}

def shared_state(spec: dict[str, Any]) -> str | None:
    """Leases are the broker's: it keeps a bounded number of unclaimed ones (the oldest go first) and
    routes Content by resource between every lease holder, whichever connection asked."""
    command = str(spec.get("command", "")).lower()
    return "asks for a lease" if command in ("connection.writer", "connection.reader") else None

ADAPTER = MtlAdapter(
    name="mtl",
    transports=("zmtp",),
    default_noise=[{"kind": "ping"}, {"kind": "command", "command": "PING"}],
    params={"heartbeat_interval_ms": 5000, "heartbeat_timeout_ms": 15000, "redeliver_ms": 2000, "silence_ms": 1000},
    # the in-process reference runs with short timers so heartbeat and redelivery cases take seconds
    ref_params={"heartbeat_interval_ms": 1000, "heartbeat_timeout_ms": 2500, "redeliver_ms": 600, "silence_ms": 300},
    macros=MACROS,
    new_reader=new_reader,
    encode=encode,
    normalize=normalize,
    frame_check=frame_check,
    start_reference=start_reference,
    run_reference_client=run_reference_client,
    serve=serve,
    shared_state=shared_state,
)
