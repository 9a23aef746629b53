"""RSocket 1.0 frames: dataclasses, encoder, strict decoders (sans-IO).

Layouts are those of Protocol.md, https://github.com/rsocket/rsocket/blob/master/Protocol.md
(sections "Frame Header Format" and one section per frame type).  Every frame
starts with a 31-bit stream id and a 16-bit word: 6-bit type, then the I and M
flags and 8 per-type flag bits.  Numbers are big-endian.

Readings pinned by profile rsocket/1.0 (docs/profiles/rsocket.md):

* The top bit of the stream id is reserved: sent 0, ignored on receipt.  The
  top bit of every other 31- or 63-bit field is drawn as ``0`` in the layouts;
  a 1 there is ``reserved-bit-set``, since a peer reading the field as a signed
  integer would see a negative credit, interval or position.
* Flag bits a frame type does not define are ignored on decode, sent as 0.
* M selects a 24-bit metadata length on data+metadata frames; LEASE and
  METADATA_PUSH carry metadata to the end of the frame with no length.
* On PAYLOAD and REQUEST_CHANNEL, F together with C means F is ignored
  ("Handling the Unexpected"): the decoder reports ``follows=False``.
* Value rules that need an answer on the wire (keepalive interval and
  lifetime > 0, request-n > 0, version, lease values) are the connection's:
  the codec decodes such frames, so the connection can send the right ERROR.

A :class:`FrameError` tells the connection what to do with a bad frame:
``ignorable`` is True where Protocol.md says the receiver must drop the frame
and keep serving (a stream frame on stream 0, a connection frame on a stream,
a PAYLOAD with neither C nor N, or any malformed frame whose I flag is set).
Otherwise the connection sends ERROR[CONNECTION_ERROR] and closes.

Error codes:

===============================  ==============================================
``truncated``                    the frame ends inside a field
``trailing-bytes``               bytes after the last field of a fixed layout
``frame-too-short``              fewer than the 6 header bytes
``frame-too-large``              over the spec's 16,777,215 bytes or the
                                 decoder's ``max_frame`` (raised as soon as the
                                 length prefix is read)
``unknown-frame-type``           a type outside the table (0x00 included)
``stream-id-zero``               a stream frame on stream 0
``stream-id-nonzero``            a connection frame (SETUP, LEASE, KEEPALIVE,
                                 METADATA_PUSH, RESUME, RESUME_OK) on a stream
``reserved-bit-set``             top bit of a 31/63-bit field set
``metadata-length-overrun``      the metadata length passes the frame's end
``metadata-push-without-m``      METADATA_PUSH with M clear
``payload-without-next-or-complete``  PAYLOAD with neither C nor N
``mime-not-ascii``               a SETUP MIME type that is not US-ASCII
``extended-type-zero``           EXT with extended type 0
``websocket-text-message``       a WebSocket text message where a frame belongs
``value-out-of-range``           encoder given a field that does not fit
===============================  ==============================================
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Union

from reference_impl.common.errors import CodecError

MAX_FRAME = 0xFFFFFF  # "Max Frame Size": 16,777,215 bytes
MAX_U31 = 0x7FFFFFFF
MAX_U63 = 0x7FFFFFFFFFFFFFFF
HEADER_SIZE = 6

SETUP, LEASE, KEEPALIVE = 0x01, 0x02, 0x03
REQUEST_RESPONSE, REQUEST_FNF, REQUEST_STREAM, REQUEST_CHANNEL = 0x04, 0x05, 0x06, 0x07
REQUEST_N, CANCEL, PAYLOAD, ERROR, METADATA_PUSH = 0x08, 0x09, 0x0A, 0x0B, 0x0C
RESUME, RESUME_OK, EXT = 0x0D, 0x0E, 0x3F
# the spec's names, which scenarios, vectors and reports use for the frame types
FRAME_NAMES: dict[int, str] = {
    SETUP: "SETUP", LEASE: "LEASE", KEEPALIVE: "KEEPALIVE", REQUEST_RESPONSE: "REQUEST_RESPONSE",
    REQUEST_FNF: "REQUEST_FNF", REQUEST_STREAM: "REQUEST_STREAM", REQUEST_CHANNEL: "REQUEST_CHANNEL",
    REQUEST_N: "REQUEST_N", CANCEL: "CANCEL", PAYLOAD: "PAYLOAD", ERROR: "ERROR",
    METADATA_PUSH: "METADATA_PUSH", RESUME: "RESUME", RESUME_OK: "RESUME_OK", EXT: "EXT",
}

# Flag bits within the 16-bit type-and-flags word.
FLAG_I = 0x200
FLAG_M = 0x100
FLAG_F = 0x080  # also SETUP's and KEEPALIVE's R
FLAG_C = 0x040  # also SETUP's L
FLAG_N = 0x020
FLAG_R = FLAG_F
FLAG_L = FLAG_C

CONNECTION_TYPES = frozenset({SETUP, LEASE, KEEPALIVE, METADATA_PUSH, RESUME, RESUME_OK})
STREAM_TYPES = frozenset({REQUEST_RESPONSE, REQUEST_FNF, REQUEST_STREAM, REQUEST_CHANNEL,
                          REQUEST_N, CANCEL, PAYLOAD})

# Error codes of Protocol.md "Error Codes".
INVALID_SETUP = 0x00000001
UNSUPPORTED_SETUP = 0x00000002
REJECTED_SETUP = 0x00000003
REJECTED_RESUME = 0x00000004
CONNECTION_ERROR = 0x00000101
CONNECTION_CLOSE = 0x00000102
APPLICATION_ERROR = 0x00000201
REJECTED = 0x00000202
CANCELED = 0x00000203
INVALID = 0x00000204


class FrameError(CodecError):
    """A frame that does not decode; says whether the connection may drop it."""

    def __init__(self, code: str, detail: str = "", *, frame_type: int | None = None,
                 stream_id: int | None = None, ignorable: bool = False) -> None:
        super().__init__(code, detail)
        self.frame_type = frame_type
        self.stream_id = stream_id
        self.ignorable = ignorable


@dataclass(frozen=True)
class Setup:
    major: int
    minor: int
    keepalive: int  # ms between the client's KEEPALIVEs
    lifetime: int  # ms
    metadata_mime: str
    data_mime: str
    resume_token: bytes | None = None  # present iff R
    lease: bool = False
    metadata: bytes | None = None
    data: bytes = b""
    ignore: bool = False
    stream_id: int = 0


@dataclass(frozen=True)
class Lease:
    ttl: int
    number: int
    metadata: bytes | None = None
    ignore: bool = False
    stream_id: int = 0


@dataclass(frozen=True)
class Keepalive:
    respond: bool
    last_position: int = 0
    data: bytes = b""
    ignore: bool = False
    stream_id: int = 0


@dataclass(frozen=True)
class RequestResponse:
    stream_id: int
    metadata: bytes | None = None
    data: bytes = b""
    follows: bool = False
    ignore: bool = False


@dataclass(frozen=True)
class RequestFnf:
    stream_id: int
    metadata: bytes | None = None
    data: bytes = b""
    follows: bool = False
    ignore: bool = False


@dataclass(frozen=True)
class RequestStream:
    stream_id: int
    initial_n: int
    metadata: bytes | None = None
    data: bytes = b""
    follows: bool = False
    ignore: bool = False


@dataclass(frozen=True)
class RequestChannel:
    stream_id: int
    initial_n: int
    metadata: bytes | None = None
    data: bytes = b""
    follows: bool = False
    complete: bool = False
    ignore: bool = False


@dataclass(frozen=True)
class RequestN:
    stream_id: int
    n: int
    ignore: bool = False


@dataclass(frozen=True)
class Cancel:
    stream_id: int
    ignore: bool = False


@dataclass(frozen=True)
class Payload:
    stream_id: int
    metadata: bytes | None = None
    data: bytes = b""
    follows: bool = False
    complete: bool = False
    next: bool = False
    ignore: bool = False


@dataclass(frozen=True)
class Error:
    stream_id: int
    code: int
    data: bytes = b""
    ignore: bool = False


@dataclass(frozen=True)
class MetadataPush:
    metadata: bytes
    ignore: bool = False
    stream_id: int = 0


@dataclass(frozen=True)
class Resume:
    major: int
    minor: int
    token: bytes
    last_received_server_position: int
    first_available_client_position: int
    ignore: bool = False
    stream_id: int = 0


@dataclass(frozen=True)
class ResumeOk:
    last_received_client_position: int
    ignore: bool = False
    stream_id: int = 0


@dataclass(frozen=True)
class Ext:
    """EXT: what follows the extended type depends on it, so it stays opaque."""

    stream_id: int
    extended_type: int
    payload: bytes = b""
    metadata_flag: bool = False
    ignore: bool = False


Frame = Union[Setup, Lease, Keepalive, RequestResponse, RequestFnf, RequestStream,
              RequestChannel, RequestN, Cancel, Payload, Error, MetadataPush, Resume,
              ResumeOk, Ext]

FRAME_TYPES: dict[type, int] = {
    Setup: SETUP, Lease: LEASE, Keepalive: KEEPALIVE, RequestResponse: REQUEST_RESPONSE,
    RequestFnf: REQUEST_FNF, RequestStream: REQUEST_STREAM, RequestChannel: REQUEST_CHANNEL,
    RequestN: REQUEST_N, Cancel: CANCEL, Payload: PAYLOAD, Error: ERROR,
    MetadataPush: METADATA_PUSH, Resume: RESUME, ResumeOk: RESUME_OK, Ext: EXT,
}


# --------------------------------------------------------------------------- encode

def _uint(value: int, size: int, limit: int, name: str) -> bytes:
    if not isinstance(value, int) or value < 0 or value > limit:
        raise CodecError("value-out-of-range", f"{name}={value!r}")
    return value.to_bytes(size, "big")


def _metadata_and_data(metadata: bytes | None, data: bytes) -> tuple[int, bytes]:
    if metadata is None:
        return 0, data
    return FLAG_M, _uint(len(metadata), 3, MAX_FRAME, "metadata length") + metadata + data


def _ascii(text: str, name: str) -> bytes:
    try:
        raw = text.encode("ascii")
    except UnicodeEncodeError:
        raise CodecError("mime-not-ascii", name) from None
    return _uint(len(raw), 1, 0xFF, f"{name} length") + raw


def _body(frame: Frame) -> tuple[int, bytes]:
    """The per-type flags (without I) and the bytes after the header."""
    if isinstance(frame, Setup):
        flags = FLAG_L if frame.lease else 0
        body = (_uint(frame.major, 2, 0xFFFF, "major") + _uint(frame.minor, 2, 0xFFFF, "minor")
                + _uint(frame.keepalive, 4, MAX_U31, "keepalive")
                + _uint(frame.lifetime, 4, MAX_U31, "lifetime"))
        if frame.resume_token is not None:
            flags |= FLAG_R
            body += _uint(len(frame.resume_token), 2, 0xFFFF, "token length") + frame.resume_token
        body += _ascii(frame.metadata_mime, "metadata mime") + _ascii(frame.data_mime, "data mime")
        m, rest = _metadata_and_data(frame.metadata, frame.data)
        return flags | m, body + rest
    if isinstance(frame, Lease):
        body = _uint(frame.ttl, 4, MAX_U31, "ttl") + _uint(frame.number, 4, MAX_U31, "number")
        if frame.metadata is None:
            return 0, body
        return FLAG_M, body + frame.metadata
    if isinstance(frame, Keepalive):
        return (FLAG_R if frame.respond else 0,
                _uint(frame.last_position, 8, MAX_U63, "last position") + frame.data)
    if isinstance(frame, (RequestResponse, RequestFnf)):
        m, rest = _metadata_and_data(frame.metadata, frame.data)
        return m | (FLAG_F if frame.follows else 0), rest
    if isinstance(frame, RequestStream):
        m, rest = _metadata_and_data(frame.metadata, frame.data)
        return m | (FLAG_F if frame.follows else 0), _uint(frame.initial_n, 4, MAX_U31, "n") + rest
    if isinstance(frame, RequestChannel):
        m, rest = _metadata_and_data(frame.metadata, frame.data)
        flags = m | (FLAG_F if frame.follows else 0) | (FLAG_C if frame.complete else 0)
        return flags, _uint(frame.initial_n, 4, MAX_U31, "n") + rest
    if isinstance(frame, RequestN):
        return 0, _uint(frame.n, 4, MAX_U31, "n")
    if isinstance(frame, Cancel):
        return 0, b""
    if isinstance(frame, Payload):
        m, rest = _metadata_and_data(frame.metadata, frame.data)
        flags = (m | (FLAG_F if frame.follows else 0) | (FLAG_C if frame.complete else 0)
                 | (FLAG_N if frame.next else 0))
        return flags, rest
    if isinstance(frame, Error):
        return 0, _uint(frame.code, 4, 0xFFFFFFFF, "error code") + frame.data
    if isinstance(frame, MetadataPush):
        return FLAG_M, frame.metadata
    if isinstance(frame, Resume):
        return 0, (_uint(frame.major, 2, 0xFFFF, "major") + _uint(frame.minor, 2, 0xFFFF, "minor")
                   + _uint(len(frame.token), 2, 0xFFFF, "token length") + frame.token
                   + _uint(frame.last_received_server_position, 8, MAX_U63, "server position")
                   + _uint(frame.first_available_client_position, 8, MAX_U63, "client position"))
    if isinstance(frame, ResumeOk):
        return 0, _uint(frame.last_received_client_position, 8, MAX_U63, "client position")
    if isinstance(frame, Ext):
        if frame.extended_type == 0:
            raise CodecError("extended-type-zero")
        return (FLAG_M if frame.metadata_flag else 0,
                _uint(frame.extended_type, 4, MAX_U31, "extended type") + frame.payload)
    raise CodecError("value-out-of-range", f"not a frame: {frame!r}")


def encode_frame(frame: Frame) -> bytes:
    """One frame without a length prefix (the WebSocket message)."""
    flags, body = _body(frame)
    if frame.ignore:
        flags |= FLAG_I
    header = _uint(frame.stream_id, 4, MAX_U31, "stream id") + (
        (FRAME_TYPES[type(frame)] << 10) | flags).to_bytes(2, "big")
    wire = header + body
    if len(wire) > MAX_FRAME:
        raise CodecError("frame-too-large", f"{len(wire)} bytes")
    return wire


def encode_tcp(frame: Frame) -> bytes:
    """One frame with TCP's 24-bit frame length prefix."""
    wire = encode_frame(frame)
    return len(wire).to_bytes(3, "big") + wire


