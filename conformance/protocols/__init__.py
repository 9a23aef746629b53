"""Protocol adapters: how the harness encodes, decodes and matches each protocol's frames."""

from __future__ import annotations

import importlib

from conformance.protocols.base import ProtocolAdapter
from conformance.registry import NAMES

#: every protocol of this suite, from the one registry (conformance/registry.py)
KNOWN = NAMES


def adapter_for(protocol: str) -> ProtocolAdapter:
    if protocol not in KNOWN:
        raise KeyError(f"unknown protocol {protocol!r} (known: {', '.join(KNOWN)})")
    module = importlib.import_module(f"conformance.protocols.{protocol}")
    return module.ADAPTER


def available() -> list[str]:
    """Protocols whose adapter is present in this build."""
    found = []
    for name in KNOWN:
        try:
            importlib.import_module(f"conformance.protocols.{name}")
        except ModuleNotFoundError:
            continue
        found.append(name)
    return found
