"""Micromessage2 for the harness: frames by fields <-> bytes, a stateful reader, matching, the reference target.

Frames by field (``frame:`` names the kind; ``send`` and ``message`` are the same layout):

  {frame: handshake, major: 1, minor: 0, flags: 0, identity: "hulk", required: "json;dotnet", optional: ""}
      identity may be {len: N} (N ASCII letters) when sent; matched by ``identity`` or ``identity_len``
  {frame: send|message, seq: 1, destination: test/echo, properties: "k:v;", payload: ...,
   large: true (send: set LARGE_PAYLOAD on a short payload), continued: true,
   split: N (send: cut the payload into N-byte fragments, CONTINUED on all but the last)}
  {frame: command, payload: "subscribe;destination=test%2Ftopic"}  or  {frame: command, name: subscribe, args: {destination: test/topic}}
  {frame: extension, id: 3, payload: ...}  or  {frame: extension, id: 3, ack: 65535}  (ack = payload u16 BE)
  {frame: error, reason: "text"}
  {hex: "..."}  raw bytes (handled by the runner)

Frames read from the target carry, besides those fields: ``large`` (LARGE_PAYLOAD was set),
``fragments`` and ``max_fragment`` (CONTINUED fragments are joined into one frame, so a case
matches the whole payload and can bound the fragment size), ``ack`` on 2-byte EXTENSION
payloads, ``name``/``args`` on parseable COMMANDs, and ``reason``, ``reason_utf8``,
``reason_len`` on ERROR.

The reader knows the protocol's shape: the first item from the target is a handshake (or the
ERROR a peer sends instead: first byte 4, 12, 20 or 28, as in the reference codec); when the
target is a client (it spoke first and the suite answered with a handshake) its second item,
the final handshake message, is one too; everything after that is frames.  It is bounded by
``HARNESS_MAX_FRAME``: a length field past it (a 4 GiB LARGE_PAYLOAD) is refused as soon as it
is read, before any of the bytes it announces.
"""

from __future__ import annotations

import asyncio
import contextvars
from typing import Any

from conformance.protocols.base import Frame, ProtocolAdapter
from conformance.protocols.frame_specs import check_frame_specs
from conformance.scenario.values import build_payload, short
from reference_impl.common.errors import CodecError
from reference_impl.micromessage2 import codec
from reference_impl.micromessage2.codec import (
    CommandFrame, ErrorFrame, ExtensionFrame, Handshake, MessageFrame, StreamDecoder,
)
from reference_impl.micromessage2.extensions import Command, format_command, parse_command

# Large enough to read (and grade) a target's single 5 MiB frame; a 4 GiB length is refused at once.
HARNESS_MAX_FRAME = 64 * 1024 * 1024
HARNESS_MAX_MESSAGE = 64 * 1024 * 1024

_LARGE = int(codec.Flags.LARGE_PAYLOAD)
_HTTP = b"HTTP/"

KINDS = ("handshake", "message", "command", "extension", "error")
_KIND_ALIASES = {"send": "message", "message": "message", "handshake": "handshake", "command": "command",
                 "extension": "extension", "error": "error"}

_COMMON_SEND = {"frame", "large", "continued", "split", "payload"}
SEND_KEYS = {
    "handshake": {"frame", "major", "minor", "flags", "identity", "required", "optional"},
    "message": _COMMON_SEND | {"seq", "destination", "properties"},
    "command": _COMMON_SEND | {"name", "args"},
    "extension": _COMMON_SEND | {"id", "ack"},
    "error": _COMMON_SEND | {"reason"},
}
_COMMON_MATCH = {"frame", "large", "continued", "fragments", "max_fragment", "payload"}
MATCH_KEYS = {
    "handshake": {"frame", "major", "minor", "flags", "identity", "identity_len", "required", "optional"},
    "message": _COMMON_MATCH | {"seq", "destination", "properties"},
    "command": _COMMON_MATCH | {"name", "args"},
    "extension": _COMMON_MATCH | {"id", "ack"},
    "error": _COMMON_MATCH | {"reason", "reason_utf8", "reason_len"},
}
ALL_MATCH_KEYS = set().union(*MATCH_KEYS.values())


