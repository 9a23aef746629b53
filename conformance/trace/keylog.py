"""CURVE key logs: what TLS's SSLKEYLOGFILE is to Wireshark, for the CURVE sessions (RFC 26) of mc0.

`conformance run --pcap FILE` writes FILE.keys beside the capture when the run generated CURVE
session keys; `conformance check-trace --keylog FILE` reads it back and opens the boxes of every
connection one of its keys belongs to.  The format (text, UTF-8)::

    # CURVE key log v1: ROLE TRANSIENT_PUBLIC TRANSIENT_SECRET SERVER_PUBLIC (hex)
    CLIENT 5f4c...  1b2a...  54fc...
    SERVER 8e0b...  77d1...  54fc...

One session key per line, four fields separated by white space: ``CLIENT`` or ``SERVER`` (the
role of the side that generated the key), that side's short-term (transient) public key C' or
S', its secret c' or s', and the server's long-term public key S (public anyway: a client's key
opens WELCOME only with it).  Keys are 64 hex digits.  Lines starting with ``#`` and blank lines
are ignored.  Only keys our side generated are logged: the suite's, and those of a reference
implementation running in the suite's process; never the peer's.
"""

from __future__ import annotations

import os

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

HEADER = "# CURVE key log v1: ROLE TRANSIENT_PUBLIC TRANSIENT_SECRET SERVER_PUBLIC (hex)"
ROLES = ("CLIENT", "SERVER")
_HEX_KEY = re.compile(r"[0-9a-fA-F]{64}")


class KeyLogError(ValueError):
    """A key log that cannot be read; the message names the file and line."""


@dataclass(frozen=True)
class SessionKey:
    role: str  # "client" or "server": the side that generated it
    public: bytes  # C' or S'
    secret: bytes  # c' or s'
    server: bytes  # S, the server's long-term public key

    def line(self) -> str:
        return f"{self.role.upper()} {self.public.hex()} {self.secret.hex()} {self.server.hex()}"


@dataclass
class KeyLog:
    """The parsed keys: clients' by C' (seen in clear in HELLO), servers' by S' in the order they
    came (S' travels boxed, so a server's key is found by the INITIATE box it opens)."""

    clients: dict[bytes, SessionKey] = field(default_factory=dict)
    servers: dict[bytes, SessionKey] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.clients or self.servers)

    def __len__(self) -> int:
        return len(self.clients) + len(self.servers)

    def add(self, key: SessionKey) -> None:
        if key.role == "client":
            self.clients[key.public] = key
        else:
            self.servers.setdefault(key.public, key)


def parse_line(text: str, where: str) -> SessionKey | None:
    """The key on one line (None for a comment or a blank line); ``where`` is "file:line"."""
    line = text.strip()
    if not line or line.startswith("#"):
        return None
    fields = line.split()
    if len(fields) != 4:
        raise KeyLogError(f"{where}: expected ROLE TRANSIENT_PUBLIC TRANSIENT_SECRET SERVER_PUBLIC, "
                          f"got {len(fields)} fields")
    role, *keys = fields
    if role.upper() not in ROLES:
        raise KeyLogError(f"{where}: the role is CLIENT or SERVER, not {role[:20]!r}")
    for name, value in zip(("transient public", "transient secret", "server public"), keys):
        if not _HEX_KEY.fullmatch(value):
            raise KeyLogError(f"{where}: the {name} key is not 64 hex digits: {value[:20]!r}")
    public, secret, server = (bytes.fromhex(k) for k in keys)
    from nacl.bindings import crypto_scalarmult_base
    if crypto_scalarmult_base(secret) != public:
        raise KeyLogError(f"{where}: the transient public key does not belong to the secret key")
    return SessionKey(role.lower(), public, secret, server)


def read(paths: Iterable[str | Path]) -> KeyLog:
    keys = KeyLog()
    for path in paths:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise KeyLogError(f"{path}: cannot read the key log: {getattr(exc, 'strerror', None) or exc}") from None
        for number, line in enumerate(text.splitlines(), 1):
            key = parse_line(line, f"{path}:{number}")
            if key is not None:
                keys.add(key)
    return keys


def write(keys: Iterable[SessionKey], path: Path) -> int:
    """Write the key log; returns the number of keys."""
    lines = [key.line() for key in keys]
    path.parent.mkdir(parents=True, exist_ok=True)
    # secrets that open every session of the capture: readable by their owner only, as the capture
    # of a production system would want its key log (an older file's mode is narrowed too)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(descriptor, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as out:
        out.write("\n".join([HEADER, *lines]) + "\n")
    return len(lines)


def beside(capture: Path) -> Path:
    """Where `run --pcap FILE` writes the key log: FILE.keys."""
    return capture.with_name(capture.name + ".keys")


class Collector:
    """Collects the session keys this process generates while it is open (reference_impl.zmtp.curve's hook)."""

    def __init__(self) -> None:
        from reference_impl.zmtp.curve import observe_session_keys
        self.keys: list[SessionKey] = []
        self._stop = observe_session_keys(self._observe)

    def _observe(self, role: str, transient, server_public: bytes) -> None:
        self.keys.append(SessionKey(role, transient.public, transient.secret, server_public))

    def close(self) -> None:
        if self._stop is not None:
            self._stop()
            self._stop = None
