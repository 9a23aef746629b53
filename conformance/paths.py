"""Where the bundled scenarios, vectors and docs live.

In a checkout they are the top-level folders; in an installed wheel they are
package data under ``conformance/_bundled``.
"""

from __future__ import annotations

from pathlib import Path

_PKG = Path(__file__).resolve().parent
_CHECKOUT = _PKG.parent


def _pick(name: str) -> Path:
    for candidate in (_CHECKOUT / name, _PKG / "_bundled" / name):
        if candidate.is_dir():
            return candidate
    return _CHECKOUT / name


def scenarios_dir() -> Path:
    return _pick("scenarios")


def vectors_dir() -> Path:
    return _pick("vectors")


def docs_dir() -> Path:
    return _pick("docs")