def _kind(value: Any) -> str:
    key = str(value).lower()
    if key not in _KIND_ALIASES:
        raise CodecError("scenario", f"unknown frame {value!r} (known: send, message, {', '.join(k for k in KINDS if k != 'message')})")
    return _KIND_ALIASES[key]


# --- the reader and the suite's own sends share what they know about the connection -----

class _FlagTrackingDecoder(StreamDecoder):
    """The reference stream decoder, remembering the flags byte of the last frame it returned."""

    def __init__(self, max_frame: int) -> None:
        super().__init__(max_frame)
        self.last_flags = 0

    def next_frame(self):
        first = self.peek()
        frame = super().next_frame()
        if frame is not None and first is not None:
            self.last_flags = first
        return frame


class StreamReader:
    """Items from the target: handshake(s) first, then frames; CONTINUED fragments joined."""

    def __init__(self) -> None:
        self._decoder = _FlagTrackingDecoder(HARNESS_MAX_FRAME)
        self.handshakes_seen = 0
        self.target_is_client = False
        self._suite_sent_handshake = False
        self._fragments: dict[type, list[codec.Frame]] = {}
        self._large: dict[type, list[bool]] = {}
        self._fragment_bytes = 0
        self._opening = bytearray()  # the target's first bytes, to name a foreign protocol

    def _sniff(self, data: bytes) -> None:
        """An HTTP answer reads as a handshake whose lists never end ("HTTP/1.1 ..." announces
        thousands of bytes): name it at once instead of waiting out the case deadline."""
        self._opening += data[:len(_HTTP) - len(self._opening)]
        if self._opening == _HTTP:
            line = data.split(b"\r\n", 1)[0][:60].decode("ascii", "replace") if data.startswith(_HTTP) else "HTTP/..."
            raise CodecError("foreign-protocol", f"the target answered with HTTP ({line!r}), not a Micromessage2 handshake")

    def suite_sends_handshake(self) -> None:
        """Called by encode() when the suite sends a handshake."""
        if not self._suite_sent_handshake and self.handshakes_seen >= 1:
            self.target_is_client = True  # the target spoke first: it is the client, its final message follows
        self._suite_sent_handshake = True

    def _handshake_position(self) -> bool:
        return self.handshakes_seen == 0 or (self.target_is_client and self.handshakes_seen == 1)

    def feed(self, data: bytes | str) -> list[Frame]:
        if isinstance(data, str):
            data = data.encode()
        if len(self._opening) < len(_HTTP):
            self._sniff(data)
        self._decoder.feed(data)
        out: list[Frame] = []
        while True:
            if self._handshake_position():
                item = self._decoder.next_handshake()
                if item is None:
                    break
                self.handshakes_seen += 1
                if isinstance(item, Handshake):
                    out.append(_handshake_frame(item))
                else:  # the ERROR a peer sends where a handshake belongs
                    out.append(_frame(item, [bool(self._decoder.last_flags & _LARGE)], 1, len(item.payload)))
                continue
            raw = self._decoder.next_frame()
            if raw is None:
                break
            whole = self._join(raw, bool(self._decoder.last_flags & _LARGE))
            if whole is not None:
                out.append(whole)
        return out

    def _join(self, raw: codec.Frame, large: bool) -> Frame | None:
        kind = type(raw)
        pending = self._fragments.get(kind)
        if pending is None and not raw.continued:
            return _frame(raw, [large], 1, len(raw.payload))
        if pending and not codec.same_header(pending[0], raw):
            raise CodecError("fragment-mismatch", "a fragment does not repeat the header (seq, destination, "
                                                  "properties or ID) of the one before")
        self._fragment_bytes += len(raw.payload)
        if self._fragment_bytes > HARNESS_MAX_MESSAGE:
            raise CodecError("too-large", f"fragments join to more than the harness limit of {HARNESS_MAX_MESSAGE} bytes")
        self._fragments.setdefault(kind, []).append(raw)
        self._large.setdefault(kind, []).append(large)
        if raw.continued:
            return None
        fragments = self._fragments.pop(kind)
        flags = self._large.pop(kind)
        whole = codec.join(fragments)
        self._fragment_bytes -= len(whole.payload)
        return _frame(whole, flags, len(fragments), max(len(f.payload) for f in fragments))

    @property
    def pending(self) -> int:
        return self._decoder.buffered + self._fragment_bytes


