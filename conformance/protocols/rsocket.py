"""RSocket 1.0 for the harness: frames by fields <-> bytes, a reader, matching, the reference target.

Frames by fields (Protocol.md's frame and field names, docs/profiles/rsocket.md):

    {type: SETUP}                                  version "1.0", keepalive 30000, lifetime 90000,
                                                   metadata_mime/data_mime "text/plain" unless given;
                                                   also resume_token, lease, metadata, data
    {type: REQUEST_RESPONSE, stream: 1, data: "echo:hi", metadata: "m"}    REQUEST_FNF the same
    {type: REQUEST_STREAM, stream: 3, n: 5, data: "range:10"}              REQUEST_CHANNEL adds complete
    {type: REQUEST_N, stream: 3, n: 2}             {type: CANCEL, stream: 3}
    {type: PAYLOAD, stream: 5, data: "x", next: true, complete: false, follows: false}
    {type: ERROR, stream: 0, code: INVALID_SETUP, data: "why"}            code: a name or a number
    {type: KEEPALIVE, respond: true, position: 0, data: "ping"}
    {type: METADATA_PUSH, metadata: "m"}           {type: LEASE, ttl: 1000, number: 5}
    {type: RESUME, resume_token: "t", server_position: 0, client_position: 0}
    {type: RESUME_OK, position: 0}                 {type: EXT, extended_type: 7, payload: {hex: "01"}}

Every frame takes ``stream`` (default 0 for connection frames, ERROR and EXT, else 1) and ``ignore``
(the I flag).  ``metadata`` present means the M flag.  Byte fields take a payload spec (a UTF-8
string, {hex: ...}, {utf8: ...} or {size: N, offset: K}).  ``composite: [{mime: 0x7E | "a/b",
data: ...}, ...]`` builds composite metadata (Extensions/CompositeMetadata.md) as ``metadata``,
on both sides.

Raw input, for frames the codec refuses to build:

    {type: METADATA_PUSH, flags: 0, hex: "6d"}     the header (stream, type, I/M/flags word from
                                                   ``flags`` and ``ignore``), then these body bytes
    {type: 0x30, hex: ""}                          a frame type outside the spec's table
    {frame: "000000000c00..."}                     a whole frame (header included), hex
    {batch: [...]}                                 several frames in one write (TCP)
    {part: [0, 4], type: ...}                      only bytes [a, b) of the frame's TCP encoding
                                                   (length prefix included; b null: to the end)

On TCP each frame gets its 24-bit length prefix; on WebSocket each is one binary message.

The reader decodes what the target sends, rejecting any frame Protocol.md calls invalid, and
joins fragments (F flag) the way a receiver must: a fragmented message becomes one frame with
the first frame's type and fields, the joined metadata and data, the last fragment's C and N,
and ``fragments`` (how many frames carried it).  Every frame has ``parity`` (odd, even or zero
for stream 0), so a case can say which side allocated a stream.
"""

from __future__ import annotations

import asyncio
from typing import Any

from conformance.protocols.base import Frame, ProtocolAdapter
from conformance.protocols.frame_specs import check_frame_specs
from conformance.scenario.values import build_payload, payload_matches, short
from reference_impl.common.errors import CodecError
from reference_impl.rsocket import codec

HARNESS_MAX_REASSEMBLY = 64 << 20
HARNESS_MAX_OPEN_FRAGMENTED = 64

TYPES = {name: number for number, name in codec.FRAME_NAMES.items()}
NAMES = codec.FRAME_NAMES
CLASS_NAMES = {cls: NAMES[number] for cls, number in codec.FRAME_TYPES.items()}

ERROR_CODES = {
    "INVALID_SETUP": codec.INVALID_SETUP, "UNSUPPORTED_SETUP": codec.UNSUPPORTED_SETUP,
    "REJECTED_SETUP": codec.REJECTED_SETUP, "REJECTED_RESUME": codec.REJECTED_RESUME,
    "CONNECTION_ERROR": codec.CONNECTION_ERROR, "CONNECTION_CLOSE": codec.CONNECTION_CLOSE,
    "APPLICATION_ERROR": codec.APPLICATION_ERROR, "REJECTED": codec.REJECTED,
    "CANCELED": codec.CANCELED, "INVALID": codec.INVALID,
}
ERROR_NAMES = {number: name for name, number in ERROR_CODES.items()}

