"""mc0 for the harness: a ZMTP session inside the reader, mc0 messages by field, the reference broker.

The runner gives a case one plain TCP channel.  ZMTP has state on both sides
(the greeting, the CURVE handshake and its nonces, PONG replies), so the
reader the adapter makes for each case is a *session*: a sans-IO
:class:`reference_impl.zmtp.connection.Connection` that decodes what the
target sends, answers the handshake by itself (the runner sends
``outgoing()`` after every read) and encodes the case's sends (the runner
calls ``encode(spec)``).  Steps:

    send: {zmtp: handshake, mechanism: CURVE, server_key: test}   # our greeting; the handshake runs on reads
    expect: {zmtp: ready, socket_type: ROUTER}                      # the handshake completed
    send: {verb: PUT, topic: t, headers: {X-Trace: "1"}, body: hello, id: 7}
    expect: {verb: OK, id: 7}
    send: {hex: "ff 00 ..."}                                         # raw bytes: broken greetings
    send: {zmtp: handshake, mechanism: CURVE, vouch: forged}         # INITIATE vouches for another C'
    send: {zmtp: replay}                                             # the last message again, nonce reused

Frames the session reports: ``{zmtp: ready}`` (mechanism, socket_type,
version; under CURVE server_transient, the WELCOME's S' as an integer), ``{zmtp: error, reason}`` (a ZMTP ERROR command), ``{zmtp: closed,
code}`` (our side of ZMTP gave up on what the target sent: mechanism
mismatch, a box that does not open, ...; never the target's refusal by itself, so
a case that wants a refusal names the code it accepts), and each message as mc0 fields
(``zmtp: message``, verb, id, topic, message, headers, header_list,
positional, payload, parts, separator, delimiter, malformed).  Before any
handshake step (raw mode) the target's greeting is reported as
``{zmtp: greeting}`` and its commands as ``{zmtp: command, name}``.

:class:`ZmtpSession` knows nothing of mc0 (it takes two functions for the
messages), so 11/MTL can reuse it as it is.
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any, Callable

from conformance import wirelog
from conformance.protocols.base import Frame, ProtocolAdapter
from conformance.protocols.frame_specs import check_frame_specs
from conformance.scenario.values import ValueError_, build_payload, short
from reference_impl.common.errors import CodecError
from reference_impl.mc0 import codec as mc0
from reference_impl.mc0 import testkeys
from reference_impl.zmtp.codec import StreamDecoder
from reference_impl.zmtp.commands import Error as ZmtpError
from reference_impl.zmtp.commands import Ping, Pong, decode_error, split_command
from reference_impl.zmtp.connection import ConnectionClosed, Connection, HandshakeComplete, Message, Phase
from reference_impl.zmtp.curve import CurveClient, CurveClientConfig, KeyPair
from reference_impl.zmtp.greeting import GreetingDecoder
from reference_impl.zmtp.null import NullConfig
from reference_impl.zmtp.z85 import z85_decode

# The suite reads up to 64 MiB per frame so a target's oversized replies are graded, not cut off.
HARNESS_MAX_FRAME = 64 * 1024 * 1024
HANDSHAKE_KEYS = {"zmtp", "mechanism", "server_key", "client_key", "minor", "socket_type", "identity", "vouch"}
SEND_KEYS = {"verb", "id", "topic", "headers", "positional", "body", "separator", "delimiter", "frames"}
MATCH_KEYS = {"zmtp", "server_transient", "verb", "id", "topic", "message", "headers", "header_list", "positional", "payload", "parts",
              "separator", "delimiter", "malformed", "mechanism", "socket_type", "version", "reason", "code", "name",
              "as_server"}
ZMTP_KINDS = ("ready", "error", "closed", "message", "greeting", "command")
_NAMED_SERVER_KEYS = {"test": testkeys.SERVER.public, "wrong": testkeys.WRONG_SERVER.public}


def _text(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def _octets(value: Any) -> bytes:
    """A header key/value or a frame: a string (UTF-8), a number, or a payload spec ({hex}, {size}, {utf8})."""
    if isinstance(value, bool):
        raise ValueError_(f"not a frame value: {value!r}")
    if isinstance(value, int):
        return str(value).encode()
    if isinstance(value, str):
        return value.encode("utf-8", "surrogateescape")
    return build_payload(value)


# -- the ZMTP session (protocol independent) ----------------------------------------

class ZmtpSession:
    """One case's ZMTP connection to the target, driven by the runner's reads and sends."""

    def __init__(self, decode_message: Callable[[list[bytes]], Frame], encode_message: Callable[[dict], list[bytes]],
                 default_socket_type: str) -> None:
        self.decode_message = decode_message
        self.encode_message = encode_message
        self.default_socket_type = default_socket_type
        self.connection: Connection | None = None
        self.wirelog = None  # set by the runner: decrypted traffic is noted beside the raw bytes
        self._out = bytearray()
        self._last_message = b""  # the wire bytes of the last message sent, for {zmtp: replay}
        self._raw_greeting: GreetingDecoder | None = None
        self._raw_frames: StreamDecoder | None = None

    # the runner's interface ---------------------------------------------------------

    def encode(self, spec: dict[str, Any]) -> list[bytes]:
        if spec.get("zmtp") == "replay":
            if not self._last_message:
                raise ValueError_("{zmtp: replay} sends the last message again: no message was sent yet")
            self._note(f">> the last message again, octet for octet (its short nonce reused): {len(self._last_message)} octets")
            return [self._last_message]
        if "zmtp" in spec:
            return [self._start(spec)]
        frames = self.encode_message(spec)
        if self.connection is None or self.connection.phase is not Phase.TRAFFIC:
            state = "no handshake was started" if self.connection is None else f"ZMTP is in {self.connection.phase.value}"
            self._note(f"not sent ({state}): {len(frames)} frames")
            return []
        self._note(f">> {self.decode_message(frames)}")
        self._last_message = self.connection.send(Message(frames)).data
        return [self._last_message]

    def feed(self, data: bytes | str) -> list[Frame]:
        if isinstance(data, str):
            data = data.encode()
        if self.connection is None:
            return self._feed_raw(data)
        out = self.connection.receive_data(data, time.monotonic())
        self._out += out.data
        frames = []
        for event in out.events:
            frame = self._event_frame(event)
            if frame is not None:
                self._note(f"<< {frame}")
                frames.append(frame)
        return frames

    def outgoing(self) -> bytes:
        data, self._out = bytes(self._out), bytearray()
        return data

    @property
    def pending(self) -> int:
        return 0

    # internals -------------------------------------------------------------------

    def _start(self, spec: dict[str, Any]) -> bytes:
        if spec["zmtp"] != "handshake":
            raise ValueError_(f"unknown zmtp step {spec['zmtp']!r} (known: handshake)")
        if self.connection is not None or self._raw_greeting is not None:
            raise ValueError_("one handshake per case, before any raw bytes arrive")
        mechanism = spec.get("mechanism", "CURVE")
        if mechanism == "CURVE":
            keys = _client_keys(spec.get("client_key", "test"))
            wirelog.redact(keys.secret)  # never on the wire; never in a wire log (bytes, hex or Z85) either
            vouch = spec.get("vouch", "valid")
            if vouch not in ("valid", "forged"):
                raise ValueError_(f"vouch {vouch!r}: valid or forged")
            config = (_ForgedVouchConfig if vouch == "forged" else CurveClientConfig)(
                _server_key(spec.get("server_key", "test")), keys)
        elif mechanism == "NULL":
            config = NullConfig()
        else:
            raise ValueError_(f"mechanism {mechanism!r}: the suite speaks CURVE and NULL")
        self.connection = Connection(str(spec.get("socket_type", self.default_socket_type)), config,
                                     identity=_octets(spec.get("identity", "")), minor_version=int(spec.get("minor", 1)),
                                     max_frame=HARNESS_MAX_FRAME, handshake_timeout=None)
        self._note(f"ZMTP {mechanism} handshake as {self.connection.socket_type}, ZMTP 3.{self.connection.minor_version}")
        return self.connection.start(time.monotonic()).data

    def _event_frame(self, event) -> Frame | None:
        if isinstance(event, HandshakeComplete):
            fields = {"zmtp": "ready", "mechanism": self.connection.config.name,
                      "socket_type": event.socket_type, "version": "%d.%d" % event.peer_version}
            if getattr(self.connection.mechanism, "server_transient", b""):
                fields["server_transient"] = int.from_bytes(self.connection.mechanism.server_transient, "big")
            return Frame(fields, f"ZMTP READY ({fields['mechanism']}, peer {fields['socket_type']}, ZMTP {fields['version']})")
        if isinstance(event, Message):
            return self.decode_message(event.frames)
        if isinstance(event, ZmtpError):
            reason = event.reason.decode("ascii", "replace")
            return Frame({"zmtp": "error", "reason": reason}, f"ZMTP ERROR {reason!r}")
        if isinstance(event, ConnectionClosed):
            if event.code == "peer-error":
                return None  # the ERROR frame says it
            return Frame({"zmtp": "closed", "code": event.code},
                         f"the suite's ZMTP side gave up: {event.code} ({event.detail})")
        if isinstance(event, (Ping, Pong)):
            return None  # the connection answered the PING itself
        name = type(event).__name__.upper()
        return Frame({"zmtp": "command", "name": getattr(event, "name", name)}, f"ZMTP command {getattr(event, 'name', name)}")

    def _feed_raw(self, data: bytes) -> list[Frame]:
        """Raw mode: no handshake of ours; report the target's greeting and commands as they are."""
        frames: list[Frame] = []
        if self._raw_greeting is None:
            self._raw_greeting = GreetingDecoder()
        if self._raw_greeting.greeting is None:
            data = self._raw_greeting.feed(data)
            greeting = self._raw_greeting.greeting
            if greeting is None:
                return frames
            self._raw_frames = StreamDecoder(HARNESS_MAX_FRAME)
            fields = {"zmtp": "greeting", "mechanism": greeting.mechanism, "version": f"{greeting.major}.{greeting.minor}",
                      "as_server": greeting.as_server}
            frames.append(Frame(fields, f"ZMTP greeting ({greeting.mechanism}, ZMTP {fields['version']})"))
        assert self._raw_frames is not None
        for zframe in self._raw_frames.feed(data):
            if not zframe.command:
                frames.append(Frame({"zmtp": "frame", "payload": zframe.body}, f"ZMTP frame ({len(zframe.body)} octets)"))
                continue
            name, body = split_command(zframe.body)
            if name == "ERROR":
                reason = decode_error(body).reason.decode("ascii", "replace")
                frames.append(Frame({"zmtp": "error", "reason": reason}, f"ZMTP ERROR {reason!r}"))
            else:
                frames.append(Frame({"zmtp": "command", "name": name}, f"ZMTP command {name}"))
        return frames

    def _note(self, text: str) -> None:
        if self.wirelog is not None:
            self.wirelog.note(text)