_CURRENT: contextvars.ContextVar[StreamReader | None] = contextvars.ContextVar("mm2_reader", default=None)


def new_reader(transport: str) -> StreamReader:
    reader = StreamReader()
    _CURRENT.set(reader)  # the case's sends tell it when the suite answers a client's hello
    return reader


# --- frames from the target as fields ----------------------------------------------------

def _handshake_frame(hs: Handshake) -> Frame:
    fields = {"frame": "handshake", "major": hs.major, "minor": hs.minor, "flags": hs.flags,
              "identity": hs.identity, "identity_len": len(hs.identity), "required": hs.required,
              "optional": hs.optional}
    return Frame(fields, f"MM2 handshake {hs.major}.{hs.minor} flags={hs.flags} identity={hs.identity[:40]!r} "
                         f"required={hs.required!r} optional={hs.optional!r}")


def _frame(frame: codec.Frame, large_flags: list[bool], fragments: int, max_fragment: int) -> Frame:
    fields: dict[str, Any] = {"payload": frame.payload, "large": any(large_flags), "continued": frame.continued,
                              "fragments": fragments, "max_fragment": max_fragment}
    if isinstance(frame, MessageFrame):
        fields.update(frame="message", seq=frame.seq, destination=frame.destination, properties=frame.properties)
        head = f"MESSAGE/SEND seq={frame.seq} destination={frame.destination!r} properties={frame.properties!r}"
    elif isinstance(frame, ExtensionFrame):
        fields.update(frame="extension", id=frame.ext_id)
        if len(frame.payload) == 2:
            fields["ack"] = int.from_bytes(frame.payload, "big")
        head = f"EXTENSION id={frame.ext_id}"
    elif isinstance(frame, CommandFrame):
        fields["frame"] = "command"
        try:
            command = parse_command(frame.payload.decode("ascii"))
            fields.update(name=command.name, args=dict(command.arguments))
        except (CodecError, UnicodeDecodeError):
            pass
        head = "COMMAND"
    else:
        try:
            frame.payload.decode("utf-8")
            utf8 = True
        except UnicodeDecodeError:
            utf8 = False
        fields.update(frame="error", reason=frame.payload.decode("utf-8", errors="replace"), reason_utf8=utf8,
                      reason_len=len(frame.payload))
        head = f"ERROR reason={fields['reason'][:80]!r}"
    extra = []
    if fields["large"]:
        extra.append("LARGE")
    if frame.continued:
        extra.append("CONTINUED")
    if fragments > 1:
        extra.append(f"{fragments} fragments, largest {max_fragment} bytes")
    payload = f" payload={short(frame.payload)} ({len(frame.payload)} bytes)" if frame.payload and fields["frame"] != "error" else ""
    return Frame(fields, f"MM2 {head}{payload}" + (f" [{', '.join(extra)}]" if extra else ""))


# --- frames from the suite -----------------------------------------------------------------

def _identity(value: Any) -> str:
    if isinstance(value, dict) and "len" in value:
        letters = "abcdefghijklmnopqrstuvwxyz"
        return "".join(letters[i % 26] for i in range(value["len"]))
    return "" if value is None else str(value)


def _payload(spec: dict[str, Any]) -> bytes:
    return build_payload(spec.get("payload"))


