"""Content hashes that decide whether an image must be rebuilt."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

TAG_LENGTH = 16


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def wheel_content_hash(wheel: Path) -> str:
    """Hash of the wheel's members, not of the zip: zip timestamps must not force a rebuild."""
    digest = hashlib.sha256()
    with zipfile.ZipFile(wheel) as archive:
        for name in sorted(archive.namelist()):
            digest.update(name.encode() + b"\0")
            digest.update(hashlib.sha256(archive.read(name)).digest())
    return digest.hexdigest()


def combine(parts: dict[str, str]) -> str:
    """One hash over named inputs; the names keep two inputs from trading places unnoticed."""
    digest = hashlib.sha256()
    for name in sorted(parts):
        digest.update(f"{name}={parts[name]}\n".encode())
    return digest.hexdigest()


def tag_of(content_hash: str) -> str:
    return content_hash[:TAG_LENGTH]
