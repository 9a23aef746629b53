"""rsio/0 for the harness: messages by fields <-> bytes, a stateful reader, matching, the reference target.

Frames by fields (the draft's message and field names, docs/profiles/rsio.md):

    {type: clientHello, version: 0, extensions: [5]}        serverHello the same
    {type: goodbye, reason: "bye"}
    {type: subscribe, publisher: "test/range/3", subscriber: 1, initialDemand: 3}
    {type: request, subscriber: 1, demand: 2}               {type: cancel, subscriber: 1}
    {type: subscribed, subscriber: 1, elementSize: 0}
    {type: onNext, subscriber: 1, element: {hex: "00ff"}}   or u64: 7 (8 bytes big-endian);
                                                            elementSize: 4 sends it in fixed-size mode
    {type: onNextPacked, subscriber: 1, elements: [{size: 4, offset: 1}, ...]}
    {type: onNextPart, subscriber: 1, element: 7, data: {size: 100}}   onNextLastPart the same
    {type: onComplete, subscriber: 1}                       {type: onError, subscriber: 1, error: "x"}
    {type: 70, hex: "01 02"}                                any type varint followed by raw bytes
                                                            (also {type: request, hex: ...}: a malformed body)
    {batch: [{type: request, ...}, {type: cancel, ...}]}    several messages in one write

Byte fields take a payload spec: a UTF-8 string, {hex: ...}, {utf8: ...} or {size: N, offset: K}
(byte i is (K + i) mod 256, the test services' pattern).

The reader decodes the target's stream as a subscriber's driver would.  It remembers each
stream's elementSize from ``subscribed`` (fixed-size onNext and onNextPacked cannot be
delimited without it) and joins split elements, so what it yields is what an application
would see:

* onNext            -> one frame: type onNext, subscriber, element, value
* onNextPacked      -> one frame per element: type onNextPacked, subscriber, element, value,
                       count (elements in the message), index (0-based)
* onNextPart        -> nothing yet (the part is kept)
* onNextLastPart    -> one frame: type onNextLastPart, subscriber, element (the Id), data (the
                       last part), value (every part of that element joined in order), parts
* every other message -> one frame with its fields

``value`` is the delivered element whatever carried it, and ``u64`` its value when it is 8
bytes (test/range elements).  ``type: element`` in an expectation matches any frame that
delivers an element.  Every message is bounded (64 MiB, like the STMP adapter), and so are a
joined element and the number of elements open at once.  A type the suite did not negotiate
(>= 64) or a non-minimal varint from the target is invalid input: the case FAILS.
"""

from __future__ import annotations

import asyncio
from typing import Any

from conformance.protocols.base import Frame, ProtocolAdapter
from conformance.protocols.frame_specs import check_frame_specs
from conformance.scenario.values import build_payload, payload_matches, short
from reference_impl.common.errors import CodecError, IncompleteFrame
from reference_impl.common.varint import encode_uvarint
from reference_impl.rsio import codec

HARNESS_MAX_MESSAGE = 64 * 1024 * 1024
HARNESS_MAX_ELEMENT = 64 * 1024 * 1024
HARNESS_MAX_OPEN_PARTS = 1024

NAMES = {
    1: "clientHello", 2: "serverHello", 3: "goodbye", 4: "subscribe", 5: "request",
    6: "cancel", 7: "subscribed", 8: "onNext", 9: "onComplete", 10: "onError",
    11: "onNextPacked", 12: "onNextPart", 13: "onNextLastPart",
}
NUMBERS = {name: number for number, name in NAMES.items()}
ELEMENT = "element"  # virtual type: any frame delivering one element

