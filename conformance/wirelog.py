"""Per-case wire log: every chunk in both directions, with timestamps.

Bounded: a chunk keeps at most ``_MAX_LOGGED`` bytes (what a hex dump shows; the rest is
counted), and a log keeps its first ``_HEAD_ENTRIES`` and last ``_TAIL_ENTRIES`` entries, so a
target that floods the suite for the whole case deadline costs a few MiB, not its traffic.

Credentials never appear in a rendered log.  Adapters register the credentials they put on
the wire (a PLAIN password, a CURVE secret key) with :func:`redact`; rendering replaces every
occurrence with ``*`` of the same length (offsets and lengths in the dump stay true), in the
raw bytes (also across chunk boundaries), as hex or Z85 text, and inside base64 tokens (an
MTL SASL PLAIN response carries the password base64-encoded in its JSON).  Credentials
shorter than ``MIN_SECRET`` bytes are not masked: masking a 1-3 byte pattern everywhere
would hide ordinary traffic, and nothing that short protects anything anyway.

Two credential shapes are masked even when no adapter registered them: the password of a
ZMTP PLAIN HELLO command (RFC 24) and a base64 token that decodes to an RFC 4616 SASL PLAIN
message.  A password is on the wire in clear by design with both; the wire log, which ends up
in reports and CI artifacts, shows it as ``*``.  A credential that a chunk's 4 KiB display
limit cuts may show in part in its base64 or structural form (its raw form is masked piecewise).
"""

from __future__ import annotations

import base64
import binascii
import re
import time
from collections import deque
from dataclasses import dataclass
from typing import Callable

SENT, RECEIVED, NOTE = ">>", "<<", "--"
_MAX_LOGGED = 4096  # bytes of one chunk kept and shown; the rest is counted
_HEAD_ENTRIES = 500  # entries kept from the start of a case ...
_TAIL_ENTRIES = 500  # ... and from its end; those between are counted
MIN_SECRET = 4
MASK = 0x2A  # "*"
_PARTIAL = 4  # a credential cut by a chunk that was not kept whole: mask a piece of at least this length
_BASE64 = re.compile(rb"[A-Za-z0-9+/]{8,}={0,2}")
_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"

_SECRETS: set[bytes] = set()


def redact(*secrets: bytes | str | None) -> None:
    """Register credentials that no rendered wire log may show (for the rest of the process)."""
    for secret in secrets:
        if secret is None:
            continue
        data = secret.encode("utf-8") if isinstance(secret, str) else bytes(secret)
        if len(data) >= MIN_SECRET:
            _SECRETS.add(data)


@dataclass
class WireEntry:
    t: float
    direction: str
    data: bytes | str  # at most _MAX_LOGGED bytes (characters) of the chunk
    size: int = -1  # the chunk's length; -1: len(data)

    @property
    def length(self) -> int:
        return len(self.data) if self.size < 0 else self.size

    @property
    def whole(self) -> bool:
        return self.length == len(self.data)

    def render(self, t0: float, shown: bytes | str | None = None) -> str:
        data = self.data if shown is None else shown
        stamp = f"{(self.t - t0) * 1000:9.3f}ms {self.direction}"
        masked = " (credentials masked)" if shown is not None and shown != self.data else ""
        if self.direction == NOTE:
            return f"{stamp} {data}" + ("" if self.whole else f"... ({self.length} characters)")
        if isinstance(data, str):
            text = data if self.whole else data + "..."
            return f"{stamp} text[{self.length}]{masked} {text!r}"
        return f"{stamp} bytes[{self.length}]{masked}\n{hexdump(data, size=self.length)}"


class _Later:
    """A decoded-frame note whose text is made when the log is rendered."""

    __slots__ = ("direction", "make")

    def __init__(self, direction: str, make: Callable[[], str]) -> None:
        self.direction = direction
        self.make = make

    def __len__(self) -> int:
        return 0  # a note, never truncated

    def __str__(self) -> str:
        return f"{self.direction} decoded: {self.make()}"