class _ForgedVouchClient(CurveClient):
    """A CURVE client whose INITIATE vouches for another short-term key than its own (RFC 26: the
    vouch box holds C' and S; this one holds a fresh key's public part and S), every other box valid."""

    def _vouched_key(self) -> bytes:
        return KeyPair.generate().public


class _ForgedVouchConfig(CurveClientConfig):
    client_class = _ForgedVouchClient


def _server_key(value: Any) -> bytes:
    if value in _NAMED_SERVER_KEYS:
        return _NAMED_SERVER_KEYS[value]
    return _key(value, "server_key")


def _client_keys(value: Any) -> KeyPair:
    if value == "test":
        return testkeys.CLIENT
    if value == "generated":
        return KeyPair.generate()
    return KeyPair.from_secret(_key(value, "client_key"))


def _key(value: Any, what: str) -> bytes:
    try:
        key = z85_decode(str(value)) if len(str(value)) == 40 else bytes.fromhex(str(value))
    except (CodecError, ValueError):
        key = b""
    if len(key) != 32:
        raise ValueError_(f"{what}: test, wrong, generated, 40 Z85 characters or 64 hex digits; got {value!r}")
    return key


# -- mc0 messages by field ------------------------------------------------------------

def message_frames(spec: dict[str, Any]) -> list[bytes]:
    """The ZMTP frames of an mc0 message described by fields (or given as ``frames``)."""
    if "frames" in spec:
        return [_octets(f) for f in spec["frames"]]
    if "verb" not in spec:
        raise ValueError_("an mc0 send names a verb (or gives frames)")
    frames = [mc0.DELIMITER] if spec.get("delimiter", True) else []
    frames.append(_octets(spec["verb"]))
    if "id" in spec:
        frames += [mc0.ID, _octets(spec["id"])]
    if "topic" in spec:
        frames += [mc0.TOPIC, _octets(spec["topic"])]
    headers = spec.get("headers", [])
    if isinstance(headers, dict):
        for key, value in headers.items():
            frames += [_octets(key), _octets(value)]
    else:  # a flat list [k1, v1, k2, ...]: odd counts and repeats allowed, for broken input
        frames += [_octets(item) for item in headers]
    positional = list(spec.get("positional", []))
    if "body" in spec:
        positional.insert(0, spec["body"])
    if spec.get("separator", bool(positional)):
        frames.append(mc0.SEPARATOR)
    frames += [_octets(p) for p in positional]
    return frames