def build_frame(spec: dict[str, Any]) -> codec.Frame | Handshake:
    kind = _kind(spec.get("frame", "send"))
    continued = bool(spec.get("continued", False))
    if kind == "handshake":
        return Handshake(spec.get("major", 1), spec.get("minor", 0), _identity(spec.get("identity", "")),
                         spec.get("required", ""), spec.get("optional", ""), spec.get("flags", 0))
    if kind == "message":
        return MessageFrame(spec.get("seq", 1), spec.get("destination", ""), spec.get("properties", ""),
                            _payload(spec), continued)
    if kind == "extension":
        payload = spec["ack"].to_bytes(2, "big") if "ack" in spec else _payload(spec)
        return ExtensionFrame(spec.get("id", 1), payload, continued)
    if kind == "command":
        if "name" in spec:
            payload = format_command(Command(spec["name"], {k: str(v) for k, v in (spec.get("args") or {}).items()})).encode("ascii")
        else:
            payload = _payload(spec)
        return CommandFrame(payload, continued)
    payload = spec["reason"].encode("utf-8") if "reason" in spec else _payload(spec)
    return ErrorFrame(payload, continued)


def encode(spec: dict[str, Any], transport: str) -> list[bytes | str]:
    item = build_frame(spec)
    if isinstance(item, Handshake):
        reader = _CURRENT.get()
        if reader is not None:
            reader.suite_sends_handshake()
        return [codec.encode_handshake(item)]
    if "split" in spec:
        return [codec.encode_frame(f, force_large=bool(spec.get("large"))) for f in codec.split(item, int(spec["split"]))]
    return [codec.encode_frame(item, force_large=bool(spec.get("large")))]


# --- matching --------------------------------------------------------------------------------

def normalize(spec: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in spec.items():
        if key == "frame":
            out[key] = _kind(value)
        elif key == "identity" and isinstance(value, dict) and "len" in value:
            out["identity_len"] = value["len"]
        else:
            out[key] = value
    return out


class Micromessage2Adapter(ProtocolAdapter):
    def matches(self, spec: dict[str, Any], frame: Frame) -> tuple[bool, str]:
        # {starts_with: "..."} for text fields: a server may append its own suggestions to a list;
        # {lacks: NAME} for an extension list: no item of it is named NAME (whatever else it lists)
        plain = {}
        for key, expected in spec.items():
            if isinstance(expected, dict) and "starts_with" in expected:
                actual = frame.fields.get(key)
                if not isinstance(actual, str) or not actual.startswith(expected["starts_with"]):
                    return False, f"{key} is {actual!r}, expected it to start with {expected['starts_with']!r}"
            elif isinstance(expected, dict) and "lacks" in expected:
                actual = frame.fields.get(key)
                names = [item.split(":", 1)[0] for item in actual.split(";")] if isinstance(actual, str) else None
                if names is None or expected["lacks"] in names:
                    return False, f"{key} is {actual!r}, expected it not to list {expected['lacks']!r}"
            else:
                plain[key] = expected
        return super().matches(plain, frame)


def frame_check(case: dict[str, Any]) -> list[tuple[tuple, str]]:
    def send(spec: dict, path: tuple) -> list[tuple[tuple, str]]:
        return [] if set(spec) == {"hex"} else check(spec, SEND_KEYS, path, sending=True)

    def match(spec: dict, path: tuple) -> list[tuple[tuple, str]]:
        return check(spec, MATCH_KEYS, path, sending=False)

    def check(spec: dict, table: dict[str, set[str]], path: tuple, sending: bool) -> list[tuple[tuple, str]]:
        if sending and "frame" not in spec:
            return [(path, "a frame sent by fields needs `frame:` (handshake, send, command, extension or error)")]
        try:
            kind = _kind(spec["frame"]) if "frame" in spec else None
        except CodecError as exc:
            return [(path + ("frame",), str(exc))]
        allowed = table[kind] if kind else ALL_MATCH_KEYS
        unknown = sorted(set(spec) - allowed)
        if unknown:
            what = f"{kind} frame" if kind else "Micromessage2 frame"
            return [(path + (unknown[0],), f"unknown {what} field {unknown[0]!r} (known: {', '.join(sorted(allowed))})")]
        if sending and not any(isinstance(v, str) and v.startswith("=") for v in _leaves(spec)):
            try:
                encode(spec, "tcp")
            except (CodecError, ValueError, TypeError, KeyError, AttributeError) as exc:
                return [(path, f"cannot encode this frame: {exc}")]
        return []

    return check_frame_specs(case, send=send, match=match)


def _leaves(value: Any):
    if isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, list):
        for v in value:
            yield from _leaves(v)
    else:
        yield value


