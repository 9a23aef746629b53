"""The interface every protocol adapter implements, and shared matching."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Protocol

from conformance.scenario.values import payload_matches


class TargetFault(Exception):
    """A send the suite cannot build from what the target sent earlier (a saved value it
    cannot use): the target broke the exchange, so the case fails; the case is not broken."""


class Frame:
    """One decoded frame/message from the target, as plain fields.

    ``summary`` may be given as a function: it is made the first time it is read (a log entry
    kept, a failure message), not for each of a volume case's 70,000 passing frames."""

    __slots__ = ("fields", "_summary")

    def __init__(self, fields: dict[str, Any], summary: str | Callable[[], str]) -> None:
        self.fields = fields
        self._summary = summary

    @property
    def summary(self) -> str:
        if not isinstance(self._summary, str):
            self._summary = self._summary()
        return self._summary

    def __str__(self) -> str:
        return self.summary

    def __repr__(self) -> str:
        return f"Frame(fields={self.fields!r}, summary={self.summary!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Frame):
            return NotImplemented
        return self.fields == other.fields and self.summary == other.summary

    __hash__ = None  # type: ignore[assignment]  (as the dataclass it was: mutable, compared by value)


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
    #: what a sent frame does to state the target shares between connections (topics, leases), as the
    #: words a loader error names ("subscribes to a topic"), or None: such a case must be `serial`
    shared_state: Callable[[dict[str, Any]], str | None] | None = None

    def shared_state_use(self, case: dict[str, Any]) -> tuple[tuple, str] | None:
        """The first step of a raw case that touches the target's shared state, and what it does.

        Checkably: a `send` (also inside `repeat` and the adapter's macros) that the adapter's
        ``shared_state`` names, or a `connect` without a port (a second client of the target:
        fan-out between connections)."""
        return _shared_step(self, case.get("steps", []), ("steps",), 0)

    def matches(self, spec: dict[str, Any], frame: Frame) -> tuple[bool, str]:
        """Does the frame have every field the (normalized) spec names?"""
        for key, expected in spec.items():
            ok, why = self.field_matches(key, expected, frame)
            if not ok:
                return False, why
        return True, ""

    def never_both(self, key: str, one: Any, other: Any) -> bool:
        """No frame's field ``key`` matches both expected values: two different plain values of a
        field matched exactly (payload specs, ranges and adapters' own kinds of field never say so).
        Adapters whose field_matches reads a plain value otherwise override this too."""
        return key != "payload" and isinstance(one, _PLAIN) and isinstance(other, _PLAIN) and one != other

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
_PLAIN = (str, bytes, int, float, bool)
_MACRO_DEPTH = 4


def _shared_step(adapter: ProtocolAdapter, steps: Any, path: tuple, depth: int) -> tuple[tuple, str] | None:
    for index, step in enumerate(steps if isinstance(steps, list) else []):
        if not isinstance(step, dict):
            continue
        where = path + (index,)
        send, connect = step.get("send"), step.get("connect")
        if isinstance(send, dict) and adapter.shared_state is not None and (what := adapter.shared_state(send)):
            return where + ("send",), what
        if isinstance(connect, dict) and connect.get("port") is None:
            return where + ("connect",), "opens a second client of the target (fan-out between connections)"
        if isinstance(step.get("repeat"), dict):
            found = _shared_step(adapter, step["repeat"].get("steps"), where + ("repeat", "steps"), depth)
        elif step.get("macro") in adapter.macros and depth < _MACRO_DEPTH:
            found = _shared_step(adapter, adapter.macros[step["macro"]], where + ("macro",), depth + 1)
            found = (where + ("macro",), f"runs macro {step['macro']!r}, which {found[1]}") if found else None
        else:
            found = None
        if found:
            return found
    return None


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
