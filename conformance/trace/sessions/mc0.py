"""mc0 across connections (conformance/trace/rules/mc0.py gives the facts).  Two kinds of session:

**The server's short-term key** (docs/profiles/mc0.md "Security": a broker's short-term key pair S'
is new for each connection; RFC 26: on a valid HELLO the server "SHALL generate a new transient key
pair").  A session is keyed by an S' the key log proved a connection's (its WELCOME opened with the
client's c', or its READY with the server's s'); its facts are the connections that got it, with
the client's C' (which a client makes new for each connection too).  Two connections to one server
with different C' that got the same S' break mc0-curve: a fresh key pair repeats with probability
2^-252.  Connections with the same C' are not judged: they may be one connection captured twice,
or one HELLO replayed.

**A topic** (docs/profiles/mc0.md "Publish and subscribe": a PUT to t reaches every subscriber of
t).  Its facts are the connections that subscribed to it or published to it.  A PUT is proven
received by the broker by the broker's OK to it (its only request waiting with that ID), or by a
delivery of it (the same topic and positional parts) on another
connection at or after it was sent, and then only while its own connection stays open ``window``
after it with no ERROR from the broker from the PUT on (another publisher's PUT of the same body,
sent before, may be the one delivered: the PUT itself, then, was not refused nor lost with its
connection).  A subscription is proven in place by the broker's OK to the SUB (its only request
waiting with that ID) sent before the PUT (a capture stamps a frame when it passed: the OK left
the broker before the PUT reached it).  The broker breaks mc0-put-subscribers when such a
subscriber, on another connection than the PUT's, never gets the PUT, judged like an answer never
sent (as the other rules judge one): only when the subscriber's connection ended ``window`` or
more after the PUT was sent (the suite's own captures stamp a frame when the suite read it, so a
delivery elsewhere may be stamped late; the PUT's stamp is when it was written), with all its
frames seen (and opened), and nothing that lets a correct broker drop the subscription: no UNSUB of the topic, no DISCONNECT, no TTL asked (a quiet client may be found
absent), no message that did not decode (the broker keeps serving everyone *else*), and so little
sent to it that the broker's writes cannot have waited on a client not reading.
"""

from __future__ import annotations

#: a subscriber to whom the broker sent at most this much cannot have stopped its writes by not
#: reading (the socket buffers of both ends hold more)
_READING_PROVEN = 8192


def check(facts: list[dict]):
    kinds = {fact.get("kind") for fact in facts}
    if kinds == {"server-transient"}:
        return _same_transient(facts)
    if kinds == {"topic"}:
        return _fan_out(facts)
    return []


def _same_transient(facts: list[dict]):
    out = []
    first = facts[0]
    for fact in facts[1:]:
        if fact["client_transient"] == first["client_transient"] or fact["connection"] == first["connection"]:
            continue  # the same HELLO: one connection captured twice, or a HELLO replayed
        out.append((fact, "server", "mc0-curve",
                    f"the WELCOME gives the server short-term key S'={fact.get('server_transient', '')[:16]}..., "
                    f"which the WELCOME of {first['connection']} (another client C') gave "
                    f"{1000 * (fact['first_ts'] - first['first_ts']):.0f} ms before: a broker's short-term key pair "
                    f"is new for each connection (RFC 26: the server SHALL generate a new transient key pair for "
                    f"each valid HELLO)", fact["at"]))
    return out


def _open_after(fact: dict, ts: float) -> bool:
    """The connection was seen open ``window`` after ``ts`` (its end seen that late, or not at all
    while the capture went on: the caller proves the capture went on)."""
    return fact["ended"] is None or fact["ended"] - ts >= fact["window"]


def _fan_out(facts: list[dict]):
    out = []
    for publisher in facts:
        for index, (sent, digest, _) in enumerate(publisher["published"]):
            acked = index in publisher.get("acked", ())  # the broker's OK to the PUT: it read and served it
            if not publisher["whole"] or (not acked and publisher["last_error"] is not None
                                          and publisher["last_error"] >= sent):
                continue  # an ERROR may have refused the PUT (or one may be in what the capture lacks)
            got = [(ts, fact) for fact in facts if fact["connection"] != publisher["connection"]
                   for ts, d in fact["delivered"] if d == digest and ts >= sent]
            if not got and not acked:
                continue  # nothing proves the broker read it
            reached = f"reached {min(got, key=lambda g: g[0])[1]['connection']}" if got else "was acknowledged (OK)"
            for fact in facts:
                if fact["connection"] == publisher["connection"] or fact["subscribed"] is None \
                        or fact["subscribed"] >= sent or fact["unsubscribed"]:
                    continue  # not proven subscribed before the PUT was sent (or its own publisher)
                if any(d == digest for _, d in fact["delivered"]):
                    continue
                if fact["overflow"] or not fact["whole"] or fact["ended"] is None \
                        or fact["ended"] - sent < fact["window"]:
                    continue  # it may still come, or came in what the capture (or the fact) does not show
                if fact["disconnected"] or fact["asked_ttl"] or fact["malformed"] \
                        or fact["server_octets"] > _READING_PROVEN:
                    continue  # the broker may have dropped the subscription, or waited on a client not reading
                if not acked and not _open_after(publisher, sent):
                    continue  # its PUT may not have been read: the delivery elsewhere may be another's
                out.append((fact, "server", "mc0-put-subscribers",
                            f"a PUT to the topic on {publisher['connection']} {reached} but never "
                            f"this subscriber, whose SUB the broker acknowledged (OK) before the PUT was sent "
                            f"({1000 * (fact['ended'] - sent):.0f} ms after the PUT, this connection ended without it)", None))
            if out:
                return out
    return out