# --------------------------------------------------------------------------- decode

class _Reader:
    def __init__(self, buf: bytes, frame_type: int, stream_id: int, ignore: bool) -> None:
        self.buf = buf
        self.pos = HEADER_SIZE
        self.frame_type = frame_type
        self.stream_id = stream_id
        self.ignore = ignore

    def fail(self, code: str, detail: str = "", *, ignorable: bool | None = None) -> FrameError:
        return FrameError(code, detail, frame_type=self.frame_type, stream_id=self.stream_id,
                          ignorable=self.ignore if ignorable is None else ignorable)

    def take(self, n: int, what: str) -> bytes:
        if self.pos + n > len(self.buf):
            raise self.fail("truncated", f"{what}: need {n} bytes, {len(self.buf) - self.pos} left")
        chunk = self.buf[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def uint(self, n: int, what: str) -> int:
        return int.from_bytes(self.take(n, what), "big")

    def u31(self, what: str, size: int = 4) -> int:
        value = self.uint(size, what)
        if value >> (size * 8 - 1):
            raise self.fail("reserved-bit-set", what)
        return value

    def rest(self) -> bytes:
        chunk = self.buf[self.pos:]
        self.pos = len(self.buf)
        return chunk

    def end(self) -> None:
        if self.pos != len(self.buf):
            raise self.fail("trailing-bytes", f"{len(self.buf) - self.pos} bytes")

    def metadata_and_data(self, m: bool) -> tuple[bytes | None, bytes]:
        if not m:
            return None, self.rest()
        length = self.uint(3, "metadata length")
        if self.pos + length > len(self.buf):
            raise self.fail("metadata-length-overrun",
                            f"{length} bytes of metadata, {len(self.buf) - self.pos} left")
        return self.take(length, "metadata"), self.rest()

    def mime(self, what: str) -> str:
        raw = self.take(self.uint(1, f"{what} length"), what)
        try:
            return raw.decode("ascii")
        except UnicodeDecodeError:
            raise self.fail("mime-not-ascii", what) from None


def decode_frame(buf: bytes) -> Frame:
    """Decode exactly one frame (no length prefix): a WebSocket message, or a TCP frame body."""
    buf = bytes(buf)
    if len(buf) > MAX_FRAME:
        raise FrameError("frame-too-large", f"{len(buf)} bytes")
    if len(buf) < HEADER_SIZE:
        raise FrameError("frame-too-short", f"{len(buf)} bytes")
    stream_id = int.from_bytes(buf[0:4], "big") & MAX_U31  # reserved bit ignored on receipt
    word = int.from_bytes(buf[4:6], "big")
    frame_type, ignore = word >> 10, bool(word & FLAG_I)
    m, f, c, n = (bool(word & bit) for bit in (FLAG_M, FLAG_F, FLAG_C, FLAG_N))
    r = _Reader(buf, frame_type, stream_id, ignore)
    if frame_type not in FRAME_TYPES.values():
        raise r.fail("unknown-frame-type", f"0x{frame_type:02x}")
    if frame_type in CONNECTION_TYPES and stream_id != 0:
        raise r.fail("stream-id-nonzero", f"stream {stream_id}", ignorable=True)
    if frame_type in STREAM_TYPES and stream_id == 0:
        raise r.fail("stream-id-zero", ignorable=True)
    frame = _DECODERS[frame_type](r, stream_id, m, f, c, n)
    return frame


def _setup(r: _Reader, sid: int, m: bool, resume: bool, lease: bool, _n: bool) -> Setup:
    major, minor = r.uint(2, "major version"), r.uint(2, "minor version")
    keepalive, lifetime = r.u31("keepalive interval"), r.u31("max lifetime")
    token = r.take(r.uint(2, "token length"), "resume token") if resume else None
    metadata_mime, data_mime = r.mime("metadata mime"), r.mime("data mime")
    metadata, data = r.metadata_and_data(m)
    return Setup(major, minor, keepalive, lifetime, metadata_mime, data_mime, token, lease,
                 metadata, data, r.ignore)


def _lease(r: _Reader, sid: int, m: bool, _f: bool, _c: bool, _n: bool) -> Lease:
    ttl, number = r.u31("time-to-live"), r.u31("number of requests")
    metadata = r.rest() if m else None
    r.end()
    return Lease(ttl, number, metadata, r.ignore)


def _keepalive(r: _Reader, sid: int, _m: bool, respond: bool, _c: bool, _n: bool) -> Keepalive:
    position = r.u31("last received position", 8)
    return Keepalive(respond, position, r.rest(), r.ignore)


def _request_response(r: _Reader, sid: int, m: bool, f: bool, _c: bool, _n: bool):
    metadata, data = r.metadata_and_data(m)
    return RequestResponse(sid, metadata, data, f, r.ignore)


def _request_fnf(r: _Reader, sid: int, m: bool, f: bool, _c: bool, _n: bool):
    metadata, data = r.metadata_and_data(m)
    return RequestFnf(sid, metadata, data, f, r.ignore)


def _request_stream(r: _Reader, sid: int, m: bool, f: bool, _c: bool, _n: bool):
    initial = r.u31("initial request n")
    metadata, data = r.metadata_and_data(m)
    return RequestStream(sid, initial, metadata, data, f, r.ignore)


def _request_channel(r: _Reader, sid: int, m: bool, f: bool, c: bool, _n: bool):
    initial = r.u31("initial request n")
    metadata, data = r.metadata_and_data(m)
    return RequestChannel(sid, initial, metadata, data, f and not c, c, r.ignore)


def _request_n(r: _Reader, sid: int, _m: bool, _f: bool, _c: bool, _n: bool) -> RequestN:
    n = r.u31("request n")
    r.end()
    return RequestN(sid, n, r.ignore)


def _cancel(r: _Reader, sid: int, _m: bool, _f: bool, _c: bool, _n: bool) -> Cancel:
    r.end()
    return Cancel(sid, r.ignore)


def _payload(r: _Reader, sid: int, m: bool, f: bool, c: bool, n: bool) -> Payload:
    if not c and not n:
        raise r.fail("payload-without-next-or-complete", ignorable=True)
    metadata, data = r.metadata_and_data(m)
    return Payload(sid, metadata, data, f and not c, c, n, r.ignore)


def _error(r: _Reader, sid: int, _m: bool, _f: bool, _c: bool, _n: bool) -> Error:
    code = r.uint(4, "error code")
    return Error(sid, code, r.rest(), r.ignore)


def _metadata_push(r: _Reader, sid: int, m: bool, _f: bool, _c: bool, _n: bool) -> MetadataPush:
    if not m:
        raise r.fail("metadata-push-without-m")
    return MetadataPush(r.rest(), r.ignore)


def _resume(r: _Reader, sid: int, _m: bool, _f: bool, _c: bool, _n: bool) -> Resume:
    major, minor = r.uint(2, "major version"), r.uint(2, "minor version")
    token = r.take(r.uint(2, "token length"), "resume token")
    server_pos = r.u31("last received server position", 8)
    client_pos = r.u31("first available client position", 8)
    r.end()
    return Resume(major, minor, token, server_pos, client_pos, r.ignore)


def _resume_ok(r: _Reader, sid: int, _m: bool, _f: bool, _c: bool, _n: bool) -> ResumeOk:
    position = r.u31("last received client position", 8)
    r.end()
    return ResumeOk(position, r.ignore)


def _ext(r: _Reader, sid: int, m: bool, _f: bool, _c: bool, _n: bool) -> Ext:
    extended = r.u31("extended type")
    if extended == 0:
        raise r.fail("extended-type-zero")
    return Ext(sid, extended, r.rest(), m, r.ignore)


_DECODERS = {
    SETUP: _setup, LEASE: _lease, KEEPALIVE: _keepalive, REQUEST_RESPONSE: _request_response,
    REQUEST_FNF: _request_fnf, REQUEST_STREAM: _request_stream, REQUEST_CHANNEL: _request_channel,
    REQUEST_N: _request_n, CANCEL: _cancel, PAYLOAD: _payload, ERROR: _error,
    METADATA_PUSH: _metadata_push, RESUME: _resume, RESUME_OK: _resume_ok, EXT: _ext,
}


def decode_websocket(message: bytes | str) -> Frame:
    """A WebSocket message: exactly one frame, binary, no length prefix."""
    if isinstance(message, str):
        raise FrameError("websocket-text-message")
    return decode_frame(message)


class TcpDecoder:
    """TCP framing: 24-bit length prefix, then the frame.  Feed arbitrary chunks.

    A length over ``max_frame`` (or under the 6 header bytes) is refused as soon
    as its 3 bytes arrive, so a peer cannot make the decoder wait for, or
    buffer, more than ``max_frame`` bytes.  After an error the stream cannot be
    resynchronised: the decoder stays failed.
    """

    def __init__(self, max_frame: int = MAX_FRAME) -> None:
        self.max_frame = min(max_frame, MAX_FRAME)
        self._buf = bytearray()
        self._failed: FrameError | None = None
        self.last_length = 0  # the last frame's length without its prefix (resume positions)
        self.last_word = 0  # the last frame's type-and-flags word (flags its Frame folds away, e.g. F beside C)

    @property
    def buffered(self) -> int:
        return len(self._buf)

    def feed(self, data: bytes) -> None:
        self._buf += data

    def take_buffered(self) -> bytes:
        """The bytes not yet decoded (a connection handing its transport to a resumed session)."""
        out, self._buf = bytes(self._buf), bytearray()
        return out

    def next_frame(self) -> Frame | None:
        """The next complete frame, or None until more bytes arrive.

        A frame that fails to decode is consumed (its length is known), so after
        an ``ignorable`` FrameError the caller may keep reading.
        """
        if self._failed is not None:
            raise self._failed
        if len(self._buf) < 3:
            return None
        length = int.from_bytes(self._buf[:3], "big")
        if length > self.max_frame:
            self._failed = FrameError("frame-too-large", f"{length} > {self.max_frame}")
            raise self._failed
        if length < HEADER_SIZE:
            self._failed = FrameError("frame-too-short", f"length {length}")
            raise self._failed
        if len(self._buf) < 3 + length:
            return None
        body = bytes(self._buf[3:3 + length])
        del self._buf[:3 + length]
        self.last_length = length
        self.last_word = int.from_bytes(body[4:6], "big")
        return decode_frame(body)

    def __iter__(self) -> Iterator[Frame]:
        while (frame := self.next_frame()) is not None:
            yield frame


def decode_tcp_exact(wire: bytes, max_frame: int = MAX_FRAME) -> Frame:
    """Exactly one length-prefixed frame; an incomplete one is ``truncated``."""
    decoder = TcpDecoder(max_frame)
    decoder.feed(wire)
    frame = decoder.next_frame()
    if frame is None:
        raise FrameError("truncated", "length prefix promises more bytes")
    if decoder.buffered:
        raise FrameError("trailing-bytes", f"{decoder.buffered} bytes after the frame")
    return frame
