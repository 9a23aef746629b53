"""mc0 messages on ZMTP message frames (mc0 0.3 "Message structure", docs/profiles/mc0.md).

    frames on the wire:  '' VERB KEY1 VAL1 ... ['' POSITIONAL ...]

The first frame is the empty delimiter the orig connector's DEALER adds (and
the broker's ROUTER sends back); then the verb; then zero or more key/value
header pairs; then, optionally, an empty frame and the positional frames.
Header keys are case-sensitive: ``ID``, ``TOPIC``, ``VERSION``, ``TTL``,
``MESSAGE`` are reserved; ``X-`` keys are the client's, carried untouched.

Readings pinned here:
- Keys sit at even offsets after the verb, so an empty frame there is the
  separator, while an empty frame at a value offset is an empty value.  A key
  with no value after it (an odd header count) is ``odd-headers``.
- ``positional`` is None when the separator is absent and a (maybe empty)
  tuple when it is present: ``SUB ''`` and ``SUB`` are different messages.
- Frames are opaque octets; nothing here decodes text.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from reference_impl.common.errors import CodecError

DELIMITER = b""
SEPARATOR = b""

CONNECT, DISCONNECT, SUB, UNSUB, PUT, NOOP = b"CONNECT", b"DISCONNECT", b"SUB", b"UNSUB", b"PUT", b"NOOP"
MESSAGE, ERROR, OK = b"MESSAGE", b"ERROR", b"OK"
#: Verbs a connector sends (NOOP goes both ways).
CLIENT_VERBS = frozenset({CONNECT, DISCONNECT, SUB, UNSUB, PUT, NOOP})
#: Verbs a broker sends.
BROKER_VERBS = frozenset({MESSAGE, ERROR, OK, NOOP})

ID, TOPIC, VERSION, TTL, DESCRIPTION = b"ID", b"TOPIC", b"VERSION", b"TTL", b"MESSAGE"
EXTENSION_PREFIX = b"X-"
CURRENT_VERSION = b"0.3"
#: docs/profiles/mc0.md: "CONNECT VERSION 0.3 (0.2 accepted)".
ACCEPTED_VERSIONS = (b"0.3", b"0.2")


def is_extension(key: bytes) -> bool:
    """``X-`` headers are the client's (case-sensitive, as every header key)."""
    return key.startswith(EXTENSION_PREFIX)


@dataclass(frozen=True)
class Mc0Message:
    verb: bytes
    headers: tuple[tuple[bytes, bytes], ...] = ()
    #: None: no separator; otherwise the frames after it (maybe none).
    positional: tuple[bytes, ...] | None = None

    def header(self, key: bytes) -> bytes | None:
        """The first value of ``key``, or None."""
        for k, v in self.headers:
            if k == key:
                return v
        return None

    @property
    def id(self) -> bytes | None:
        return self.header(ID)

    @property
    def extensions(self) -> tuple[tuple[bytes, bytes], ...]:
        return tuple((k, v) for k, v in self.headers if is_extension(k))


def message(verb: bytes, headers: Iterable[tuple[bytes, bytes]] = (), positional: Sequence[bytes] | None = None) -> Mc0Message:
    return Mc0Message(verb, tuple(headers), None if positional is None else tuple(positional))


def ok(request_id: bytes) -> Mc0Message:
    """``[ 'OK', 'ID', identity ]``"""
    return Mc0Message(OK, ((ID, request_id),))


def error(description: bytes, request_id: bytes | None = None) -> Mc0Message:
    """``[ 'ERROR', 'MESSAGE', DESCRIPTION ]``, with ``ID`` first when the request had one."""
    headers = ((ID, request_id),) if request_id is not None else ()
    return Mc0Message(ERROR, headers + ((DESCRIPTION, description),))


def delivery(topic: bytes, extensions: Iterable[tuple[bytes, bytes]], positional: Sequence[bytes]) -> Mc0Message:
    """``[ 'MESSAGE', 'TOPIC', topic, <X- headers>, '', body... ]``"""
    return Mc0Message(MESSAGE, ((TOPIC, topic), *extensions), tuple(positional))


NOOP_MESSAGE = Mc0Message(NOOP)


def encode_message(msg: Mc0Message, *, delimiter: bool = True) -> list[bytes]:
    """The ZMTP message frames of ``msg``, starting with the empty delimiter."""
    if not msg.verb:
        raise CodecError("no-verb", "the verb frame is empty")
    frames = [DELIMITER] if delimiter else []
    frames.append(bytes(msg.verb))
    for key, value in msg.headers:
        if not key:
            raise CodecError("empty-key", "an empty header key would read as the separator")
        frames += [bytes(key), bytes(value)]
    if msg.positional is not None:
        frames.append(SEPARATOR)
        frames += [bytes(p) for p in msg.positional]
    return frames


def decode_message(frames: Sequence[bytes], *, delimiter: bool = True) -> Mc0Message:
    """An mc0 message from its ZMTP frames; raises CodecError with a stable code.

    Codes: ``empty`` (no frames), ``no-delimiter`` (the first frame is not
    empty), ``no-verb`` (no verb frame, or an empty one), ``odd-headers`` (a
    key without a value).
    """
    if not frames:
        raise CodecError("empty", "a message without frames")
    rest = list(frames)
    if delimiter:
        if rest[0] != DELIMITER:
            raise CodecError("no-delimiter", f"the first frame is {bytes(rest[0][:16])!r}, not the empty delimiter")
        rest = rest[1:]
    if not rest or not rest[0]:
        raise CodecError("no-verb", "no verb after the delimiter")
    verb, at, headers = bytes(rest[0]), 1, []
    while at < len(rest):
        key = rest[at]
        if key == SEPARATOR:
            return Mc0Message(verb, tuple(headers), tuple(bytes(p) for p in rest[at + 1:]))
        if at + 1 >= len(rest):
            raise CodecError("odd-headers", f"header {bytes(key[:32])!r} has no value (odd header count)")
        headers.append((bytes(key), bytes(rest[at + 1])))
        at += 2
    return Mc0Message(verb, tuple(headers), None)


def salvage_id(frames: Sequence[bytes]) -> bytes | None:
    """The ``ID`` of a message that does not decode, where its well-formed leading pairs carry one."""
    rest = list(frames[1:]) if frames and frames[0] == DELIMITER else list(frames)
    at = 1
    while at + 1 < len(rest) and rest[at] != SEPARATOR:
        if rest[at] == ID:
            return bytes(rest[at + 1])
        at += 2
    return None
