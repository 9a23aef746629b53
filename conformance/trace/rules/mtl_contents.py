"""What one MTL connection shows of the suite's Contents, for the check across connections
(conformance/trace/sessions/mtl_contents.py).

A Content the suite writes in a confirm-test case carries a body made for that one run of the case
(``{unique: TEXT}`` payloads, conformance/scenario/values.py: the text, then the case's id and a
nonce).  So, in a capture of a conformance run, a body tells which Content a delivery is, and a
Content sent again is known for the same one even though it carries a new sequence.  Other bodies
are not logged: the same body written twice, or before the capture began, leaves a second
delivery unexplained either way.

Logged, in the order the connection carried them: the client's Contents with such a body (the
writes), the server's (the deliveries), and, once a delivery came, the client's Confirms and
Rejects (what settles a delivery or asks for it again).  A connection whose frames the rules stop
seeing (a gap, bytes that break ZMTP framing, a log past its bound) says from when: what it may
hide from then on is the session check's to weigh.
"""

from __future__ import annotations

import json
from typing import Callable

from conformance.scenario.values import UNIQUE_SUFFIX

#: at most this many writes, deliveries, Confirms and Rejects are logged per connection; past it
#: the connection is blind from there on (what it hides is weighed as a gap's)
_KEPT = 512


def _unique_body(fields: dict) -> str | None:
    body = fields.get("payload")
    if isinstance(body, (bytes, bytearray)) and UNIQUE_SUFFIX.search(body):
        return bytes(body).decode("utf-8", "replace")
    return None


class ContentLog:
    def __init__(self) -> None:
        self.writes: dict[str, list] = {}  # body -> [how many, when the first came]
        self.events: list[dict] = []
        self.blind_from: float | None = None  # when the rules stopped seeing all of the connection

    def blind(self, ts: float) -> None:
        self.blind_from = ts if self.blind_from is None else min(self.blind_from, ts)

    def _room(self, ts: float) -> bool:
        """Whether one more entry is kept; past the bound the connection is blind from ``ts``."""
        if self.blind_from is None and len(self.events) + len(self.writes) >= _KEPT:
            self.blind(ts)
        return self.blind_from is None

    def client(self, kind: str, fields: dict, ts: float, where: Callable[[], dict]) -> None:
        """A client frame; ``where`` places it (Rules.where), asked only for what is logged."""
        body = _unique_body(fields) if kind == "content" else None
        if body is not None and body in self.writes:
            self.writes[body][0] += 1
        elif body is not None and self._room(ts):
            self.writes[body] = [1, ts]
        elif kind in ("confirm", "reject") and self.events and isinstance(fields.get("seq"), int) and self._room(ts):
            self.events.append({"kind": kind, "seq": fields["seq"], "multiple": fields.get("multiple") is True,
                                "recycle": fields.get("recycle") is True, "ts": ts, "at": where()})

    def server(self, kind: str, fields: dict, ts: float, where: Callable[[], dict]) -> None:
        body = _unique_body(fields) if kind == "content" else None
        if body is not None and isinstance(fields.get("seq"), int) and self._room(ts):
            self.events.append({"kind": "delivery", "body": body, "seq": fields["seq"], "ts": ts, "at": where(),
                                "properties": json.dumps(fields.get("properties") or {}, sort_keys=True,
                                                         default=repr)})

    def fact(self, grants: list[tuple[str, dict]], leases: set[str], first_ts: float, ended: float | None,
             recycle_within: float | None) -> dict | None:
        """This connection's part of the session, or None when it has none: ``grants`` (lease, fact),
        the 202 Data Leases it got (a control connection); ``leases`` it presented (a data
        connection); when it first ended; how soon a recycled Content is owed again."""
        if not (self.writes or self.events or grants or self.blind_from is not None):
            return None
        return {"host_wide": True, "first_ts": first_ts, "writes": self.writes, "events": self.events,
                "grants": [[lease, g["grant"]["kind"], g["grant"]["confirm"]] for lease, g in grants],
                "leases": sorted(leases), "blind_from": self.blind_from, "ended": ended,
                "recycle_within": recycle_within}
