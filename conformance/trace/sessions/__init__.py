"""Checks across connections: what one connection cannot show (a resumed RSocket session, a lease
taken on one MTL connection and presented on another, a message published on one connection and
delivered on others).

A connection's rules hand over, when it finishes, small *session facts*: ``(session key, fact)``
pairs, plain dicts that pickle and travel through a Spark shuffle.  The observer prefixes the key
with the server's address (a session lives on one server: a resume token or lease at another
address is another session's) and adds where the connection was (``connection``,
``endpoints``, ``transport``); :class:`Sessions` (or the Spark job) adds its ``capture``.  All
facts of one (protocol, key) are then given, in time order (``first_ts``), to the protocol's
checker, ``conformance.trace.sessions.<protocol>.check(facts)``, which returns violations
``(fact, side, requirement, message, where)``: the fact of the connection the violation is seen
on, the side that broke it, a MUST or SHOULD requirement id of docs/requirements/<protocol>.yaml,
what was seen, and ``where`` (a dict with ``frame``, ``offset`` and maybe ``end``, as the
observer places frames) or None.

A checker judges only what the facts prove: a session whose earlier connection is not in the
capture, or whose facts were cut by a gap, is not judged.
"""

from __future__ import annotations

import importlib
from collections import defaultdict

from conformance.trace.findings import GRADE_OF_LEVEL, Finding, requirements

#: the protocols whose rules give session facts -> the module that checks them
CHECKERS = {"rsocket": "conformance.trace.sessions.rsocket", "mtl": "conformance.trace.sessions.mtl",
            "micromessage2": "conformance.trace.sessions.micromessage2", "mc0": "conformance.trace.sessions.mc0"}


def findings_of(protocol: str, facts: list[dict]) -> list[tuple[str, Finding]]:
    """(capture, finding) of one session: ``facts`` of any order, all of one (protocol, key)."""
    module = importlib.import_module(CHECKERS[protocol])
    known = requirements(protocol)
    out = []
    # a total order, so that the Spark job (facts in shuffle order) and one process agree on ties
    ordered = sorted(facts, key=lambda f: (f["first_ts"], f["connection"], f["capture"]))
    for fact, side, requirement, message, where in module.check(ordered):
        if requirement not in known or known[requirement].level not in GRADE_OF_LEVEL:
            raise KeyError(f"session rules name {requirement!r}, not a MUST or SHOULD of {protocol}")
        where = where or {}
        out.append((fact["capture"], Finding(protocol, requirement, side, fact["connection"], fact["endpoints"][side],
                                             where.get("frame"), where.get("offset"), message, fact["transport"],
                                             where.get("end"))))
    return out


class Sessions:
    """The facts of one invocation, by (protocol, key); only connections that gave any are held."""

    def __init__(self) -> None:
        self.facts: dict[tuple[str, str], list[dict]] = defaultdict(list)

    def add(self, capture: str, rows) -> None:
        for protocol, key, fact in rows:
            self.facts[(protocol, key)].append({**fact, "capture": capture})

    def findings(self) -> list[tuple[str, Finding]]:
        """(capture of the connection it is seen on, finding) of every session."""
        return [found for (protocol, _), facts in sorted(self.facts.items()) for found in findings_of(protocol, facts)]
