"""The interface every protocol adapter implements, and shared matching."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Protocol

from conformance.scenario.values import payload_matches


class TargetFault(Exception):
    """A send the suite cannot build from what the target sent earlier (a saved value it
    cannot use): the target broke the exchange, so the case fails; the case is not broken."""


@dataclass
class Frame:
    """One decoded frame/message from the target, as plain fields."""

    fields: dict[str, Any]
    summary: str

    def __str__(self) -> str:
        return self.summary


class FrameReader(Protocol):
    def feed(self, data: bytes | str) -> list[Frame]:
        """Decode what arrived; raises CodecError on invalid input."""

    @property
    def pending(self) -> int:
        """Bytes of an incomplete frame held (bounded by the codec's limit)."""


class RunningServer(Protocol):
    url: str

    async def close(self) -> None: ...


@dataclass
class ProtocolAdapter:
    name: str
    transports: tuple[str, ...]
    default_noise: list[dict[str, Any]]
    params: dict[str, int]
    ref_params: dict[str, int]
    macros: dict[str, list[dict[str, Any]]]
    new_reader: Callable[[str], FrameReader]
    encode: Callable[[dict[str, Any], str], list[bytes | str]]
    normalize: Callable[[dict[str, Any]], dict[str, Any]]
    frame_check: Callable[[dict[str, Any]], list[tuple[tuple, str]]]
    start_reference: Callable[[str, dict[str, int]], Awaitable[RunningServer]]
    run_reference_client: Callable[[str, str], Awaitable[int]]
    serve: Callable[[Any], int]
    extra: dict[str, Any] = field(default_factory=dict)

    def matches(self, spec: dict[str, Any], frame: Frame) -> tuple[bool, str]:
        """Does the frame have every field the (normalized) spec names?"""
        for key, expected in spec.items():
            ok, why = self.field_matches(key, expected, frame)
            if not ok:
                return False, why
        return True, ""

    def field_matches(self, key: str, expected: Any, frame: Frame) -> tuple[bool, str]:
        """One named field: a payload spec, a range ({in}/{min}/{max}) or an exact value. Adapters
        whose frames carry other kinds of field override this and defer to it for the rest."""
        if key == "payload":
            return payload_matches(expected, frame.fields.get("payload"))
        actual = frame.fields.get(key, _MISSING)
        if actual is _MISSING:
            return False, f"no field {key!r} in {frame}"
        if isinstance(expected, dict):
            return _in_range(key, actual, expected)
        if actual != expected:
            return False, f"{key} is {_show(actual)}, expected {_show(expected)}"
        return True, ""


_MISSING = object()


def _in_range(key: str, actual: Any, spec: dict[str, Any]) -> tuple[bool, str]:
    """{in: [...]} or {min: a, max: b}: several values are conformant."""
    if not ({"in", "min", "max"} & set(spec)):
        return False, f"{key}: the case gives no value, in, min or max to compare {_show(actual)} with"
    if "in" in spec and actual not in spec["in"]:
        return False, f"{key} is {_show(actual)}, expected one of {', '.join(map(_show, spec['in']))}"
    if "min" in spec and actual < spec["min"]:
        return False, f"{key} is {_show(actual)}, expected at least {_show(spec['min'])}"
    if "max" in spec and actual > spec["max"]:
        return False, f"{key} is {_show(actual)}, expected at most {_show(spec['max'])}"
    return True, ""


def _show(value: Any) -> str:
    return hex(value) if isinstance(value, int) and value > 9 else repr(value)
