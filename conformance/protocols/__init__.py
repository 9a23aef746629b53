"""Protocol adapters: how the harness encodes, decodes and matches each protocol's frames."""

from __future__ import annotations

import importlib
import importlib.util

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
    """Protocols whose adapter is present in this build: found, not imported (a run of one protocol
    need not load the five others' adapters and reference cores: about 0.2 s of its start-up)."""
    return [name for name in KNOWN if importlib.util.find_spec(f"conformance.protocols.{name}") is not None]