COMMON = ("type", "stream", "ignore")
#: the fields of each frame type, sent and matched
FIELDS: dict[str, tuple[str, ...]] = {
    "SETUP": ("version", "keepalive", "lifetime", "metadata_mime", "data_mime", "resume_token",
              "lease", "metadata", "data"),
    "LEASE": ("ttl", "number", "metadata"),
    "KEEPALIVE": ("respond", "position", "data"),
    "REQUEST_RESPONSE": ("metadata", "data", "follows"),
    "REQUEST_FNF": ("metadata", "data", "follows"),
    "REQUEST_STREAM": ("n", "metadata", "data", "follows"),
    "REQUEST_CHANNEL": ("n", "metadata", "data", "follows", "complete"),
    "REQUEST_N": ("n",),
    "CANCEL": (),
    "PAYLOAD": ("metadata", "data", "follows", "complete", "next"),
    "ERROR": ("code", "data"),
    "METADATA_PUSH": ("metadata",),
    "RESUME": ("version", "resume_token", "server_position", "client_position"),
    "RESUME_OK": ("position",),
    "EXT": ("extended_type", "payload", "metadata_flag"),
}
WITH_METADATA = {name for name, fields in FIELDS.items() if "metadata" in fields}
SEND_ONLY = ("part", "composite")
MATCH_ONLY = ("parity", "fragments", "composite")
BYTE_FIELDS = ("metadata", "data", "resume_token", "payload")


def type_name(value: Any) -> str | int:
    """A frame type by name (any case) or number; a number outside the table stays a number."""
    if isinstance(value, bool):
        raise CodecError("scenario", f"not a frame type: {value!r}")
    if isinstance(value, int):
        if not 0 <= value <= 0x3F:
            raise CodecError("scenario", f"frame type {value} does not fit in 6 bits")
        return NAMES.get(value, value)
    if isinstance(value, str) and value.upper() in TYPES:
        return value.upper()
    raise CodecError("scenario", f"unknown RSocket frame type {value!r} (known: {', '.join(TYPES)})")


