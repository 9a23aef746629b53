"""The suite's Contents across an MTL server's connections (facts: conformance/trace/rules/mtl_contents.py):
with the test services on, a body unique to one run of a case tells which Content a delivery is, so
the confirm-test profile's redelivery can be judged on the wire.

A body is judged on the one reader connection it reached, only where the capture accounts for it:
exactly one write of it (on any connection), no other connection it was delivered to (a Content
another reader left may be sent to this one), and no connection blind (a gap) over any moment from
its first write to its last delivery.  That reader must have presented one lease, granted once in
the capture by a 202 answering a Connection.Reader whose confirm model is "none" or "full".  Then
the reader holds one copy of the Content, and:

* on a "none" lease a delivery settles it (docs/profiles/mtl.md, "Test service": a none reader's
  Content is never sent again; mtl-confirm-model, the requirement none-reader-not-redelivered names);
* on a "full" lease a Confirm settles it when its sequence is the copy's latest, or, with multiple
  TRUE, not below it (mtl-confirm-multiple: "covers all Contents up to and including the specified
  content sequence"), unless that sequence is above every delivery the capture shows on the connection
  (docs/profiles/mtl.md: one never issued makes the Confirm or Reject invalid, ignored in full); a Reject with recycle TRUE owes it again "at once", which the confirm-test
  cases read as before the confirm timeout less 200 ms (mtl-reject-recycle for the sequence named,
  mtl-reject-multiple for one below it); a Reject without recycle ends the judging (what becomes of
  it is the profile's open question);
* a delivery of a settled copy is a violation of what settled it, and a copy sent again must keep its
  properties (mtl-confirm-model: the Content "is sent again", as redelivered-with-properties tests).
"""

from __future__ import annotations

from collections import Counter, defaultdict


def check(facts: list[dict]):
    writes: Counter[str] = Counter()
    spans: dict[str, list[float]] = {}  # body -> [first write, last delivery]
    receivers: dict[str, set[str]] = defaultdict(set)
    grants: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for fact in facts:
        for body, (count, first) in fact["writes"].items():
            writes[body] += count
            _widen(spans, body, first)
        for event in fact["events"]:
            if event["kind"] == "delivery":
                receivers[event["body"]].add(fact["connection"])
                _widen(spans, event["body"], event["ts"])
        for lease, kind, confirm in fact["grants"]:
            grants[lease].append((kind, confirm))
    blind = [(f["blind_from"], f["ended"] if f["ended"] is not None else float("inf"))
             for f in facts if f["blind_from"] is not None]
    judged = {body for body, (first, last) in spans.items() if writes[body] == 1 and len(receivers[body]) == 1
              and not any(start <= last and first <= end for start, end in blind)}
    out = []
    for fact in facts:
        granted = grants.get(fact["leases"][0], []) if len(fact["leases"]) == 1 else []
        if len(granted) == 1 and granted[0][0] == "reader" and granted[0][1] in ("none", "full") \
                and fact["blind_from"] is None:
            out += _reader(fact, granted[0][1], judged)
    return out


def _widen(spans: dict[str, list[float]], body: str, ts: float) -> None:
    span = spans.setdefault(body, [ts, ts])
    span[0], span[1] = min(span[0], ts), max(span[1], ts)


def _name(body: str) -> str:
    return repr(body if len(body) <= 80 else body[:77] + "...")


class _Copy:
    """The reader's one copy of a Content: its latest sequence, whether a delivery may still come."""

    def __init__(self, event: dict) -> None:
        self.seq, self.properties = event["seq"], event["properties"]
        self.settled: tuple[str, str] | None = None  # (requirement, what settled it)
        self.recycled: dict | None = None  # the Reject that owes it again
        self.done = False  # judged no further


def _reader(fact: dict, model: str, judged: set[str]):
    out = []
    copies: dict[str, _Copy] = {}
    within = fact["recycle_within"]

    def found(requirement: str, message: str, where: dict) -> None:
        out.append((fact, "server", requirement, message, where))

    highest = 0  # the highest sequence the capture shows delivered on this connection so far
    for event in fact["events"]:
        if event["kind"] == "delivery":
            highest = max(highest, event["seq"])
            body = event["body"]
            if body not in judged:
                continue
            copy = copies.get(body)
            if copy is None:
                copy = copies[body] = _Copy(event)
            elif copy.done:
                continue
            elif copy.settled:
                requirement, how = copy.settled
                found(requirement, f"the Content {_name(body)} came again (sequence {event['seq']}) after {how}",
                      event["at"])
                copy.done = True
                continue
            else:
                _again(copy, event, within, found)
            if model == "none":
                copy.settled = ("mtl-confirm-model", "its delivery on a confirm \"none\" reader lease, whose "
                                "Contents are not confirmed and never sent again")
        elif model == "full":
            if event["multiple"] and event["seq"] > highest:
                continue  # a sequence never issued (as far as the capture shows): ignored, it covers nothing
            for copy in copies.values():
                if not copy.done and not copy.settled and _covers(event, copy.seq):
                    _acknowledge(copy, event)
    if within is not None and fact["ended"] is not None:
        for body, copy in copies.items():
            if not copy.done and copy.recycled and fact["ended"] - copy.recycled["ts"] >= within:
                requirement, how = _recycling(copy.recycled)
                found(requirement, f"the Content {_name(body)}, recycled by {how}, did not come again in the "
                      f"{1000 * (fact['ended'] - copy.recycled['ts']):.0f} ms the connection stayed open (at once "
                      f"is within {1000 * within:.0f} ms)", copy.recycled["at"])
    return out


def _covers(event: dict, seq: int) -> bool:
    return event["seq"] == seq or (event["multiple"] and seq < event["seq"])


def _acknowledge(copy: _Copy, event: dict) -> None:
    how = f"the client's {event['kind'].title()} of sequence {event['seq']} (multiple {event['multiple']})"
    if copy.recycled:
        copy.done = True  # acknowledged again before it came back: which delivery it settles is open
    elif event["kind"] == "confirm":
        copy.settled = ("mtl-confirm-multiple", f"{how} covered it (sequence {copy.seq})")
    elif event["recycle"]:
        copy.recycled = {**event, "named": event["seq"] == copy.seq, "how": how}
    else:
        copy.done = True  # a Reject without recycle: the profile does not say what follows


def _recycling(recycled: dict) -> tuple[str, str]:
    """(requirement, how) of a copy a Reject recycled: its own sequence named, or one above it with multiple."""
    return ("mtl-reject-recycle" if recycled["named"] else "mtl-reject-multiple"), recycled["how"]


def _again(copy: _Copy, event: dict, within: float | None, found) -> None:
    """A delivery of a copy still owed: sent again by the confirm timeout or a recycling Reject."""
    if event["properties"] != copy.properties:
        found("mtl-confirm-model", f"the Content was sent again (sequence {event['seq']}) with properties "
              f"{event['properties']}, not {copy.properties}: a Content not confirmed is sent again as it was",
              event["at"])
        copy.done = True
        return
    if copy.recycled and within is not None and event["ts"] - copy.recycled["ts"] > within:
        requirement, how = _recycling(copy.recycled)
        found(requirement, f"the Content, recycled by {how}, came again only "
              f"{1000 * (event['ts'] - copy.recycled['ts']):.0f} ms later (at once is within {1000 * within:.0f} ms)",
              event["at"])
        copy.done = True
        return
    copy.seq, copy.recycled = event["seq"], None
