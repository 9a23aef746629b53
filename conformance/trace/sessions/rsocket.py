"""RSocket resumption across connections ("Resuming Operation", docs/profiles/rsocket.md
"Resumption"): a session is keyed by its resume token; its facts (conformance/trace/rules/rsocket.py,
``Rules.session_facts``) are one SETUP connection, then the RESUME connections that go on with it.

Implied positions count on across connections: the SETUP connection from 0, a resumed one from
the positions its RESUME (the server's) and RESUME_OK (the client's) name.  Only what the capture
proves is judged, and bytes in flight when a transport drops are never taken as received:

* what a side received is proven only by that side: a KEEPALIVE's last received position, or (the
  server) a frame on a stream the client opened, which answers the request that opened it; TCP
  ACKs prove nothing about the application;
* in a conformance run's capture (the rules' ``services``), a client running the profile's `stream`
  or `resume` test case proves by its k-th REQUEST_N of 2 that it took (so received) the first 2k
  items of its stream (rules/rsocket_testcase.py);
* a RESUME naming less than the client proved it received breaks rsocket-resume-client-first-frame;
  a RESUME_OK naming less than the server proved it received breaks rsocket-resume-ok-position;
* after RESUME_OK the server's positioned frames go on from the client's position: the frames it
  sent from there on are the first it sends (again) (rsocket-resume-server-implied-position); one
  that is not, or none until the connection ended ``window`` after RESUME_OK, breaks it;
* a session set up with L gets a LEASE after each RESUME_OK (rsocket-resume-lease-restart),
  judged like the answers rules/rsocket.py waits for: when a side ended the connection ``window``
  past the RESUME_OK.

For a capture of a conformance run (the rules' ``services``), the test service's ``last-fnf``
is judged across the connections to one server (``check_last_fnf``).

A session whose SETUP connection is not in the capture is not judged; nor, from there on, one
whose RESUME or RESUME_OK names a position past all the capture shows sent (a connection of the
session is missing), one cut by a gap, or one already found broken.  Except in a conformance run's
capture (``services``), which holds every connection the suite made (traffic to the server the
capture does not hold is what saying so rules out, as for last-fnf): there a RESUME_OK naming more
than the client sent on all the session's connections (each from that one capture, whole, and
none a resume whose client frames may have counted without a RESUME_OK shown) breaks
rsocket-resume-ok-position.  Such a capture also shows a RESUME_OK to a token no SETUP of it
carried, which breaks rsocket-resume-rejected (the suite resumes without a SETUP of its own only
with tokens no run sets up), and a target client's RESUME of a session after an
ERROR[REJECTED_RESUME] it read, which breaks rsocket-resume-client-no-retry (``_read_refusal``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from conformance.trace.rules.rsocket import SESSION_FRAMES


@dataclass
class _Session:
    """What the capture proves of a session so far (positions are the session's implied positions)."""

    lease: bool
    client_sent: int | None  # the client's highest position sent (None: some of its frames not seen)
    server_sent: int | None
    server_received: int  # proven: the server received at least this much of the client's frames
    received_why: str
    client_received: int  # proven by the client's KEEPALIVE (or, in a conformance run, its test case's REQUEST_N)
    client_why: str = ""
    #: the conformance run's capture every connection of the session so far came from (None: not one, or
    #: a connection whose client frames may count without a RESUME_OK the capture shows)
    run: str | None = None
    frames: dict[int, tuple[int, str]] = field(default_factory=dict)  # server frame start -> (end, digest)


def check(facts: list[dict]):
    if facts and facts[0]["kind"] == "test-service":
        return check_last_fnf(facts)
    out: list = []
    session, set_up, refusal = None, False, None
    for fact in facts:
        if fact["kind"] == "RESUME" and refusal is not None:
            out.append((fact, "client", "rsocket-resume-client-no-retry",
                        f"RESUME of the session again, after ERROR[REJECTED_RESUME] refused its RESUME on "
                        f"{refusal['connection']} {1000 * (refusal['rejected_resume'] - refusal['resume']['ts']):.0f} "
                        "ms after it, while the `resume` test case was still waiting for the answer",
                        fact["resume"]["at"]))
            return out
        refusal = _read_refusal(fact) or (None if fact["kind"] == "SETUP" else refusal)
        if fact["kind"] == "SETUP":
            session, set_up = None if fact["refused"] else _set_up(fact), True
        elif session is not None:
            session = _resumed(session, fact, out)
        elif not set_up and fact.get("services") and fact["resume_ok"] is not None:
            out.append((fact, "server", "rsocket-resume-rejected",
                        "RESUME_OK to a RESUME whose token no SETUP in this conformance run's capture set up: "
                        "the run's traffic is all the server gets, so it had no such session", fact["resume_ok"]["at"]))
            return out
    return out


def _read_refusal(fact: dict) -> dict | None:
    """The RESUME connection whose ERROR[REJECTED_RESUME] a test client read: it came while the client
    still listened, within ``reply`` of the RESUME, and the profile's `resume` test case waits that
    long for its RESUME's answer (a RESUME after it is the session's again; a new SETUP starts anew)."""
    rejected = fact.get("rejected_resume")
    if (fact["kind"] != "RESUME" or rejected is None or not (fact.get("services") and fact.get("test_client"))
            or rejected - fact["resume"]["ts"] > fact["reply"]):
        return None
    return fact


def _set_up(fact: dict) -> _Session:
    complete, sent = fact["complete"], fact["sent"]
    session = _Session(fact["lease"], sent["client"] if complete["client"] else None,
                       sent["server"] if complete["server"] else None, 0, "", 0)
    session.run = fact["capture"] if fact.get("services") else None
    _proven(session, fact, 0)
    if fact.get("taken", 0) > session.client_received:
        session.client_received, session.client_why = fact["taken"], f"on {fact['connection']} {fact['taken_why']}"
    _keep(session, fact["frames"], 0)
    return session


def _proven(session: _Session, fact: dict, base: int) -> None:
    """Raise what the server is proven to have received by this connection's frames."""
    answered, keepalive = base + fact["answered"] if fact["answered"] else 0, fact["keepalive"]["server"]
    if answered > session.server_received:
        session.server_received = answered
        session.received_why = (f"on {fact['connection']} it answered a request of the client's ending at position "
                                f"{answered}")
    if keepalive > session.server_received:
        session.server_received = keepalive
        session.received_why = f"on {fact['connection']} its KEEPALIVE said position {keepalive}"
    if fact["keepalive"]["client"] > session.client_received:
        session.client_received = fact["keepalive"]["client"]
        session.client_why = f"its KEEPALIVE on {fact['connection']} said position {session.client_received}"


def _keep(session: _Session, frames: list, base: int) -> None:
    for start, end, digest, _ in frames:
        session.frames[base + start] = (base + end, digest)
    for start in sorted(session.frames)[:-2 * SESSION_FRAMES]:  # bounded: a RESUME that far back is not judged
        del session.frames[start]


def _resumed(session: _Session, fact: dict, out: list) -> _Session | None:
    resume, ok = fact["resume"], fact["resume_ok"]
    asked = resume["server_position"]
    if session.server_sent is not None and asked > session.server_sent:
        return None  # more than the capture shows the server sent: a connection is missing from it
    if asked < session.client_received:
        out.append((fact, "client", "rsocket-resume-client-first-frame",
                    f"RESUME names server position {asked}, but the client had received at least "
                    f"{session.client_received}: {session.client_why}", resume["at"]))
        return None
    if fact["capture"] != session.run or not fact.get("services"):
        session.run = None
    if ok is None:
        if fact["sent"]["client"]:
            session.run = None  # frames sent after a RESUME whose RESUME_OK the capture lacks: counted or not
        return None if fact["refused"] else session  # refused, or the transport dropped again first
    position = ok["position"]
    if session.client_sent is not None and position > session.client_sent:
        if session.run is not None:
            out.append((fact, "server", "rsocket-resume-ok-position",
                        f"RESUME_OK names client position {position}, but the client's positioned frames on all "
                        f"the session's connections end at {session.client_sent}: this conformance run's capture "
                        "holds every one of them", ok["at"]))
        return None  # more than the capture shows the client sent: a connection is missing from it
    if position < session.server_received:
        out.append((fact, "server", "rsocket-resume-ok-position",
                    f"RESUME_OK names client position {position}, but the server had received at least "
                    f"{session.server_received}: {session.received_why}", ok["at"]))
        return None
    waited = fact["ended"] and fact["last_ts"] - ok["ts"] >= fact["window"] and fact["complete"]["server"]
    _replay(session, fact, asked, waited, out)
    if session.lease and not fact["lease_after_ok"] and waited:
        out.append((fact, "server", "rsocket-resume-lease-restart",
                    f"the session was set up with L, but after its RESUME_OK the server sent no LEASE in the "
                    f"{1000 * (fact['last_ts'] - ok['ts']):.0f} ms until the connection ended", ok["at"]))
    complete, sent = fact["complete"], fact["sent"]
    session.client_sent = (max(session.client_sent, position + sent["client"])
                           if session.client_sent is not None and complete["client"] else None)
    session.server_sent = (max(session.server_sent, asked + sent["server"])
                           if session.server_sent is not None and complete["server"] else None)
    session.server_received = max(session.server_received, position)
    session.client_received = max(session.client_received, asked)
    _proven(session, fact, position)
    session.frames = {start: kept for start, kept in session.frames.items() if start < asked}
    _keep(session, fact["frames"], asked)
    return session


def _replay(session: _Session, fact: dict, asked: int, waited: bool, out: list) -> None:
    """The server's frames after RESUME_OK start with those it sent from ``asked`` on."""
    if session.server_sent is None:
        return
    owed, at = [], asked
    while at < session.server_sent:
        if at not in session.frames:
            return  # not a frame boundary the capture kept: not judged
        end, digest = session.frames[at]
        owed.append((at, end, digest))
        at = end
    after = fact["after_ok"]
    for n, (start, end, digest) in enumerate(owed):
        if n < len(after):
            if after[n][2] != digest:
                out.append((fact, "server", "rsocket-resume-server-implied-position",
                            f"RESUME asked the server's frames from position {asked} on and RESUME_OK accepted; the "
                            f"server's frame {n + 1} after it is not the one it sent at position {start} "
                            f"(bytes {start}-{end - 1}), so their implied positions no longer match", after[n][3]))
            return
        if len(after) >= SESSION_FRAMES or not waited:
            return  # the capture kept no more of them, or may have stopped before they came
        out.append((fact, "server", "rsocket-resume-server-implied-position",
                    f"RESUME asked the server's frames from position {asked} on and RESUME_OK accepted, but the "
                    f"frames it sent from position {start} to {session.server_sent} never came again in the "
                    f"{1000 * (fact['last_ts'] - fact['resume_ok']['ts']):.0f} ms until the connection ended",
                    fact["resume_ok"]["at"]))
        return


# -- the test service's last-fnf (rules/rsocket_service.py) -------------------------------------


def check_last_fnf(facts: list[dict]):
    """``last-fnf`` answers the text of the last ``fnf:<text>`` the server received.  Judged only
    where the capture proves which fnf that was: the last one on the asking connection before the
    ask (one connection's frames are read in order), sent at least ``window`` (silence_ms) before
    the ask, as the active cases wait before they ask; no fnf of the asking connection after the
    ask before the answer; every connection to the server that the capture holds whole and from
    one capture file (timestamps of one clock); and every fnf of another connection seen after the
    answer (so it reached the server after the answer left) or proven read before that fnf was
    sent (the server answered a request sent after it on its connection before that fnf was
    seen).  The service's state is the server's: traffic to it that the capture does not hold
    (another address, another capture) is what saying the capture is of a conformance run
    (``--test-services``) rules out."""
    if len({fact["capture"] for fact in facts}) != 1:
        return []
    out = []
    for fact in facts:
        for ask in fact["asks"]:
            found = _last_fnf_broken(fact, ask, facts)
            if found:
                out.append(found)
    return out


def _last_fnf_broken(fact: dict, ask: dict, facts: list[dict]):
    last = None
    for fnf in reversed(fact["fnfs"][:ask["before"]]):
        if fnf["kept"] is not False:
            last = fnf
            break
    if last is None or not last["kept"] or last["refused"] or last["requirement"] is None:
        return None
    if ask["answer"] == last["text"] or ask["ts"] - last["ts"] < fact["window"]:
        return None  # right, or asked before the service need have kept it (the active cases wait as long)
    for fnf in fact["fnfs"][ask["before"]:]:
        if fnf["kept"] is not False and fnf["ts"] <= ask["answer_ts"]:
            return None  # sent after the ask, but the answer may have been made after it was kept
    for other in facts:
        if not other["complete"] and other["first_ts"] <= ask["answer_ts"]:
            return None  # a connection whose fnfs the capture may not hold
        if other is fact:
            continue
        for fnf in other["fnfs"]:
            if fnf["kept"] is False or fnf["ts"] > ask["answer_ts"]:
                continue
            if fnf["settled"] is None or fnf["settled"] >= last["ts"]:
                return None  # it may have reached the server between the fnf and the ask
    text = last["text"].decode("utf-8", "replace")
    got = ask["answer"].decode("utf-8", "replace")
    return (fact, "server", last["requirement"],
            f"last-fnf answered {got[:40]!r}, but the last fire-and-forget the server received was "
            f"{last['why']}, whose text is {text[:40]!r} (no other connection's fnf could have come between)",
            ask["at"])