def error_code(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.upper() in ERROR_CODES:
        return ERROR_CODES[value.upper()]
    raise CodecError("scenario", f"unknown error code {value!r} (known: {', '.join(ERROR_CODES)})")


def _version(value: Any) -> tuple[int, int]:
    text = str(value)
    major, _, minor = text.partition(".")
    if not (major.isdigit() and minor.isdigit()):
        raise CodecError("scenario", f"a version is 'MAJOR.MINOR', got {value!r}")
    return int(major), int(minor)


def composite_metadata(entries: Any) -> bytes:
    """Extensions/CompositeMetadata.md: per entry, a well-known id (high bit set) or an ASCII MIME
    type with its length minus one, then a 24-bit length and the entry's bytes."""
    if not isinstance(entries, list):
        raise CodecError("scenario", "composite is a list of {mime, data} entries")
    out = b""
    for entry in entries:
        if not isinstance(entry, dict) or set(entry) - {"mime", "data"} or "mime" not in entry:
            raise CodecError("scenario", f"a composite entry is {{mime, data}}, got {entry!r}")
        mime = entry["mime"]
        if isinstance(mime, int) and not isinstance(mime, bool):
            if not 0 <= mime <= 0x7F:
                raise CodecError("scenario", f"a well-known MIME id is 0..127, got {mime}")
            head = bytes([0x80 | mime])
        else:
            raw = str(mime).encode("ascii")
            if not 1 <= len(raw) <= 128:
                raise CodecError("scenario", "an explicit MIME type is 1 to 128 ASCII bytes")
            head = bytes([len(raw) - 1]) + raw
        data = build_payload(entry.get("data"))
        out += head + len(data).to_bytes(3, "big") + data
    return out


def _bytes(spec: dict[str, Any], name: str) -> bytes | None:
    return None if spec.get(name) is None else build_payload(spec[name])


def _int(spec: dict[str, Any], name: str, default: int) -> int:
    value = spec.get(name, default)
    if not isinstance(value, int) or isinstance(value, bool):
        raise CodecError("scenario", f"field {name!r} must be an integer, got {value!r}")
    return value


def build_frame(spec: dict[str, Any]) -> codec.Frame:
    """The codec frame a spec names (not the raw forms)."""
    name = type_name(spec["type"])
    if isinstance(name, int):
        raise CodecError("scenario", f"type {name} is not an RSocket frame: give its body with hex")
    connection = TYPES[name] in codec.CONNECTION_TYPES
    sid = _int(spec, "stream", 0 if connection or name in ("ERROR", "EXT") else 1)
    ignore = bool(spec.get("ignore", False))
    metadata = composite_metadata(spec["composite"]) if "composite" in spec else _bytes(spec, "metadata")
    data = _bytes(spec, "data") or b""
    follows = bool(spec.get("follows", False))
    if name == "SETUP":
        major, minor = _version(spec.get("version", "1.0"))
        return codec.Setup(major, minor, _int(spec, "keepalive", 30000), _int(spec, "lifetime", 90000),
                           str(spec.get("metadata_mime", "text/plain")), str(spec.get("data_mime", "text/plain")),
                           _bytes(spec, "resume_token"), bool(spec.get("lease", False)), metadata, data, ignore, sid)
    if name == "LEASE":
        return codec.Lease(_int(spec, "ttl", 1000), _int(spec, "number", 1), metadata, ignore, sid)
    if name == "KEEPALIVE":
        return codec.Keepalive(bool(spec.get("respond", True)), _int(spec, "position", 0), data, ignore, sid)
    if name == "REQUEST_RESPONSE":
        return codec.RequestResponse(sid, metadata, data, follows, ignore)
    if name == "REQUEST_FNF":
        return codec.RequestFnf(sid, metadata, data, follows, ignore)
    if name == "REQUEST_STREAM":
        return codec.RequestStream(sid, _int(spec, "n", 1), metadata, data, follows, ignore)
    if name == "REQUEST_CHANNEL":
        return codec.RequestChannel(sid, _int(spec, "n", 1), metadata, data, follows,
                                    bool(spec.get("complete", False)), ignore)
    if name == "REQUEST_N":
        return codec.RequestN(sid, _int(spec, "n", 1), ignore)
    if name == "CANCEL":
        return codec.Cancel(sid, ignore)
    if name == "PAYLOAD":
        return codec.Payload(sid, metadata, data, follows, bool(spec.get("complete", False)),
                             bool(spec.get("next", False)), ignore)
    if name == "ERROR":
        return codec.Error(sid, error_code(spec.get("code", "APPLICATION_ERROR")), data, ignore)
    if name == "METADATA_PUSH":
        return codec.MetadataPush(metadata or b"", ignore, sid)
    if name == "RESUME":
        major, minor = _version(spec.get("version", "1.0"))
        return codec.Resume(major, minor, _bytes(spec, "resume_token") or b"", _int(spec, "server_position", 0),
                            _int(spec, "client_position", 0), ignore, sid)
    if name == "RESUME_OK":
        return codec.ResumeOk(_int(spec, "position", 0), ignore, sid)
    return codec.Ext(sid, _int(spec, "extended_type", 1), _bytes(spec, "payload") or b"",
                     bool(spec.get("metadata_flag", False)), ignore)


def _raw_frame(spec: dict[str, Any]) -> bytes:
    """Header from the spec's type, stream, ignore and flags, then the hex body as given."""
    name = type_name(spec["type"])
    number = name if isinstance(name, int) else TYPES[name]
    sid = _int(spec, "stream", 0)
    flags = _int(spec, "flags", 0)
    if not 0 <= flags <= 0x1FF or not 0 <= sid <= 0xFFFFFFFF:
        raise CodecError("scenario", "flags are the 9 bits after the type (M and the per-type flags)")
    word = (number << 10) | flags | (codec.FLAG_I if spec.get("ignore") else 0)
    return sid.to_bytes(4, "big") + word.to_bytes(2, "big") + bytes.fromhex(str(spec["hex"]).replace(" ", ""))


def frame_bytes(spec: dict[str, Any]) -> bytes:
    """One frame without a length prefix."""
    if "frame" in spec:
        return bytes.fromhex(str(spec["frame"]).replace(" ", ""))
    if "hex" in spec:
        return _raw_frame(spec)
    return codec.encode_frame(build_frame(spec))


def _tcp(frame: bytes) -> bytes:
    return len(frame).to_bytes(3, "big") + frame


def encode(spec: dict[str, Any], transport: str) -> list[bytes | str]:
    if "batch" in spec:
        frames = [frame_bytes(f) for f in spec["batch"]]
        return [b"".join(_tcp(f) for f in frames)] if transport == "tcp" else list(frames)
    frame = frame_bytes(spec)
    if transport != "tcp":
        if "part" in spec:
            raise CodecError("scenario", "part cuts a TCP stream; a WebSocket message is sent whole")
        return [frame]
    wire = _tcp(frame)
    if "part" in spec:
        start, end = spec["part"]
        wire = wire[start:end]
    return [wire]


# -- receiving -------------------------------------------------------------------

def _fields_of(frame: codec.Frame) -> dict[str, Any]:
    name = CLASS_NAMES[type(frame)]
    sid = frame.stream_id
    fields: dict[str, Any] = {"type": name, "stream": sid, "ignore": frame.ignore,
                              "parity": "zero" if sid == 0 else ("odd" if sid % 2 else "even")}
    if isinstance(frame, codec.Setup):
        fields.update(version=f"{frame.major}.{frame.minor}", keepalive=frame.keepalive, lifetime=frame.lifetime,
                      metadata_mime=frame.metadata_mime, data_mime=frame.data_mime,
                      resume_token=frame.resume_token, lease=frame.lease, metadata=frame.metadata, data=frame.data)
    elif isinstance(frame, codec.Lease):
        fields.update(ttl=frame.ttl, number=frame.number, metadata=frame.metadata)
    elif isinstance(frame, codec.Keepalive):
        fields.update(respond=frame.respond, position=frame.last_position, data=frame.data)
    elif isinstance(frame, (codec.RequestResponse, codec.RequestFnf, codec.RequestStream, codec.RequestChannel)):
        fields.update(metadata=frame.metadata, data=frame.data, follows=frame.follows)
        if hasattr(frame, "initial_n"):
            fields["n"] = frame.initial_n
        if isinstance(frame, codec.RequestChannel):
            fields["complete"] = frame.complete
    elif isinstance(frame, codec.RequestN):
        fields["n"] = frame.n
    elif isinstance(frame, codec.Payload):
        fields.update(metadata=frame.metadata, data=frame.data, follows=frame.follows,
                      complete=frame.complete, next=frame.next)
    elif isinstance(frame, codec.Error):
        fields.update(code=frame.code, data=frame.data)
    elif isinstance(frame, codec.MetadataPush):
        fields["metadata"] = frame.metadata
    elif isinstance(frame, codec.Resume):
        fields.update(version=f"{frame.major}.{frame.minor}", resume_token=frame.token,
                      server_position=frame.last_received_server_position,
                      client_position=frame.first_available_client_position)
    elif isinstance(frame, codec.ResumeOk):
        fields["position"] = frame.last_received_client_position
    elif isinstance(frame, codec.Ext):
        fields.update(extended_type=frame.extended_type, payload=frame.payload, metadata_flag=frame.metadata_flag)
    return fields


def summarize(f: dict[str, Any]) -> str:
    parts = [f"rsocket {f['type']} stream={f['stream']}"]
    for name, value in f.items():
        if name in ("type", "stream", "parity") or value is None or value is False:
            continue
        if name == "code":
            parts.append(f"code={ERROR_NAMES.get(value, hex(value))}")
        elif isinstance(value, bytes):
            text = value.decode("utf-8", "replace") if len(value) <= 40 and value.isascii() else short(value)
            parts.append(f"{name}={text!r} ({len(value)} bytes)")
        else:
            parts.append(f"{name}={value!r}")
    return " ".join(parts)


class _Partial:
    def __init__(self, fields: dict[str, Any]) -> None:
        self.fields = fields
        self.metadata = None if fields.get("metadata") is None else bytearray(fields["metadata"])
        self.data = bytearray(fields.get("data", b""))
        self.count = 1

    @property
    def size(self) -> int:
        return len(self.data) + (len(self.metadata) if self.metadata is not None else 0)


class RSocketReader:
    """Decodes the target's frames (TCP bytes in any chunks, or WebSocket messages) and joins fragments."""

    def __init__(self, transport: str, max_reassembly: int = HARNESS_MAX_REASSEMBLY,
                 max_open: int = HARNESS_MAX_OPEN_FRAGMENTED) -> None:
        self.transport = transport
        self.max_reassembly = max_reassembly
        self.max_open = max_open
        self._decoder = codec.TcpDecoder()
        self._partials: dict[int, _Partial] = {}

    @property
    def pending(self) -> int:
        return self._decoder.buffered + sum(p.size for p in self._partials.values())

    def feed(self, data: bytes | str) -> list[Frame]:
        if self.transport != "tcp":
            return self._frames(codec.decode_websocket(data))
        if isinstance(data, str):
            data = data.encode()
        self._decoder.feed(data)
        out: list[Frame] = []
        while (frame := self._decoder.next_frame()) is not None:
            out.extend(self._frames(frame))
        return out

    def _frames(self, frame: codec.Frame) -> list[Frame]:
        if isinstance(frame, codec.Setup):
            _check_mime_types(frame)
        fields = _fields_of(frame)
        sid = frame.stream_id
        partial = self._partials.get(sid)
        if partial is not None:
            if not isinstance(frame, codec.Payload):
                if isinstance(frame, codec.RequestN):  # credit for the other direction: not part of the message
                    return [Frame(fields, summarize(fields))]
                if isinstance(frame, (codec.Cancel, codec.Error)):  # the message is abandoned
                    del self._partials[sid]
                    return [Frame(fields, summarize(fields))]
                raise CodecError("fragment-interrupted", f"{fields['type']} on stream {sid} between fragments")
            if frame.metadata is not None:
                if partial.data:
                    raise CodecError("metadata-after-data",
                                     "a fragment carries metadata after data began (Metadata MUST come first)")
                partial.metadata = (partial.metadata or bytearray()) + frame.metadata
            partial.data += frame.data
            partial.count += 1
            if partial.size > self.max_reassembly:
                raise CodecError("fragmented-message-too-large", f"over {self.max_reassembly} bytes")
            if frame.follows:
                return []
            del self._partials[sid]
            joined = dict(partial.fields)
            joined.update(metadata=None if partial.metadata is None else bytes(partial.metadata),
                          data=bytes(partial.data), follows=False, fragments=partial.count)
            if "complete" in joined or joined["type"] == "PAYLOAD":
                joined["complete"] = frame.complete
            if joined["type"] == "PAYLOAD":
                joined["next"] = partial.fields["next"] or frame.next
            return [Frame(joined, summarize(joined))]
        if fields.get("follows"):
            if len(self._partials) >= self.max_open:
                raise CodecError("too-many-fragmented-messages", f"more than {self.max_open} open")
            self._partials[sid] = _Partial(fields)
            return []
        if "follows" in fields:
            fields["fragments"] = 1
        return [Frame(fields, summarize(fields))]


def _check_mime_types(setup: codec.Setup) -> None:
    """A sender's rule the codec cannot see (it reads a MIME type as its length says): "The string
    MUST NOT be null terminated." (SETUP Frame)."""
    for what, mime in (("metadata", setup.metadata_mime), ("data", setup.data_mime)):
        if mime.endswith("\0"):
            raise CodecError("mime-null-terminated", f"the SETUP's {what} MIME type {mime[:40]!r} ends with a NUL "
                                                     f"(the string MUST NOT be null terminated)")


def new_reader(transport: str) -> RSocketReader:
    return RSocketReader(transport)


# -- matching and checking -------------------------------------------------------

def normalize(spec: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in spec.items():
        if key == "type":
            if isinstance(value, dict):
                out[key] = {k: ([type_name(x) for x in v] if k == "in" else type_name(v)) for k, v in value.items()}
            else:
                out[key] = type_name(value)
        elif key == "code":
            if isinstance(value, dict):
                out[key] = {k: ([error_code(x) for x in v] if k == "in" else error_code(v)) for k, v in value.items()}
            else:
                out[key] = error_code(value)
        elif key == "composite":
            out["metadata"] = {"hex": composite_metadata(value).hex()}
        elif key == "version":
            out[key] = "{}.{}".format(*_version(value))
        else:
            out[key] = value
    return out


class RSocketAdapter(ProtocolAdapter):
    def field_matches(self, key: str, expected: Any, frame: Frame) -> tuple[bool, str]:
        # byte fields take a payload spec; `metadata: null` means "no metadata (M clear)"
        if key in BYTE_FIELDS and key in frame.fields:
            actual = frame.fields[key]
            if expected is None or actual is None:
                ok = expected is None and actual is None
                return ok, f"{key} is {'absent' if actual is None else short(actual)}, expected " \
                           f"{'none' if expected is None else 'some'}"
            ok, why = payload_matches(expected, actual)
            return ok, f"{key}: {why}"
        return super().field_matches(key, expected, frame)

    def never_both(self, key: str, one: Any, other: Any) -> bool:
        return key not in BYTE_FIELDS and super().never_both(key, one, other)  # byte fields take payload specs


#: request-response routes that read what any connection left on the server (the profile's test service)
_SHARED_READS = ("last-fnf", "last-metadata-push")


def shared_state(spec: dict[str, Any]) -> str | None:
    """The test service keeps the last fire-and-forget text and METADATA_PUSH metadata for every
    connection ("the last one received wins"): a case that leaves one or reads one back would see
    another case's. Resume sessions, named by token, outlive their connection likewise."""
    kind, data = spec.get("type"), spec.get("data")
    if kind in ("RESUME", 0x0D) or (kind in ("SETUP", 0x01) and spec.get("resume_token") is not None):
        # a resume token names a session the server keeps apart from any connection: two cases
        # (or one case on both transports) with the same token would take each other's session
        return "names a resume session, which the server keeps for every connection"
    if kind in ("METADATA_PUSH", 0x0C):
        return "pushes metadata the server keeps for every connection"
    if kind in ("REQUEST_FNF", 0x05) and isinstance(data, str) and data.startswith("fnf:"):
        return "leaves a fire-and-forget text the server keeps for every connection"
    if kind in ("REQUEST_RESPONSE", 0x04) and data in _SHARED_READS:
        return f"reads {data!r}, which every connection's requests set"
    return None


def _allowed_keys(spec: dict[str, Any], *, send: bool) -> set[str] | None:
    extra = set(SEND_ONLY if send else MATCH_ONLY)
    if "type" not in spec:
        return None if send else {"type", "stream", "ignore", *MATCH_ONLY, *(f for fs in FIELDS.values() for f in fs)}
    kind = spec["type"]
    try:
        names = [type_name(x) for x in kind.get("in", [])] if isinstance(kind, dict) and not send \
            else [type_name(kind)]
    except (CodecError, AttributeError):
        return None
    keys = set(COMMON) | extra
    for name in names:
        if isinstance(name, int):
            keys |= {"hex", "flags"}
        else:
            keys |= set(FIELDS[name])
            if send:
                keys |= {"hex", "flags"}
    if not any(isinstance(n, str) and n in WITH_METADATA for n in names):
        keys.discard("composite")
    return keys


def frame_check(case: dict[str, Any]) -> list[tuple[tuple, str]]:
    def send(spec: dict, path: tuple) -> list[tuple[tuple, str]]:
        if {"hex"} >= set(spec) or {"text"} >= set(spec):
            return []
        if "frame" in spec:
            return [] if set(spec) <= {"frame", "part"} else [(path + ("frame",), "frame gives the whole frame: "
                                                                                "no other fields with it")]
        if "batch" in spec:
            if set(spec) != {"batch"} or not isinstance(spec["batch"], list) or not spec["batch"]:
                return [(path + ("batch",), "batch is a non-empty list of frames, alone in its send")]
            problems = []
            for j, frame in enumerate(spec["batch"]):
                if not isinstance(frame, dict) or "batch" in frame or "part" in frame:
                    problems.append((path + ("batch", j), "a batch item is one whole frame"))
                else:
                    problems += send(frame, path + ("batch", j))
            return problems
        return check_frame(spec, path, send_side=True)

    def match(spec: dict, path: tuple) -> list[tuple[tuple, str]]:
        return check_frame(spec, path, send_side=False)

    def check_frame(spec: dict, path: tuple, *, send_side: bool) -> list[tuple[tuple, str]]:
        if send_side and "type" not in spec:
            return [(path, "an RSocket frame needs a type (or frame: HEX)")]
        allowed = _allowed_keys(spec, send=send_side)
        if allowed is None:
            try:
                type_name(spec["type"])
            except CodecError as exc:
                return [(path + ("type",), str(exc))]
            return [(path + ("type",), f"type {spec['type']!r} cannot be used here")]
        unknown = sorted(set(spec) - allowed)
        if unknown:
            return [(path + (unknown[0],), f"unknown RSocket field {unknown[0]!r} for {spec.get('type', 'any type')} "
                                           f"(known: {', '.join(sorted(allowed))})")]
        if send_side and "hex" in spec and set(spec) - {"type", "stream", "ignore", "flags", "hex", "part"}:
            return [(path + ("hex",), "hex gives the body after the header: only stream, ignore and flags with it")]
        if send_side and "flags" in spec and "hex" not in spec:
            return [(path + ("flags",), "flags are for a raw frame (with hex); name the flags as fields instead")]
        if "part" in spec:
            part = spec["part"]
            if not (isinstance(part, list) and len(part) == 2 and isinstance(part[0], int)
                    and (part[1] is None or isinstance(part[1], int))):
                return [(path + ("part",), "part is [start, end] (end null: to the end of the frame)")]
        try:
            concrete = {k: v for k, v in spec.items() if not (isinstance(v, str) and v.startswith("="))}
            normalize(concrete)
            if send_side and concrete == spec:
                if "hex" in spec:
                    _raw_frame(spec)
                else:
                    codec.encode_frame(build_frame(spec))
        except (CodecError, ValueError, TypeError) as exc:
            return [(path, str(exc))]
        return []

    return check_frame_specs(case, send=send, match=match, exact_fields=BYTE_FIELDS)


# -- reference target --------------------------------------------------------------

def _transport(name: str) -> str:
    return "websocket" if name == "ws" else "tcp"


async def start_reference(transport: str, params: dict[str, int]):
    from reference_impl.rsocket.server import start_server
    return await start_server("127.0.0.1", 0, transport=_transport(transport))


async def run_reference_client(url: str, testcase: str) -> int:
    from reference_impl.rsocket.client import run_client_testcase
    return await run_client_testcase(url, testcase)


def serve(args) -> int:
    if args.role == "client":
        return asyncio.run(run_reference_client(args.connect, args.testcase))
    from reference_impl.rsocket.server import run_server
    run_server(args.host, args.port, transport=_transport(args.transport or "tcp"))
    return 0


#: the suite's SETUP: timers long enough that no case needs the suite to send KEEPALIVEs
SETUP = {"type": "SETUP", "version": "1.0", "keepalive": 30000, "lifetime": 90000,
         "metadata_mime": "text/plain", "data_mime": "text/plain"}
#: after a frame the spec says the target must survive: it still answers a request (stream 1001,
#: above any id the cases use before it)
SERVES = [
    {"send": {"type": "REQUEST_RESPONSE", "stream": 1001, "data": "echo:still-serving"}},
    {"expect": {"type": "PAYLOAD", "stream": 1001, "data": "still-serving", "complete": True, "next": True,
                "within_ms": "reply_ms"}},
]

ADAPTER = RSocketAdapter(
    name="rsocket",
    transports=("tcp", "ws"),
    # a responder may send KEEPALIVE(R) of its own at any time
    default_noise=[{"type": "KEEPALIVE"}],
    # silence_ms: how long "nothing more arrives" is watched; reply_ms: a reply the suite provoked;
    # pause_ms: the gap between two pieces of one frame sent in separate TCP writes
    params={"silence_ms": 500, "reply_ms": 3000, "pause_ms": 200},
    ref_params={"silence_ms": 300, "reply_ms": 2000},
    macros={"setup": [{"send": SETUP}], "serves": SERVES},
    new_reader=new_reader,
    encode=encode,
    normalize=normalize,
    frame_check=frame_check,
    start_reference=start_reference,
    run_reference_client=run_reference_client,
    serve=serve,
    shared_state=shared_state,
)