# --- reference targets ------------------------------------------------------------------------

async def start_reference(transport: str, params: dict[str, int]):
    from reference_impl.micromessage2.server import start_server
    return await start_server("127.0.0.1", 0, read_timeout=params["read_timeout_ms"] / 1000)


async def run_reference_client(url: str, testcase: str) -> int:
    from reference_impl.micromessage2.client import run_client_testcase
    return await run_client_testcase(url, testcase)


def serve(args) -> int:
    if args.role == "client":
        return asyncio.run(run_reference_client(args.connect, args.testcase))
    from reference_impl.micromessage2.server import run_server
    timers = {"read_timeout": args.read_timeout} if getattr(args, "read_timeout", None) is not None else {}
    run_server(args.host, args.port, **timers)
    return 0


# --- macros: the three-message handshake with a given required list ------------------------------

SUITE_IDENTITY = "conformance-suite"


def _handshake_macro(required: str = "", optional: str = "") -> list[dict[str, Any]]:
    return [
        {"send": {"frame": "handshake", "major": 1, "minor": 0, "identity": SUITE_IDENTITY,
                  "required": required, "optional": optional}},
        {"expect": {"frame": "handshake", "major": 1}},
        {"send": {"frame": "handshake", "major": 1, "minor": 0, "identity": SUITE_IDENTITY,
                  "required": required, "optional": ""}},
    ]


MACROS = {
    # no extensions: no acks, IDs unused
    "handshake": _handshake_macro(),
    # one required extension each, so its ID is 1
    "handshake-ack": _handshake_macro("ack"),
    "handshake-batch-ack": _handshake_macro("batch-ack"),
    "handshake-batch-ack-3": _handshake_macro("batch-ack:max-count=3"),
    "handshake-batch-ack-5": _handshake_macro("batch-ack:max-count=5"),
    "handshake-batch-ack-1000": _handshake_macro("batch-ack:max-count=1000"),
    "handshake-pubsub": _handshake_macro("pubsub"),
    # json=1, dotnet=2
    "handshake-json-dotnet": _handshake_macro("json;dotnet"),
}

#: destinations served per connection (the profile's echo and push); any other one is the broker's
_OWN_DESTINATIONS = ("test/echo", "test/push")


def shared_state(spec: dict[str, Any]) -> str | None:
    """Subscriptions are the server's, shared by every connection: a subscribe, an unsubscribe or a
    SEND to a destination other than echo and push reaches (or misses) another case's subscriber."""
    kind = str(spec.get("frame", "send"))
    if kind == "command":
        name = str(spec.get("name") or str(spec.get("payload", "")).split(";")[0]).lower()
        return {"subscribe": "subscribes to a destination", "unsubscribe": "unsubscribes from a destination"}.get(name)
    destination = spec.get("destination")
    if kind == "send" and destination is not None and destination not in _OWN_DESTINATIONS:
        return f"publishes to {destination!r}"
    return None

ADAPTER = Micromessage2Adapter(
    name="micromessage2",
    transports=("tcp",),
    default_noise=[],
    # silence_ms: the shortest "nothing more arrives" window; longer ones add to it (scenario/timing.py)
    params={"read_timeout_ms": 5000, "silence_ms": 150},
    # the in-process reference gives up on a stalled frame after 1 s so that case takes seconds
    ref_params={"read_timeout_ms": 1000},
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
