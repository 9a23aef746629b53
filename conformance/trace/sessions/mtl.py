"""MTL leases across data connections (docs/profiles/mtl.md "Leases": a lease belongs to the first
data connection that presents it).  A session is keyed by the lease; its facts
(conformance/trace/rules/mtl.py) are the data connections that presented it, with the Responses.

The server breaks mtl-lease-response when it grants (2xx) a lease on a connection while another
connection holds it: one that presented it first and got 200, that has not
ended, and that presented it less than the heartbeat timeout before (so the server cannot have
forgotten it as a dead peer's).  A lease whose first grant the capture does not hold is not judged.
"""

from __future__ import annotations


def _granted(answer: dict) -> bool:
    return 200 <= answer["code"] < 300


def check(facts: list[dict]):
    out = []
    holders: list[tuple[dict, dict]] = []  # (fact, the answer that granted it), first first
    for fact in facts:
        for answer in fact["answers"]:
            if not _granted(answer):
                continue
            holder = next((h for h in holders if h[0]["connection"] != fact["connection"]
                           and h[1]["ts"] < answer["asked"] and answer["asked"] - h[1]["asked"] < h[0]["dead_after"]
                           and (h[0]["ended"] is None or h[0]["ended"] > answer["ts"])), None)
            if holder is not None:
                out.append((fact, "server", "mtl-lease-response",
                            f"the lease was granted ({answer['code']}) on this connection while "
                            f"{holder[0]['connection']}, which presented it "
                            f"{1000 * (answer['asked'] - holder[1]['asked']):.0f} ms before and was granted it, "
                            f"was still open: a lease belongs to the first data connection that presents it "
                            f"(403)", answer["at"]))
                return out
            if not any(h[0]["connection"] == fact["connection"] for h in holders):
                holders.append((fact, answer))
    return out
