"""STMP for the harness: frames by fields <-> bytes, matching, the reference target."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from functools import partial
from typing import Any

from conformance.protocols.base import Frame, ProtocolAdapter
from conformance.protocols.frame_specs import check_frame_specs
from conformance.scenario.values import build_payload, short
from reference_impl.common.errors import CodecError
from reference_impl.stmp import codec
from reference_impl.stmp.codec import Encoding, Kind, Notify, Ping, Request, Response, Status

# The harness reads up to 64 MiB per message so that a target's oversized
# replies are seen and graded instead of cut off by our own limit.
HARNESS_MAX_PAYLOAD = 64 * 1024 * 1024
# A Raw payload of ID 0 is also shown as a version list (for negotiation replies) only up to this size: every
# major.minor there is (256) fits in 512 bytes even as text, and listing every byte of an 8 MiB echo
# as a "version" cost the harness seconds per frame.
MAX_VERSIONS_VIEW = 1024

KINDS = {k.name.lower(): k for k in Kind}
ENCODINGS = {e.name.lower(): int(e) for e in Encoding}
STATUSES = {s.name.lower().replace("_", ""): int(s) for s in Status}
SEND_KEYS = {"kind", "id", "action", "status", "encoding", "payload", "versions", "form", "ps"}
MATCH_KEYS = {"kind", "id", "action", "status", "encoding", "payload", "versions", "form"}
FORMS = ("binary", "text", "split")


def _folded(name: str) -> str:
    return name.lower().replace("_", "").replace("-", "")


def _named(value: Any, table: dict[str, int], what: str) -> int:
    if isinstance(value, int):
        return value
    # most names are written as the table has them: one lookup (a repeat step names a kind 65,535 times)
    number = table.get(value) if isinstance(value, str) else None
    if number is None:
        number = _FOLDED_NAMES[id(table)].get(_folded(str(value)))
    if number is None:
        raise CodecError("scenario", f"unknown {what} {value!r} (known: {', '.join(table)})")
    return int(number)


KIND_NUMBERS = {k: int(v) for k, v in KINDS.items()}
#: the name tables, folded (case, _ and - ignored), by table
_FOLDED_NAMES = {id(table): {_folded(name): int(number) for name, number in table.items()}
                 for table in (KIND_NUMBERS, ENCODINGS, STATUSES)}


def _kind(value: Any) -> Kind:
    return Kind(_named(value, KIND_NUMBERS, "kind"))


def _versions(items: list[str]) -> list[tuple[int, int]]:
    out = []
    for item in items:
        major, _, minor = str(item).partition(".")
        out.append((int(major), int(minor or 0)))
    return out


def build_message(spec: dict[str, Any], *, text: bool) -> codec.Message:
    kind = _kind(spec.get("kind", "request"))
    encoding = _named(spec.get("encoding", 0), ENCODINGS, "encoding")
    if "versions" in spec:
        payload = codec.encode_versions(_versions(spec["versions"]), text=text)
    else:
        payload = build_payload(spec.get("payload"))
    if kind is Kind.PING:
        return Ping()
    if kind is Kind.REQUEST:
        return Request(spec.get("id", 1), spec.get("action", 0), encoding, payload)
    if kind is Kind.NOTIFY:
        return Notify(spec.get("action", 0), encoding, payload)
    return Response(spec.get("id", 1), _named(spec.get("status", 0), STATUSES, "status"), encoding, payload)


def encode(spec: dict[str, Any], transport: str) -> list[bytes | str]:
    form = spec.get("form", "binary")
    if transport == "tcp":
        if form != "binary":
            raise CodecError("scenario", f"form {form!r} exists only on WebSocket")
        data = codec.encode_binary(build_message(spec, text=False), with_ps=True)
        if "ps" in spec:  # a lying length prefix, for the suite's own broken input
            data = data[:-len(_payload_of(spec)) - 4] + spec["ps"].to_bytes(4, "big") + _payload_of(spec)
        return [data]
    if form == "text":
        return [codec.encode_text(build_message(spec, text=True))]
    if form == "split":
        msg = build_message(spec, text=True)
        header = codec.encode_text(_without_payload(msg))
        return [header, msg.payload]
    return [codec.encode_binary(build_message(spec, text=False), with_ps=False)]


def _payload_of(spec: dict[str, Any]) -> bytes:
    return build_payload(spec.get("payload"))


def _without_payload(msg: codec.Message) -> codec.Message:
    return replace(msg, payload=None)


#: each message type's fields, in the order frames show them (looked up once, not with hasattr per frame)
_FIELDS = {kind: tuple(name for name in ("id", "action", "status", "encoding", "payload")
                       if name in getattr(kind, "__dataclass_fields__", {}))
           for kind in (Ping, Request, Response, Notify)}


def to_frame(msg: codec.Message, form: str) -> Frame:
    fields: dict[str, Any] = {"kind": type(msg).__name__.lower(), "form": form}
    for name in _FIELDS[type(msg)]:
        fields[name] = getattr(msg, name)
    fields.setdefault("encoding", 0)
    fields.setdefault("payload", b"")
    # the version-list view is for the negotiation, whose messages carry ID 0 (a 65,535-request case
    # need not decode every request's payload as versions)
    if (fields.get("id") == 0 and fields["encoding"] == Encoding.RAW and fields["payload"]
            and len(fields["payload"]) <= MAX_VERSIONS_VIEW):
        try:
            fields["versions"] = [f"{a}.{b}" for a, b in codec.decode_versions(fields["payload"], text=form == "text")]
        except CodecError:
            pass
    return Frame(fields, partial(_summary, fields))


def _summary(f: dict[str, Any]) -> str:
    parts = [f["kind"]]
    for name in ("id", "action", "status", "encoding"):
        if name in f and not (name == "encoding" and f["kind"] == "ping"):
            parts.append(f"{name}={hex(f[name])}")
    if f.get("payload"):
        parts.append(f"payload={short(f['payload'])} ({len(f['payload'])} bytes)")
    return f"STMP {f['form']} " + " ".join(parts)


class StreamReader:
    def __init__(self) -> None:
        self._decoder = codec.StreamDecoder(max_payload=HARNESS_MAX_PAYLOAD)

    def feed(self, data: bytes | str) -> list[Frame]:
        if isinstance(data, str):
            data = data.encode()
        return [to_frame(m, "binary") for m in self._decoder.feed(data)]

    @property
    def pending(self) -> int:
        return self._decoder.buffered


class MessageReader:
    """WebSocket: binary messages without PS, text messages, split text header + binary payload."""

    def __init__(self) -> None:
        self._split: codec.Message | None = None
        self.pending = 0

    def feed(self, data: bytes | str) -> list[Frame]:
        if self._split is not None:
            if isinstance(data, str):
                raise CodecError("split-header", "a split text header must be followed by a binary message")
            header, self._split = self._split, None
            return [to_frame(codec.attach_split_payload(header, data, max_payload=HARNESS_MAX_PAYLOAD), "split")]
        if isinstance(data, str):
            msg = codec.decode_text(data, max_payload=HARNESS_MAX_PAYLOAD)
            if getattr(msg, "payload", b"") is None:
                self._split = msg
                return []
            return [to_frame(msg, "text")]
        return [to_frame(codec.decode_binary(data, with_ps=False, max_payload=HARNESS_MAX_PAYLOAD), "binary")]


def new_reader(transport: str):
    return StreamReader() if transport == "tcp" else MessageReader()


def normalize(spec: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in spec.items():
        if key == "kind":
            out[key] = _kind(value).name.lower()
        elif key == "encoding":
            out[key] = _named(value, ENCODINGS, "encoding")
        elif key == "status" and isinstance(value, dict):
            out[key] = {k: ([_named(x, STATUSES, "status") for x in v] if k == "in" else _named(v, STATUSES, "status"))
                        for k, v in value.items()}
        elif key == "status":
            out[key] = _named(value, STATUSES, "status")
        elif key == "versions":
            out[key] = [f"{a}.{b}" for a, b in _versions(value)]
        else:
            out[key] = value
    return out


def frame_check(case: dict[str, Any]) -> list[tuple[tuple, str]]:
    def send(spec: dict, path: tuple) -> list[tuple[tuple, str]]:
        keys = set(spec)
        if {"hex"} >= keys or {"text"} >= keys:
            return []
        return check_keys(spec, SEND_KEYS, path)

    def match(spec: dict, path: tuple) -> list[tuple[tuple, str]]:
        return check_keys(spec, MATCH_KEYS, path)

    def check_keys(spec: dict, allowed: set[str], path: tuple) -> list[tuple[tuple, str]]:
        unknown = sorted(set(spec) - allowed)
        if unknown:
            return [(path + (unknown[0],), f"unknown STMP field {unknown[0]!r} (known: {', '.join(sorted(allowed))})")]
        problems = []
        try:
            normalize({k: v for k, v in spec.items() if not (isinstance(v, str) and v.startswith("="))})
        except (CodecError, ValueError) as exc:
            problems.append((path, str(exc)))
        if spec.get("form", "binary") not in FORMS:
            problems.append((path + ("form",), f"form must be one of {', '.join(FORMS)}"))
        return problems

    return check_frame_specs(case, send=send, match=match)


async def start_reference(transport: str, params: dict[str, int]):
    from reference_impl.stmp import server
    options = dict(heartbeat_interval=params["heartbeat_interval_ms"] / 1000,
                   heartbeat_timeout=params["heartbeat_timeout_ms"] / 1000,
                   request_timeout=params["request_timeout_ms"] / 1000)
    if transport == "ws":
        return await server.start_ws_server("127.0.0.1", 0, **options)
    return await server.start_tcp_server("127.0.0.1", 0, **options)


async def run_reference_client(url: str, testcase: str) -> int:
    from reference_impl.stmp.client import run_client_testcase
    return await run_client_testcase(url, testcase)


def serve(args) -> int:
    if args.role == "client":
        return asyncio.run(run_reference_client(args.connect, args.testcase))
    from reference_impl.stmp.server import run_server
    run_server(args.transport or "tcp", args.host, args.port,
               heartbeat_interval=args.heartbeat_interval, heartbeat_timeout=args.heartbeat_timeout)
    return 0


NEGOTIATE = [
    {"send": {"kind": "request", "id": 0, "action": 0, "encoding": "raw", "versions": ["0.1"]}},
    {"expect": {"kind": "response", "id": 0, "status": "ok", "versions": ["0.1"]}},
]

ADAPTER = ProtocolAdapter(
    name="stmp",
    transports=("tcp", "ws"),
    default_noise=[{"kind": "ping"}],
    # silence_ms / reply_ms: the suite's own waits (conformance/scenario/timing.py), settable with --param
    params={"heartbeat_interval_ms": 5000, "heartbeat_timeout_ms": 15000, "request_timeout_ms": 10000,
            "silence_ms": 300, "reply_ms": 3000},
    # the in-process reference runs with short timers so heartbeat cases take seconds; its
    # client's request-timeout case waits reference_impl.stmp.client.CASE_REQUEST_TIMEOUT
    ref_params={"heartbeat_interval_ms": 1000, "heartbeat_timeout_ms": 3000, "request_timeout_ms": 2000},
    macros={
        "negotiate": NEGOTIATE,
        "negotiate-text": [
            {"send": {**NEGOTIATE[0]["send"], "form": "text"}},
            {"expect": {"kind": "response", "id": 0, "status": "ok", "versions": ["0.1"]}},
        ],
    },
    new_reader=new_reader,
    encode=encode,
    normalize=normalize,
    frame_check=frame_check,
    start_reference=start_reference,
    run_reference_client=run_reference_client,
    serve=serve,
)
