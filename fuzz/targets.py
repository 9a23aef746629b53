"""The fuzz targets by name, and how to load them.

Nothing here imports ``reference_impl``: the worker must be able to turn on
coverage instrumentation before the code under test is imported.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VECTORS = ROOT / "vectors"


@dataclass(frozen=True)
class TargetInfo:
    name: str
    protocol: str
    module: str  # fuzz.<protocol>, defining TARGETS and seeds()
    max_len: int


#: protocol -> (its targets' kinds: the codec, then the state machine; max input length).  mc0's state
#: machine is the broker (its connections are ZMTP's, fuzzed by zmtp-connection).  mc0 inputs may be
#: longer: frames past 4 KiB (ZMTP's long sizes, long header values) are part of its structure.
PROTOCOL_TARGETS: dict[str, tuple[tuple[str, str], int]] = {
    "stmp": (("codec", "connection"), 4096),
    "micromessage2": (("codec", "connection"), 4096),
    "rsio": (("codec", "connection"), 4096),
    "zmtp": (("codec", "connection"), 4096),
    "mtl": (("codec", "connection"), 4096),
    "mc0": (("codec", "broker"), 16384),
    "rsocket": (("codec", "connection"), 4096),
}


def _targets() -> dict[str, TargetInfo]:
    out = {}
    for protocol, (kinds, max_len) in PROTOCOL_TARGETS.items():
        for kind in kinds:
            name = f"{protocol}-{kind}"
            out[name] = TargetInfo(name, protocol, f"fuzz.{protocol}", max_len)
    return out


TARGETS: dict[str, TargetInfo] = _targets()
PROTOCOLS = tuple(dict.fromkeys(t.protocol for t in TARGETS.values()))


def available_protocols() -> list[str]:
    """Protocols whose fuzz module and reference implementation are both importable."""
    found = []
    for protocol in PROTOCOLS:
        try:
            importlib.import_module(f"fuzz.{protocol}")
        except ImportError:
            continue
        found.append(protocol)
    return found


def targets_for(selector: str) -> list[TargetInfo]:
    """``all``, a protocol name or one target name."""
    if selector in TARGETS:
        return [TARGETS[selector]]
    protocols = available_protocols() if selector == "all" else [selector]
    if selector != "all" and selector not in PROTOCOLS:
        raise KeyError(f"unknown protocol or target {selector!r}; protocols: {', '.join(PROTOCOLS)}; "
                       f"targets: {', '.join(TARGETS)}")
    return [t for t in TARGETS.values() if t.protocol in protocols]


def load(name: str) -> Callable[[bytes], None]:
    """The raw target function (it raises whatever the code under test raises)."""
    info = TARGETS[name]
    return importlib.import_module(info.module).TARGETS[name]


def allowed_errors() -> tuple[type[BaseException], ...]:
    """What a target may raise without that being a crash: the codecs' documented errors."""
    from reference_impl.common.errors import CodecError, ProtocolViolation
    return (CodecError, ProtocolViolation)


def guarded(name: str) -> Callable[[bytes], None]:
    """The target with the allowed errors swallowed: anything it raises is a crash."""
    target = load(name)
    allowed = allowed_errors()

    def one_input(data: bytes) -> None:
        try:
            target(data)
        except allowed:
            pass

    return one_input


def vector_tests(protocol: str) -> list[tuple[dict, dict]]:
    """(group context, test) for every vector of ``protocol``."""
    out = []
    for path in sorted((VECTORS / protocol).glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        for group in doc["testGroups"]:
            for test in group["tests"]:
                out.append((group["context"], test))
    return out


def seed_inputs(protocol: str) -> dict[str, list[bytes]]:
    module = importlib.import_module(f"fuzz.{protocol}")
    return module.seeds(vector_tests(protocol))