def message_frame(frames: list[bytes]) -> Frame:
    fields: dict[str, Any] = {"zmtp": "message", "delimiter": bool(frames) and frames[0] == b""}
    try:
        msg = mc0.decode_message(frames, delimiter=fields["delimiter"])
    except CodecError as exc:
        fields["malformed"] = exc.code
        if len(frames) > 1:
            fields["verb"] = _text(frames[1] if fields["delimiter"] else frames[0])
        return Frame(fields, f"mc0 malformed message ({exc}): {[short(f, 16) for f in frames[:8]]}")
    fields["verb"] = _text(msg.verb)
    fields["header_list"] = [_text(x) for pair in msg.headers for x in pair]
    fields["headers"] = sorted([_text(k), _text(v)] for k, v in msg.headers)
    for name, key in (("id", mc0.ID), ("topic", mc0.TOPIC), ("message", mc0.DESCRIPTION)):
        value = msg.header(key)
        if value is not None:
            fields[name] = _text(value)
    fields["separator"] = msg.positional is not None
    positional = msg.positional or ()
    fields["positional"] = [_text(p) for p in positional]
    fields["parts"] = len(positional)
    fields["payload"] = b"".join(positional)
    return Frame(fields, _summary(fields, positional))


def _summary(fields: dict[str, Any], positional: tuple[bytes, ...]) -> str:
    text = f"mc0 {fields['verb']}"
    for key, value in zip(fields["header_list"][::2], fields["header_list"][1::2]):
        text += f" {key}={value[:40]!r}"
    if fields["separator"]:
        text += " ''" + "".join(f" [{len(p)} bytes {short(p, 12)}]" if len(p) > 24 else f" {_text(p)!r}" for p in positional)
    if not fields["delimiter"]:
        text += " (no delimiter frame)"
    return text


