"""ZMTP 3.x spoken by the suite itself over one plain TCP channel (shared by the ZMTP adapters).

The runner gives an adapter a byte stream per channel.  ZMTP needs a greeting
and a security handshake before any message, so a ZMTP adapter encodes the
suite's side from step fields (no hidden state: every step says what it
sends) and reads the target's side with :class:`ZmtpReader`, which turns the
stream into harness frames:

    {kind: greeting, mechanism, as_server, major, minor, version: "3.1"}
    {kind: command, command: READY | ERROR | PING | PONG | WELCOME | ..., plus
        socket_type, identity (READY), reason (ERROR), ttl, context (PING/PONG)}
    protocol messages: the adapter's ``to_frame(parts)`` gets every complete
        multi-part message (a list of frame bodies) and returns the harness Frame

Send steps with a ``zmtp`` key are encoded here (:func:`encode_zmtp`):

    {zmtp: greeting, mechanism: NULL, as_server: false, major: 3, minor: 1}
    {zmtp: ready, socket_type: DEALER, identity: "", properties: {Name: value}}
    {zmtp: hello, username: alice, password: secret}      # PLAIN (RFC 24)
    {zmtp: initiate, socket_type: DEALER}                  # PLAIN
    {zmtp: error, reason: "..."}  {zmtp: ping, ttl: 0, context: ""}  {zmtp: pong, context: ""}
    {zmtp: command, name: NAME, data: {hex: "..."}}

:func:`encode_parts` frames a multi-part message (``long: true`` forces the
8-octet size form, a valid but non-canonical encoding receivers must take).
:func:`handshake` returns the steps of a NULL or PLAIN handshake for macros.

No pyzmq here: the frames come from :mod:`reference_impl.zmtp`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conformance import wirelog
from conformance.protocols.base import Frame
from conformance.scenario.values import build_payload
from reference_impl.common.errors import CodecError
from reference_impl.zmtp import plain
from reference_impl.zmtp.codec import Frame as ZFrame, StreamDecoder, encode_frame, encode_message
from reference_impl.zmtp.commands import (
    Command, Error, Metadata, Ping, Pong, Ready, command_body, decode_command, encode_command, split_command,
)
from reference_impl.zmtp.greeting import Greeting, GreetingDecoder, encode_greeting

#: The harness reads frames up to 64 MiB so that a target's oversized messages are graded, not cut.
HARNESS_MAX_FRAME = 64 * 1024 * 1024

ZMTP_SEND_KEYS = {"zmtp", "mechanism", "as_server", "major", "minor", "socket_type", "identity", "properties",
                  "username", "password", "reason", "ttl", "context", "name", "data", "long"}
ZMTP_MATCH_KEYS = {"kind", "mechanism", "as_server", "major", "minor", "version", "command", "socket_type",
                   "identity", "reason", "ttl", "context"}


def _text_bytes(value: Any) -> bytes:
    return build_payload(value) if value is not None else b""


def encode_zmtp(spec: dict[str, Any]) -> bytes:
    """The octets of a ``{zmtp: ...}`` send step."""
    what = str(spec["zmtp"]).lower()
    if what == "greeting":
        mechanism = spec.get("mechanism")
        mechanism = "NULL" if mechanism is None else str(mechanism)  # YAML reads a bare NULL as null
        return encode_greeting(Greeting(mechanism, bool(spec.get("as_server", False)),
                                        int(spec.get("major", 3)), int(spec.get("minor", 1))))
    if what == "ready":
        body = encode_command(Ready(_metadata(spec)))
    elif what == "hello":
        password = _text_bytes(spec.get("password"))
        wirelog.redact(password)  # on the wire in clear (RFC 24); never in a rendered wire log
        body = plain.encode_hello(_text_bytes(spec.get("username")), password)
    elif what == "initiate":
        body = plain.encode_initiate(_metadata(spec))
    elif what == "error":
        body = encode_command(Error(_text_bytes(spec.get("reason"))))
    elif what == "ping":
        body = encode_command(Ping(int(spec.get("ttl", 0)), _text_bytes(spec.get("context"))))
    elif what == "pong":
        body = encode_command(Pong(_text_bytes(spec.get("context"))))
    elif what == "command":
        body = command_body(str(spec["name"]), _text_bytes(spec.get("data")))
    else:
        raise CodecError("scenario", f"unknown zmtp step {spec['zmtp']!r} (greeting, ready, hello, initiate, "
                                     "error, ping, pong, command)")
    return encode_frame(ZFrame(body, command=True), long=True if spec.get("long") else None)


def _metadata(spec: dict[str, Any]) -> Metadata:
    pairs: list[tuple[str, bytes]] = []
    if "socket_type" in spec:
        pairs.append(("Socket-Type", str(spec["socket_type"]).encode("ascii")))
    if "identity" in spec:
        pairs.append(("Identity", _text_bytes(spec["identity"])))
    for name, value in (spec.get("properties") or {}).items():
        pairs.append((str(name), _text_bytes(value)))
    return Metadata.of(pairs)


def encode_parts(parts: list[bytes], *, long: bool = False) -> bytes:
    """One multi-part ZMTP message: MORE on every frame but the last."""
    if not parts:
        raise CodecError("scenario", "a ZMTP message has at least one frame")
    return encode_message([bytes(p) for p in parts], long=True if long else None)


def command_frame(body: bytes) -> Frame:
    """A harness frame for a ZMTP command body sent by the target."""
    name, data = split_command(body)
    fields: dict[str, Any] = {"kind": "command", "command": name}
    try:
        command = decode_command(body)
    except CodecError:
        command = Command(name, data)
    if isinstance(command, Ready):
        socket_type = command.metadata.get("Socket-Type")
        if socket_type is not None:
            fields["socket_type"] = socket_type.decode("ascii", "replace")
        identity = command.metadata.get("Identity")
        if identity is not None:
            fields["identity"] = identity.decode("latin-1")
    elif isinstance(command, Error):
        fields["reason"] = command.reason.decode("utf-8", "replace")
    elif isinstance(command, Ping):
        fields["ttl"] = command.ttl
        fields["context"] = command.context.hex()
    elif isinstance(command, Pong):
        fields["context"] = command.context.hex()
    extra = " ".join(f"{k}={v}" for k, v in fields.items() if k not in ("kind", "command"))
    return Frame(fields, f"ZMTP command {name}" + (f" {extra}" if extra else ""))


class ZmtpReader:
    """The target's byte stream: a 64-octet greeting, then frames; commands and whole messages become Frames."""

    def __init__(self, to_frame: Callable[[list[bytes]], Frame], max_frame: int = HARNESS_MAX_FRAME,
                 to_command: Callable[[bytes], Any] = command_frame) -> None:
        self._to_frame = to_frame
        self._to_command = to_command  # the passive checker keeps a command's bytes (CURVE boxes to open)
        self._greeting = GreetingDecoder()
        self._frames = StreamDecoder(max_frame)
        self._parts: list[bytes] = []
        self._parts_size = 0
        self.max_frame = max_frame

    def feed(self, data: bytes | str) -> list[Frame]:
        if isinstance(data, str):
            data = data.encode()
        out: list[Frame] = []
        if self._greeting.greeting is None:
            data = self._greeting.feed(data)
            greeting = self._greeting.greeting
            if greeting is None:
                return out
            out.append(Frame({"kind": "greeting", "mechanism": greeting.mechanism, "as_server": greeting.as_server,
                              "major": greeting.major, "minor": greeting.minor,
                              "version": f"{greeting.major}.{greeting.minor}"},
                             f"ZMTP greeting {greeting.major}.{greeting.minor} {greeting.mechanism}"
                             + (" as-server" if greeting.as_server else "")))
        for frame in self._frames.feed(data) if data else []:
            if frame.command:
                if self._parts:
                    raise CodecError("bad-flags", "a command frame inside a multi-part message")
                out.append(self._to_command(frame.body))
                continue
            self._parts.append(frame.body)
            self._parts_size += len(frame.body)
            if self._parts_size > self.max_frame:
                raise CodecError("too-large", f"a message of more than {self.max_frame} octets")
            if not frame.more:
                parts, self._parts, self._parts_size = self._parts, [], 0
                out.append(self._to_frame(parts))
        return out

    @property
    def pending(self) -> int:
        return self._frames.buffered + self._parts_size


def handshake(socket_type: str, *, mechanism: str = "NULL", username: str = "", password: str = "",
              peer_socket_type: str | None = None) -> list[dict[str, Any]]:
    """Macro steps: our greeting and handshake as ``socket_type``; the target's greeting and READY expected."""
    ready: dict[str, Any] = {"kind": "command", "command": "READY"}
    if peer_socket_type:
        ready["socket_type"] = peer_socket_type
    greeting = {"send": {"zmtp": "greeting", "mechanism": mechanism}}
    if mechanism == "NULL":
        return [greeting, {"send": {"zmtp": "ready", "socket_type": socket_type, "identity": ""}},
                {"expect": {"kind": "greeting", "mechanism": "NULL"}}, {"expect": ready}]
    if mechanism == "PLAIN":
        return [greeting, {"send": {"zmtp": "hello", "username": username, "password": password}},
                {"expect": {"kind": "greeting", "mechanism": "PLAIN"}},
                {"expect": {"kind": "command", "command": "WELCOME"}},
                {"send": {"zmtp": "initiate", "socket_type": socket_type, "identity": ""}}, {"expect": ready}]
    raise ValueError(f"no handshake macro for mechanism {mechanism!r}")
