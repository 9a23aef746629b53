"""Micromessage2 topics across connections (docs/profiles/micromessage2.md "Commands and pub/sub":
a SEND to a topic is fanned out to every subscriber).  A session is keyed by the topic; its facts
(conformance/trace/rules/micromessage2.py) are the connections that subscribed to it or published
to it: when each subscription is proven in place, each publication, each delivery.

A publication is proven received by the server by a delivery of it (the same destination and
payload) on some connection, or by the server sending back a message its client sent after it; a
subscription is proven in place by a delivery on the topic, or by the server sending back a
message the client sent after its subscribe (either way it read the earlier frame first: a
connection's frames are read in order).  The server breaks mm2-topic-fan-out
when a subscriber proven in place before the publication was sent never gets it, judged like an
answer never sent: only when that connection ended ``window`` or more after the proof, with all
its server frames seen (and kept in its fact) and no unsubscribe of the topic.  Without such proofs nothing is judged.
"""

from __future__ import annotations


def check(facts: list[dict]):
    out = []
    for publisher in facts:
        read = publisher.get("read") or [None] * len(publisher["published"])
        for (sent, digest, _), read_at in zip(publisher["published"], read):
            got = [(ts, fact) for fact in facts for ts, d in fact["delivered"] if d == digest and ts >= sent]
            if read_at is not None:
                got.append((read_at, None))
            if not got:
                continue  # nothing proves the server received it
            received, first = min(got, key=lambda g: g[0])
            proof = "was read by the server (it echoed a later message)" if first is None else \
                f"reached {first['connection']}"
            for fact in facts:
                if fact["proven"] is None or fact["proven"] >= sent or fact["unsubscribed"]:
                    continue  # not proven subscribed before the publication was sent
                if any(d == digest for _, d in fact["delivered"]):
                    continue
                if fact["overflow"] or not (fact["complete"] and fact["ended"]
                                            and fact["last_ts"] - received >= fact["window"]):
                    continue  # it may still come, or came in what the capture (or the fact) does not show
                out.append((fact, "server", "mm2-topic-fan-out",
                            f"a message published to the topic on {publisher['connection']} {proof} "
                            f"but never reached this subscriber, subscribed before it was published "
                            f"({1000 * (fact['last_ts'] - received):.0f} ms until this connection ended)", None))
            if out:
                return out
    return out