def new_reader(transport: str) -> ZmtpSession:
    return ZmtpSession(message_frame, message_frames, "DEALER")


def encode(spec: dict[str, Any], transport: str) -> list[bytes]:
    raise ValueError_("mc0 sends go through the case's ZMTP session (the runner calls its encode)")


def _is_octets(value: Any) -> bool:
    """A value compared byte for byte: text, a number, or exact bytes as {hex}, {utf8} or
    {size} (a range such as {in: [...]} is left to the generic matcher)."""
    return not isinstance(value, dict) or bool({"hex", "utf8", "size"} & set(value))


def normalize(spec: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in spec.items():
        if key in ("id", "topic", "message", "verb") and _is_octets(value):
            out[key] = _text(_octets(value))
        elif key == "headers":
            pairs = value.items() if isinstance(value, dict) else [p for p in value]
            out[key] = sorted([_text(_octets(k)), _text(_octets(v))] for k, v in pairs)
        elif key in ("header_list", "positional"):
            out[key] = [_text(_octets(v)) for v in value]
        else:
            out[key] = value
    return out


def frame_check(case: dict[str, Any]) -> list[tuple[tuple, str]]:
    def send(spec: dict, path: tuple) -> list[tuple[tuple, str]]:
        if set(spec) == {"hex"}:
            return []
        allowed = HANDSHAKE_KEYS if "zmtp" in spec else SEND_KEYS
        unknown = sorted(set(spec) - allowed)
        if unknown:
            return [(path + (unknown[0],), f"unknown mc0 send field {unknown[0]!r} (known: {', '.join(sorted(allowed))})")]
        if "zmtp" in spec and spec["zmtp"] not in ("handshake", "replay"):
            return [(path + ("zmtp",), "a zmtp send step is {zmtp: handshake, ...} or {zmtp: replay}")]
        if spec.get("mechanism", "CURVE") not in ("CURVE", "NULL"):
            return [(path + ("mechanism",), 'mechanism is CURVE or "NULL" (quoted: YAML reads a bare NULL as nothing)')]
        if "zmtp" not in spec and "verb" not in spec and "frames" not in spec:
            return [(path, "an mc0 send names a verb or gives frames")]
        return []

    def match(spec: dict, path: tuple) -> list[tuple[tuple, str]]:
        unknown = sorted(set(spec) - MATCH_KEYS)
        if unknown:
            return [(path + (unknown[0],), f"unknown mc0 field {unknown[0]!r} (known: {', '.join(sorted(MATCH_KEYS))})")]
        if not spec:
            return [(path, "an expectation names at least one field")]
        if "zmtp" in spec and spec["zmtp"] not in ZMTP_KINDS:
            return [(path + ("zmtp",), f"zmtp is one of {', '.join(ZMTP_KINDS)}")]
        return []

    return check_frame_specs(case, send=send, match=match)


# -- the reference target -----------------------------------------------------------------

async def start_reference(transport: str, params: dict[str, int]):
    from reference_impl.mc0.server import start_server
    return await start_server("127.0.0.1", 0)


async def run_reference_client(url: str, testcase: str) -> int:
    return 127  # mc0 has no client-role cases: the connector's behaviour has no trigger a suite can pull


def serve(args) -> int:
    if args.role == "client":
        return asyncio.run(run_reference_client(args.connect, args.testcase))
    if getattr(args, "transport", None) not in (None, "tcp"):
        print("conformance serve mc0: ZMTP runs over TCP only", file=sys.stderr)
        return 2
    from reference_impl.mc0.server import run_server
    run_server(args.host, args.port, curve_secret_file=args.curve_secret, allow_null=args.null)
    return 0


HANDSHAKE = [
    {"send": {"zmtp": "handshake", "mechanism": "CURVE", "server_key": "test"}},
    {"expect": {"zmtp": "ready"}},
]

def shared_state(spec: dict[str, Any]) -> str | None:
    """Topics are the broker's, shared by every connection: a SUB, UNSUB or PUT of one case would
    reach (or miss) another case's subscriber."""
    return {"SUB": "subscribes to a topic", "UNSUB": "unsubscribes from a topic",
            "PUT": "publishes to a topic"}.get(str(spec.get("verb", "")).upper())

ADAPTER = ProtocolAdapter(
    name="mc0",
    transports=("zmtp",),
    # the broker's heartbeat, which may arrive at any time once a TTL is set
    default_noise=[{"verb": "NOOP"}],
    # the suite's own waits (conformance/scenario/timing.py), settable with --param
    # absent_after_ms: how long a client that set TTL 250 stays quiet before the suite checks that
    # the broker dropped it (three TTLs; a broker may allow more grace: raise it with --param)
    params={"silence_ms": 200, "reply_ms": 2000, "absent_after_ms": 750},
    ref_params={},
    macros={
        "handshake": HANDSHAKE,
        "connect": HANDSHAKE + [
            {"send": {"verb": "CONNECT", "headers": {"VERSION": "0.3"}, "id": "connect"}},
            {"expect": {"verb": "OK", "id": "connect"}},
        ],
    },
    new_reader=new_reader,
    encode=encode,
    normalize=normalize,
    frame_check=frame_check,
    start_reference=start_reference,
    run_reference_client=run_reference_client,
    serve=serve,
    shared_state=shared_state,
)
