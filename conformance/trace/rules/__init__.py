"""Per protocol: which requirement each thing seen on the wire breaks.

A rules object watches one connection.  Its hooks return violations, each
``(side, requirement id, message)``: the side that broke it ("client" or "server"),
an id from docs/requirements/<protocol>.yaml, and what was seen; a fourth item names the side
whose frames the violation rests on (e.g. a reply to a request never seen): it is dropped at
the end when some of that side's frames could not be seen.  An extra item ``"SHOULD"``
(findings.SHOULD) grades a breach of a MUST requirement at SHOULD level, where the profile
grades that breach NON-STRICT.
"""

from __future__ import annotations

import importlib

from reference_impl.common.errors import CodecError

from conformance.protocols import adapter_for
from conformance.scenario.timing import SUITE_WAITS
from conformance.registry import NAMES

#: protocol -> the module holding its Rules: one per protocol of the registry
MODULES = {name: f"conformance.trace.rules.{name}" for name in NAMES}


def run_or_lenient(params: dict, adapter, name: str, pick) -> float:
    """Rules.run_or_lenient for code that holds only the run's ``params``."""
    return params.get(name, pick(adapter.params[name], adapter.ref_params[name])) / 1000


class Rules:
    """The default of every hook: frames decode with the protocol's reader, a codec error names
    the requirement ``ERRORS`` maps its code to (else ``FRAMING``), nothing else is checked."""

    protocol = ""
    ERRORS: dict[str, str] = {}
    FRAMING = ""  # the requirement a frame that does not decode breaks, when ERRORS has no better one
    NOT_VIOLATIONS = frozenset({"too-large"})  # our own reader's limits, not the peer's fault
    keys = None  # check-trace --keylog: the session keys (conformance.trace.keylog.KeyLog), for rules that decrypt
    #: the capture is of a conformance run, so the suite's test services hold (each profile's "test
    #: service" section: what a route or publisher name promises); off for other traffic
    services = False
    #: (with ``services``) the capture says this connection's client was the target, running a
    #: client-role test case against the suite (each profile's "Test cases (client role)")
    test_client = False

    def __init__(self, transport: str, params: dict[str, int]) -> None:
        self.transport = transport
        self.params = params
        self.at: tuple[int, int, int | None] = (0, 0, None)
        self.blind: set[str] = set()  # sides whose frames the rules no longer see (on_gap)
        # side -> when its last bytes came (the observer sets it): all a rule knows of bytes that
        # complete no frame, such as a frame stalled half-way
        self.last_data: dict[str, float] = {}

    def suite_wait(self, name: str) -> float:
        """One of the suite's waits (s): the run's or the user's (``params``), else its default."""
        return self.params.get(name, SUITE_WAITS[name]) / 1000

    def adapter_wait(self, name: str, default: int) -> float:
        """An adapter's wait (s): the run's or the user's (``params``), else its ``default`` (ms)
        stretched as the recorded ``expect_ms`` says a --time-scale stretched the run (a capture `run
        --pcap` wrote records the suite's waits, and an adapter's only where --param set it); never
        shorter than the default."""
        if name in self.params:
            return self.params[name] / 1000
        return default * self.stretch() / 1000

    def run_or_lenient(self, adapter, name: str, pick) -> float:
        """An adapter parameter (s) that a rule may only take as the run gave it: the run's or the user's
        (``params``), else ``pick`` (min or max, whichever can only miss a finding) of the adapter's
        default and the reference's ref_params (a run against the reference uses those)."""
        return run_or_lenient(self.params, adapter, name, pick)

    def stretch(self) -> float:
        """How much a --time-scale stretched the run's waits, as the recorded ``expect_ms`` says (at least 1)."""
        return max(1.0, self.params.get("expect_ms", SUITE_WAITS["expect_ms"]) / SUITE_WAITS["expect_ms"])

    def where(self) -> dict:
        """Where the frame being judged is, as a finding or a session fact places it (``self.at``)."""
        frame, offset, end = self.at
        return {"frame": frame, "offset": offset, "end": end}

    def new_reader(self, side: str):
        return adapter_for(self.protocol).new_reader(self.transport)

    def on_error(self, side: str, exc: CodecError, ts: float):
        if exc.code in self.NOT_VIOLATIONS:
            return []
        return [(side, self.ERRORS.get(exc.code, self.FRAMING), f"invalid bytes: {exc}")]

    def on_frame(self, side: str, frame, ts: float):
        return []

    def on_ws(self, side: str, kind: str, payload, ts: float):
        return []

    def on_end(self, side: str, ts: float, how: str, pending: int):
        return []

    def on_abort(self, side: str, ts: float):
        """An RST after the side's FIN: the moment it gave up on a peer that kept its side open."""
        return []

    def on_gap(self, side: str) -> None:
        """The rules see no more of this side's frames (a capture gap, bytes that do not decode): the
        side is in ``blind`` from now on (a rules class that does more calls this first)."""
        self.blind.add(side)

    def on_finish(self):
        return []

    def on_finish_at(self):
        """Violations judged only once the connection is over but found at a frame: (where, violation),
        ``where`` the ``self.at`` of that frame (e.g. a delivery that might have been another
        publisher's until its own never came)."""
        return []

    def session_facts(self) -> list[tuple[str, dict]]:
        """(session key, fact) for the checks across connections (conformance/trace/sessions), asked
        when the connection is finished: small plain dicts; where a frame was is ``self.at``
        (frame index, offset, end of the span or None) as the observer set it before on_frame."""
        return []

    def notes(self) -> list[tuple[str, str]]:
        """(side, reason) for what the rules saw but could not check (e.g. encrypted frames)."""
        return []


def rules_for(protocol: str, transport: str, params: dict[str, int], keys=None, services: bool = False,
              test_client: bool = False) -> Rules:
    module = importlib.import_module(MODULES[protocol])
    rules = module.Rules(transport, params)
    if keys:
        rules.keys = keys
    rules.services = services
    rules.test_client = services and test_client
    return rules


def other(side: str) -> str:
    return "server" if side == "client" else "client"