# Fields by message type, as the draft names them (send and match).
FIELDS: dict[str, tuple[str, ...]] = {
    "clientHello": ("version", "extensions"),
    "serverHello": ("version", "extensions"),
    "goodbye": ("reason",),
    "subscribe": ("publisher", "subscriber", "initialDemand"),
    "request": ("subscriber", "demand"),
    "cancel": ("subscriber",),
    "subscribed": ("subscriber", "elementSize"),
    "onNext": ("subscriber", "element"),
    "onComplete": ("subscriber",),
    "onError": ("subscriber", "error"),
    "onNextPacked": ("subscriber", "elements"),
    "onNextPart": ("subscriber", "element", "data"),
    "onNextLastPart": ("subscriber", "element", "data"),
}
SEND_ONLY = {"onNext": ("u64", "elementSize")}
# What the reader adds to element-carrying frames.
DELIVERY = ("value", "u64")
MATCH_EXTRA = {
    "onNext": DELIVERY,
    "onNextPacked": DELIVERY + ("count", "index", "element"),
    "onNextLastPart": DELIVERY + ("parts",),
    ELEMENT: ("subscriber", "value", "u64", "parts", "count", "index"),
}


def _key(name: str) -> str:
    return str(name).lower().replace("_", "").replace("-", "")


_BY_KEY = {_key(n): n for n in NUMBERS}