class WireLog:
    def __init__(self) -> None:
        self.started = time.monotonic()
        self._head: list[WireEntry] = []
        self._tail: deque[WireEntry] = deque(maxlen=_TAIL_ENTRIES)
        self.dropped = 0  # entries between head and tail that were not kept
        self.dropped_bytes = 0

    @property
    def entries(self) -> list[WireEntry]:
        return self._head + list(self._tail)

    def _add(self, direction: str, data: bytes | str) -> None:
        size = len(data)
        if size > _MAX_LOGGED:
            self._keep(WireEntry(time.monotonic(), direction, data[:_MAX_LOGGED], size))
        else:
            self._keep(WireEntry(time.monotonic(), direction, data))

    def _keep(self, entry: WireEntry) -> None:
        if len(self._head) < _HEAD_ENTRIES:
            self._head.append(entry)
            return
        tail = self._tail
        if len(tail) == _TAIL_ENTRIES:
            old = tail[0]
            self.dropped += 1
            self.dropped_bytes += old.length if old.direction != NOTE else 0
        tail.append(entry)

    def sent(self, data: bytes | str) -> None:
        self._add(SENT, data)

    def received(self, data: bytes | str) -> None:
        self._add(RECEIVED, data)

    def note(self, text: str) -> None:
        self._add(NOTE, text)

    def decoded(self, direction: str, summary: str | Callable[[], str]) -> None:
        """A frame as the protocol reads it, under the chunk(s) that carried it, so the log
        shows the decoded frame beside its hex dump.  ``summary`` may be a function: it is called
        only for an entry the log keeps, when it is rendered (most of a volume case's are not)."""
        if callable(summary):
            self._keep(WireEntry(time.monotonic(), NOTE, _Later(direction, summary)))  # type: ignore[arg-type]
        else:
            self._add(NOTE, f"{direction} decoded: {summary}")

    def render(self) -> str:
        for entry in (*self._head, *self._tail):
            if isinstance(entry.data, _Later):
                entry.data = str(entry.data)
        head, tail = self._head, list(self._tail)
        parts = [(head, False, True), (tail, True, False)] if self.dropped else [(head + tail, False, False)]
        shown = _redacted(parts, sorted(_SECRETS, key=len, reverse=True))
        lines = [e.render(self.started, shown.get(id(e))) for e in head]
        if self.dropped:
            lines.append(f"{'':11}-- ... {self.dropped} entries ({self.dropped_bytes} bytes on the wire) "
                         "not kept: a wire log keeps its first and last entries")
        lines += [e.render(self.started, shown.get(id(e))) for e in tail]
        return "\n".join(lines) + "\n"


def hexdump(data: bytes, width: int = 16, size: int | None = None) -> str:
    shown = data[:_MAX_LOGGED]
    total = len(data) if size is None else size
    lines = []
    for offset in range(0, len(shown), width):
        chunk = shown[offset:offset + width]
        hexpart = " ".join(f"{b:02x}" for b in chunk)
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"    {offset:08x}  {hexpart:<{width * 3}} {text}")
    if total > len(shown):
        lines.append(f"    ... {total - len(shown)} more bytes")
    return "\n".join(lines)


# -- redaction ----------------------------------------------------------------------------------

