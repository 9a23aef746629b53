"""MTL leases across connections.  A session is keyed by the lease at the data port: its facts
(conformance/trace/rules/mtl.py) are the data connections that presented it, with the Responses,
and the 202 Data Lease that granted it on a control connection (keyed at the port the 202 names,
on the control connection's host), with the Connection.Reader/Writer's confirm model.

* docs/profiles/mtl.md "Leases": a lease belongs to the first data connection that presents it.
  The server breaks mtl-lease-response when it grants (2xx) a lease on a connection another
  connection took first: one that presented it first and got 200, and that
  presented it less than the heartbeat timeout before (so the server cannot have forgotten it as
  a dead peer's).  Whether that connection has ended since does not matter: the lease dies with it
  (presented again after its close, 403).  A lease whose first grant the capture does not hold is
  not judged.
* the spec's "Content Confirmation": the Contents of a data flow are confirmed or not as the
  Connection.Writer's "confirm" says.  The server breaks mtl-confirm-model when it sends a Confirm
  covering a Content the client sent on a data connection that holds (2xx) a lease granted as
  a writer with confirm "none".  Judged only when the capture ties the two beyond doubt: one 202
  for the lease (at that host and port) in the capture, answering a Connection.Writer the control
  connection's both sides show in full, given before the data connection presented the lease and
  while the control connection was still open; and a data connection that presented no other
  lease and whose client frames were all seen (another lease, of another model, could be the one
  its Contents go under).
"""

from __future__ import annotations

from conformance.trace.sessions import mtl_contents


def _granted(answer: dict) -> bool:
    return 200 <= answer["code"] < 300


def check(facts: list[dict]):
    if facts and "events" in facts[0]:  # the server's "contents" session, not a lease's
        return mtl_contents.check(facts)
    holders = [fact for fact in facts if "answers" in fact]
    return _shared(holders) or _confirm_model([fact for fact in facts if "grant" in fact], holders)


def _shared(facts: list[dict]):
    out = []
    holders: list[tuple[dict, dict]] = []  # (fact, the answer that granted it), first first
    for fact in facts:
        for answer in fact["answers"]:
            if not _granted(answer):
                continue
            holder = next((h for h in holders if h[0]["connection"] != fact["connection"]
                           and h[1]["ts"] < answer["asked"] and answer["asked"] - h[1]["asked"] < h[0]["dead_after"]),
                          None)
            if holder is not None:
                closed = holder[0]["ended"] is not None and holder[0]["ended"] <= answer["ts"]
                out.append((fact, "server", "mtl-lease-response",
                            f"the lease was granted ({answer['code']}) on this connection after "
                            f"{holder[0]['connection']} presented it "
                            f"{1000 * (answer['asked'] - holder[1]['asked']):.0f} ms before and was granted it"
                            + (" and then closed: a lease dies with the data connection that presented it first "
                               "(403)" if closed else
                               ", still open: a lease belongs to the first data connection that presents it (403)"),
                            answer["at"]))
                return out
            if not any(h[0]["connection"] == fact["connection"] for h in holders):
                holders.append((fact, answer))
    return out


def _confirm_model(grants: list[dict], holders: list[dict]):
    if len(grants) != 1:
        return []  # no grant in the capture, or the same lease granted twice: which one is held is unknown
    control = grants[0]
    grant = control["grant"]
    if grant["kind"] != "writer" or grant["confirm"] != "none":
        return []
    for fact in holders:
        if fact["leases"] != 1 or not fact["complete"] or not fact["confirms"]:
            continue
        held = next((a for a in fact["answers"] if _granted(a)), None)
        if held is None or held["asked"] <= grant["ts"] or \
                (control["ended"] is not None and control["ended"] <= held["asked"]):
            continue  # not proven the lease of that 202, or that 202's connection had gone
        confirm = fact["confirms"][0]
        return [(fact, "server", "mtl-confirm-model",
                 f"the server confirmed Content {confirm['seq']} on a data connection holding a writer lease "
                 f"granted (202 on {control['connection']}) with confirm \"none\": its Contents are not confirmed",
                 confirm["at"])]
    return []