def type_name(value: Any, *, virtual: bool = False) -> str | int:
    """Canonical type: a draft name, or an int for a type rsio/0 does not assign."""
    if isinstance(value, bool):
        raise CodecError("scenario", f"type {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise CodecError("scenario", f"type {value} is negative")
        return NAMES.get(value, value)
    if virtual and _key(value) == ELEMENT:
        return ELEMENT
    name = _BY_KEY.get(_key(value))
    if name is None:
        raise CodecError("scenario", f"unknown rsio type {value!r} (known: {', '.join(NUMBERS)}"
                                     + (", element" if virtual else "") + ", or a number)")
    return name


# -- sending ---------------------------------------------------------------------

def _bytes(spec: Any) -> bytes:
    return build_payload(spec)


def _int(spec: dict[str, Any], name: str, default: int | None = None) -> int:
    value = spec.get(name, default)
    if value is None:
        raise CodecError("scenario", f"field {name!r} is required")
    if isinstance(value, bool) or not isinstance(value, int):
        raise CodecError("scenario", f"field {name!r} must be an integer, got {value!r}")
    return value


def build_message(spec: dict[str, Any]) -> tuple[codec.Message, int]:
    """The message and the element size to encode it with."""
    name = type_name(spec["type"])
    sid = spec.get("subscriber", 1)
    if name in ("clientHello", "serverHello"):
        cls = codec.ClientHello if name == "clientHello" else codec.ServerHello
        return cls(_int(spec, "version", 0), tuple(spec.get("extensions", ()))), 0
    if name == "goodbye":
        return codec.Goodbye(str(spec.get("reason", ""))), 0
    if name == "subscribe":
        return codec.Subscribe(str(spec.get("publisher", "")), sid, _int(spec, "initialDemand", 0)), 0
    if name == "request":
        return codec.Request(sid, _int(spec, "demand")), 0
    if name == "cancel":
        return codec.Cancel(sid), 0
    if name == "subscribed":
        return codec.Subscribed(sid, _int(spec, "elementSize", 0)), 0
    if name == "onNext":
        if "u64" in spec:
            element = _int(spec, "u64").to_bytes(8, "big")
        else:
            element = _bytes(spec.get("element"))
        return codec.OnNext(sid, element), _int(spec, "elementSize", 0)
    if name == "onComplete":
        return codec.OnComplete(sid), 0
    if name == "onError":
        return codec.OnError(sid, str(spec.get("error", ""))), 0
    if name == "onNextPacked":
        elements = tuple(_bytes(e) for e in spec.get("elements", ()))
        sizes = {len(e) for e in elements}
        if len(sizes) > 1:
            raise CodecError("scenario", f"onNextPacked elements of different sizes {sorted(sizes)}")
        return codec.OnNextPacked(sid, elements), (sizes.pop() if sizes else 1)
    cls = codec.OnNextPart if name == "onNextPart" else codec.OnNextLastPart
    return cls(sid, _int(spec, "element", 0), _bytes(spec.get("data"))), 0


def encode(spec: dict[str, Any], transport: str) -> list[bytes | str]:
    if transport != "tcp":
        raise CodecError("scenario", f"rsio runs over tcp here, not {transport}")
    if "batch" in spec:  # several messages in one write, so the target reads them together
        return [b"".join(data for frame in spec["batch"] for data in encode(frame, transport))]
    if "type" not in spec:
        raise CodecError("scenario", "an rsio frame needs a type")
    if "hex" in spec:  # the type varint, then raw bytes: unknown types and malformed bodies
        number = spec["type"] if isinstance(spec["type"], int) else NUMBERS[type_name(spec["type"])]
        return [encode_uvarint(number) + bytes.fromhex(spec["hex"].replace(" ", ""))]
    if isinstance(type_name(spec["type"]), int):
        raise CodecError("scenario", f"type {spec['type']} is not an rsio/0 message: give its bytes with hex")
    message, element_size = build_message(spec)
    return [codec.encode_message(message, element_size=element_size)]


# -- receiving -------------------------------------------------------------------

def _fields_of(message: codec.Message) -> dict[str, Any]:
    name = NAMES[message.TYPE]
    if name in ("clientHello", "serverHello"):
        return {"type": name, "version": message.version, "extensions": list(message.extensions)}
    if name == "goodbye":
        return {"type": name, "reason": message.reason}
    if name == "subscribe":
        return {"type": name, "publisher": message.publisher, "subscriber": message.subscriber,
                "initialDemand": message.initial_demand}
    if name == "request":
        return {"type": name, "subscriber": message.subscriber, "demand": message.demand}
    if name == "subscribed":
        return {"type": name, "subscriber": message.subscriber, "elementSize": message.element_size}
    if name == "onError":
        return {"type": name, "subscriber": message.subscriber, "error": message.error}
    return {"type": name, "subscriber": message.subscriber}  # cancel, onComplete


def _delivery(fields: dict[str, Any], value: bytes) -> dict[str, Any]:
    fields["value"] = value
    if len(value) == 8:
        fields["u64"] = int.from_bytes(value, "big")
    return fields


def summarize(f: dict[str, Any]) -> str:
    parts = [f"rsio {f['type']}"]
    for name, value in f.items():
        if name in ("type", "value", "u64") or (name == "element" and isinstance(value, bytes)):
            continue
        if isinstance(value, bytes):
            parts.append(f"{name}={short(value)} ({len(value)} bytes)")
        else:
            parts.append(f"{name}={value!r}")
    if "value" in f:
        value = f["value"]
        parts.append(f"value={short(value)} ({len(value)} bytes)" + (f" u64={f['u64']}" if "u64" in f else ""))
    return " ".join(parts)


class RsioReader:
    """Decodes the target's byte stream, fed in any chunks, into frames (see the module doc)."""

    def __init__(self, max_message: int = HARNESS_MAX_MESSAGE, max_element: int = HARNESS_MAX_ELEMENT,
                 max_open_parts: int = HARNESS_MAX_OPEN_PARTS) -> None:
        self.max_message = max_message
        self.max_element = max_element
        self.max_open_parts = max_open_parts
        self._buf = bytearray()
        self._sizes: dict[int, int] = {}  # elementSize per subscriber Id, from the last subscribed
        self._parts: dict[tuple[int, int], tuple[bytearray, int]] = {}

    @property
    def pending(self) -> int:
        return len(self._buf)

    def feed(self, data: bytes | str) -> list[Frame]:
        if isinstance(data, str):
            data = data.encode()
        self._buf += data
        frames: list[Frame] = []
        offset = 0
        try:
            while offset < len(self._buf):
                try:
                    message, end = codec.decode_message(
                        self._buf, offset, max_message=self.max_message,
                        element_size=lambda sid: self._sizes.get(sid, 0))
                except IncompleteFrame:
                    break
                offset = end
                frames.extend(self._frames(message))
        finally:
            del self._buf[:offset]
        return frames

    def _frames(self, message: codec.Message) -> list[Frame]:
        if isinstance(message, codec.ExtensionMessage):  # never: no layouts are known
            raise CodecError("unknown-extension-type", str(message.type))
        name = NAMES[message.TYPE]
        if isinstance(message, codec.Subscribed):
            self._sizes[message.subscriber] = message.element_size
        if isinstance(message, codec.OnNext):
            fields = _delivery({"type": name, "subscriber": message.subscriber, "element": message.element},
                               message.element)
            return [Frame(fields, summarize(fields))]
        if isinstance(message, codec.OnNextPacked):
            out = []
            for index, element in enumerate(message.elements):
                fields = _delivery({"type": name, "subscriber": message.subscriber, "element": element,
                                    "count": len(message.elements), "index": index}, element)
                out.append(Frame(fields, summarize(fields)))
            return out
        if isinstance(message, (codec.OnNextPart, codec.OnNextLastPart)):
            key = (message.subscriber, message.element)
            if key not in self._parts and len(self._parts) >= self.max_open_parts:
                raise CodecError("too-many-partial-elements", f"more than {self.max_open_parts} split elements open")
            buffer, count = self._parts.pop(key, (bytearray(), 0))
            if len(buffer) + len(message.data) > self.max_element:
                raise CodecError("element-too-large", f"a split element over {self.max_element} bytes")
            buffer += message.data
            if isinstance(message, codec.OnNextPart):
                self._parts[key] = (buffer, count + 1)
                return []
            fields = _delivery({"type": name, "subscriber": message.subscriber, "element": message.element,
                                "data": message.data, "parts": count + 1}, bytes(buffer))
            return [Frame(fields, summarize(fields))]
        fields = _fields_of(message)
        return [Frame(fields, summarize(fields))]


def new_reader(transport: str) -> RsioReader:
    return RsioReader()


# -- matching and checking -------------------------------------------------------

def normalize(spec: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in spec.items():
        if key == "type":
            if isinstance(value, dict):
                out[key] = {k: ([type_name(x, virtual=True) for x in v] if k == "in" else type_name(v, virtual=True))
                            for k, v in value.items()}
            else:
                out[key] = type_name(value, virtual=True)
        elif key == "extensions" and isinstance(value, (list, tuple)):
            out[key] = [int(v) for v in value]
        else:
            out[key] = value
    return out


class RsioAdapter(ProtocolAdapter):
    def field_matches(self, key: str, expected: Any, frame: Frame) -> tuple[bool, str]:
        # `type: element` stands for every frame that delivers an element; any byte field
        # (data, value, element) takes a payload spec, not only one named `payload`.
        if key == "type" and expected == ELEMENT:
            return "value" in frame.fields, f"{frame} delivers no element"
        actual = frame.fields.get(key)
        if isinstance(actual, bytes):
            ok, why = payload_matches(expected, actual)
            return ok, f"{key}: {why}"
        return super().field_matches(key, expected, frame)

    def never_both(self, key: str, one: Any, other: Any) -> bool:
        # `type: element` matches several types, and byte fields take payload specs
        return key == "type" and ELEMENT not in (one, other) and super().never_both(key, one, other)


def _allowed_keys(spec: dict[str, Any], *, send: bool) -> set[str] | None:
    """Field names allowed with this spec's type (None: the type itself is wrong)."""
    if "type" not in spec:
        if send:
            return None
        return {"type"} | {f for fs in FIELDS.values() for f in fs} | {f for fs in MATCH_EXTRA.values() for f in fs}
    try:
        kind = spec["type"]
        if isinstance(kind, dict) and not send:  # {in: [...]}: the union of those types' fields
            names = [type_name(x, virtual=True) for x in kind.get("in", [])]
        else:
            names = [type_name(kind, virtual=not send)]
    except CodecError:
        return None
    keys = {"type"}
    for name in names:
        if isinstance(name, int):
            keys |= {"hex"}
            continue
        keys |= set(FIELDS.get(name, ()))
        keys |= set(SEND_ONLY.get(name, ()) if send else MATCH_EXTRA.get(name, ()))
        if send:
            keys.add("hex")
    return keys


def frame_check(case: dict[str, Any]) -> list[tuple[tuple, str]]:
    def send(spec: dict, path: tuple) -> list[tuple[tuple, str]]:
        if "batch" not in spec:
            return [] if {"hex"} >= set(spec) or {"text"} >= set(spec) else check_frame(spec, path, send_side=True)
        if set(spec) != {"batch"} or not isinstance(spec["batch"], list) or not spec["batch"]:
            return [(path + ("batch",), "batch is a non-empty list of frames, alone in its send")]
        problems = []
        for j, frame in enumerate(spec["batch"]):
            if not isinstance(frame, dict) or "batch" in frame:
                problems.append((path + ("batch", j), "a batch item is one frame"))
            else:
                problems += check_frame(frame, path + ("batch", j), send_side=True)
        return problems

    def match(spec: dict, path: tuple) -> list[tuple[tuple, str]]:
        return check_frame(spec, path, send_side=False)

    def check_frame(spec: dict, path: tuple, *, send_side: bool) -> list[tuple[tuple, str]]:
        allowed = _allowed_keys(spec, send=send_side)
        if allowed is None:
            if "type" not in spec:
                return [(path, "an rsio frame needs a type")]
            try:
                type_name(spec["type"], virtual=not send_side)
            except CodecError as exc:
                return [(path + ("type",), str(exc))]
            return [(path + ("type",), f"type {spec['type']!r} cannot be used here")]
        unknown = sorted(set(spec) - allowed)
        if unknown:
            what = spec.get("type", "any type")
            return [(path + (unknown[0],), f"unknown rsio field {unknown[0]!r} for {what} "
                                           f"(known: {', '.join(sorted(allowed))})")]
        if send_side and "hex" in spec and set(spec) != {"type", "hex"}:
            return [(path + ("hex",), "hex gives the whole body after the type: no other fields with it")]
        if send_side and not isinstance(type_name(spec["type"]), str) and "hex" not in spec:
            return [(path + ("type",), f"type {spec['type']} is not an rsio/0 message: give its bytes with hex")]
        try:
            concrete = {k: v for k, v in spec.items() if not (isinstance(v, str) and v.startswith("="))}
            normalize(concrete)
            if send_side and "hex" not in spec and not any(isinstance(v, str) and v.startswith("=") for v in spec.values()):
                build_message(concrete)
        except (CodecError, ValueError, TypeError) as exc:
            return [(path, str(exc))]
        return []

    return check_frame_specs(case, send=send, match=match)


# -- reference target --------------------------------------------------------------

async def start_reference(transport: str, params: dict[str, int]):
    from reference_impl.rsio.server import start_server
    if transport != "tcp":
        raise ValueError(f"the rsio reference serves tcp only, not {transport}")
    return await start_server("127.0.0.1", 0)


async def run_reference_client(url: str, testcase: str) -> int:
    from reference_impl.rsio.client import run_client_testcase
    return await run_client_testcase(url, testcase)


def serve(args) -> int:
    if args.role == "client":
        return asyncio.run(run_reference_client(args.connect, args.testcase))
    if (args.transport or "tcp") != "tcp":
        print("conformance serve rsio: only --transport tcp", flush=True)
        return 2
    from reference_impl.rsio.server import run_server
    run_server(args.host, args.port)
    return 0


HELLO = [
    {"send": {"type": "clientHello", "version": 0, "extensions": []}},
    {"expect": {"type": "serverHello", "version": 0}},
]

ADAPTER = RsioAdapter(
    name="rsio",
    transports=("tcp",),
    default_noise=[],
    # rsio defines no timers.  silence_ms: how long "nothing more arrives" is watched;
    # reply_ms: how long an answer the suite provoked may take.
    params={"silence_ms": 500, "reply_ms": 5000},
    ref_params={"silence_ms": 300, "reply_ms": 2000},
    macros={"hello": HELLO},
    new_reader=new_reader,
    encode=encode,
    normalize=normalize,
    frame_check=frame_check,
    start_reference=start_reference,
    run_reference_client=run_reference_client,
    serve=serve,
)