def _z85(data: bytes) -> bytes | None:
    if len(data) % 4:
        return None
    out = []
    for i in range(0, len(data), 4):
        value = int.from_bytes(data[i:i + 4], "big")
        out.append("".join(_Z85[value // 85 ** k % 85] for k in range(4, -1, -1)))
    return "".join(out).encode("ascii")


def _forms(secrets: list[bytes]) -> list[bytes]:
    """Each credential as it may show: its bytes, and (keys) as hex or Z85 text."""
    forms: list[bytes] = []
    for secret in secrets:
        forms += [secret, secret.hex().encode(), secret.hex().upper().encode()]
        z85 = _z85(secret)
        if z85:
            forms.append(z85)
    return sorted(set(forms), key=len, reverse=True)


def _mask(buf: bytearray, forms: list[bytes], secrets: list[bytes], open_start: bool, open_end: bool) -> None:
    for form in forms:
        start = 0
        while (at := buf.find(form, start)) != -1:
            buf[at:at + len(form)] = bytes([MASK]) * len(form)
            start = at + len(form)
        # the stream goes on in bytes that were not kept: mask a credential's visible piece
        for k in range(len(form) - 1, _PARTIAL - 1, -1):
            if open_end and buf.endswith(form[:k]):
                buf[len(buf) - k:] = bytes([MASK]) * k
                break
        for k in range(len(form) - 1, _PARTIAL - 1, -1):
            if open_start and buf.startswith(form[-k:]):
                buf[:k] = bytes([MASK]) * k
                break
    for match in _BASE64.finditer(bytes(buf)):
        token = match.group()
        body = token.rstrip(b"=")
        rest = len(body) % 4
        usable = body + b"=" * (4 - rest) if rest >= 2 else body[:len(body) - rest]
        try:
            decoded = base64.b64decode(usable, validate=True)
        except (binascii.Error, ValueError):
            continue
        if any(secret in decoded for secret in secrets) or _sasl_plain(decoded):
            buf[match.start():match.end()] = bytes([MASK]) * len(token)
    _mask_plain_hello(buf)


def _sasl_plain(decoded: bytes) -> bool:
    """An RFC 4616 PLAIN message, ``[authzid] NUL authcid NUL passwd``, as SASL carries it in base64
    (MTL's Connection.Authorize): masked whole, registered or not."""
    parts = decoded.split(b"\0")
    if len(parts) != 3 or not parts[1] or not parts[2]:
        return False
    try:
        return all(part.decode("utf-8").isprintable() for part in parts)
    except UnicodeDecodeError:
        return False


def _mask_plain_hello(buf: bytearray) -> None:
    """The password of a ZMTP PLAIN HELLO command (RFC 24), registered or not: a command frame
    (04 size, or 06 and an 8-octet size) holding ``05 HELLO``, username and password."""
    start = 0
    while (at := buf.find(b"\x05HELLO", start)) != -1:
        start = at + 6
        p = at + 6
        if p >= len(buf) or p + 1 + buf[p] >= len(buf):
            continue
        user_end = p + 1 + buf[p]
        size = buf[user_end]
        password = slice(user_end + 1, user_end + 1 + size)
        body = 6 + 1 + buf[p] + 1 + size
        short = at >= 2 and buf[at - 2] == 0x04 and buf[at - 1] == body
        long = at >= 9 and buf[at - 9] == 0x06 and int.from_bytes(buf[at - 8:at], "big") == body
        if size and (short or long):
            buf[password] = bytes([MASK]) * len(buf[password])


def _redacted(parts: list[tuple[list[WireEntry], bool, bool]], secrets: list[bytes]) -> dict[int, bytes | str]:
    """What to show instead of an entry's data, for entries that held a credential.

    ``parts``: runs of kept entries, each with whether the stream goes on, not kept, before
    its start and after its end.  Chunks of one direction are joined while each was kept
    whole, so a credential split across two reads is still found.
    """
    forms = _forms(secrets)
    shown: dict[int, bytes | str] = {}
    runs: list[tuple[list[WireEntry], bool, bool]] = []  # chunks of one direction, open at start, open at end
    for entries, open_start, open_end in parts:
        current: dict[str, list[WireEntry]] = {SENT: [], RECEIVED: []}
        opened = {SENT: open_start, RECEIVED: open_start}
        for entry in entries:
            if entry.direction == NOTE or isinstance(entry.data, str):
                _mask_text(entry, forms, secrets, shown)
                continue
            current[entry.direction].append(entry)
            if not entry.whole:
                runs.append((current[entry.direction], opened[entry.direction], True))
                current[entry.direction] = []
                opened[entry.direction] = True
        for direction, run in current.items():
            if run:
                runs.append((run, opened[direction], open_end))
    for run, open_start, open_end in runs:
        joined = bytearray(b"".join(e.data for e in run))  # type: ignore[misc]
        original = bytes(joined)
        _mask(joined, forms, secrets, open_start, open_end)
        if joined == original:
            continue
        offset = 0
        for entry in run:
            piece = bytes(joined[offset:offset + len(entry.data)])
            if piece != entry.data:
                shown[id(entry)] = piece
            offset += len(entry.data)
    return shown


def _mask_text(entry: WireEntry, forms: list[bytes], secrets: list[bytes], shown: dict[int, bytes | str]) -> None:
    text = str(entry.data)
    data = bytearray(text.encode("utf-8", "surrogateescape"))
    original = bytes(data)
    _mask(data, forms, secrets, False, not entry.whole)
    # a note may show bytes as a Python repr: mask the credential's escaped form too
    for secret in secrets:
        escaped = repr(secret)[2:-1].encode("utf-8")
        if escaped != secret:
            start = 0
            while (at := data.find(escaped, start)) != -1:
                data[at:at + len(escaped)] = bytes([MASK]) * len(escaped)
                start = at + len(escaped)
    if data != original:
        shown[id(entry)] = data.decode("utf-8", "surrogateescape")
