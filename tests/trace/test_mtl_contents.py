"""The suite's MTL Contents across a server's connections: what a connection logs of bodies unique
to a case run (conformance/trace/rules/mtl_contents.py) and the check of the confirm-test
profile's redelivery on those logs (conformance/trace/sessions/mtl_contents.py).

The facts are built through the rules' own log, from hand-written frames; times are seconds, and
the recycle bound is 0.4 s (the reference's confirm timeout of 600 ms less 200 ms)."""

from __future__ import annotations

from conformance.trace.rules.mtl_contents import ContentLog
from conformance.trace.sessions import findings_of

SCOPE = "[mtl/ack-wrap/confirm-multiple 0123456789ab]"
READER, WRITER, CONTROL = 41001, 41002, 41003


def _body(text: str) -> bytes:
    return f"{text} {SCOPE}".encode()


def _fact(port: int, moves, leases=(), grants=(), ended=9.0, blind_from=None, within=0.4):
    """A connection's fact from (side, fields, ts) frames in order, as the mtl rules log them."""
    log = ContentLog()
    for n, (side, fields, ts) in enumerate(moves):
        take = log.client if side == "client" else log.server
        take(fields["kind"], fields, ts, lambda n=n: {"frame": n, "offset": 10 * n, "end": None})
    if blind_from is not None:
        log.blind(blind_from)
    fact = log.fact([(lease, {"grant": {"kind": kind, "confirm": confirm}}) for lease, kind, confirm in grants],
                    set(leases), 0.5, ended, within)
    assert fact is not None and fact.pop("host_wide") is True
    server = "127.0.0.1:7001" if leases or moves else "127.0.0.1:7000"
    return {**fact, "connection": f"127.0.0.1:{port} -> {server}", "capture": "c.pcap", "transport": "zmtp",
            "endpoints": {"client": f"127.0.0.1:{port}", "server": server}}


def _writer(*texts, ts=1.0, port=WRITER, properties=None):
    return _fact(port, [("client", {"kind": "content", "seq": n + 1, "payload": _body(text),
                                    "properties": properties or {}}, ts) for n, text in enumerate(texts)],
                 leases=["W"])


def _control(confirm="full", kind="reader", lease="R"):
    return _fact(CONTROL, [], grants=[(lease, kind, confirm)])


def delivered(text, seq, ts, properties=None):
    return ("server", {"kind": "content", "seq": seq, "payload": _body(text), "properties": properties or {}}, ts)


def confirm(seq, ts, multiple=False):
    return ("client", {"kind": "confirm", "seq": seq, "multiple": multiple}, ts)


def reject(seq, ts, multiple=False, recycle=True):
    return ("client", {"kind": "reject", "seq": seq, "multiple": multiple, "recycle": recycle}, ts)


def _reader(*moves, port=READER, lease="R", ended=9.0):
    return _fact(port, list(moves), leases=[lease], ended=ended)


def _found(*facts):
    return [(f.requirement, f.sender, f.connection.split(" ")[0], f.frame) for _, f in findings_of("mtl", list(facts))]


def _reader_found(requirement: str, frame: int):
    return [(requirement, "server", f"127.0.0.1:{READER}", frame)]


def test_a_connection_logs_only_bodies_unique_to_a_case_run_and_the_acknowledgements_after_one():
    log = ContentLog()
    def where():
        return {"frame": 0, "offset": 0, "end": None}
    log.client("confirm", {"seq": 1, "multiple": False}, 1.0, where)  # no delivery yet: nothing to settle
    log.client("content", {"seq": 1, "payload": b"one"}, 1.0, where)  # a plain body: not the suite's unique one
    log.client("content", {"seq": 2, "payload": _body("one")}, 1.1, where)
    log.client("content", {"seq": 3, "payload": _body("one")}, 1.2, where)
    log.server("content", {"seq": 5, "payload": b"one [not a scope]", "properties": {}}, 1.3, where)
    log.server("content", {"seq": 6, "payload": _body("two"), "properties": {"k": "v"}}, 1.4, where)
    log.client("reject", {"seq": 6, "multiple": True, "recycle": True}, 1.5, where)
    assert log.writes == {f"one {SCOPE}": [2, 1.1]}
    assert [(e["kind"], e["seq"]) for e in log.events] == [("delivery", 6), ("reject", 6)]
    assert log.events[0]["properties"] == '{"k": "v"}' and log.events[1]["recycle"] is True
    log.blind(2.0)
    log.server("content", {"seq": 7, "payload": _body("three"), "properties": {}}, 2.1, where)
    assert len(log.events) == 2 and log.blind_from == 2.0


def test_a_correct_confirm_test_flow_gives_no_finding():
    # confirm-multiple as the reference plays it: "three" sent again by the timer, then confirmed
    reader = _reader(delivered("one", 1, 1.01), delivered("two", 2, 1.02), delivered("three", 3, 1.03),
                     confirm(2, 1.04, multiple=True), delivered("three", 4, 1.7), confirm(4, 1.71, multiple=True))
    assert _found(_control(), _writer("one", "two", "three"), reader) == []


def test_a_content_sent_again_after_a_confirm_covered_it():
    # ignores-multiple: Confirm 2 multiple covers "one" (1), which comes again
    reader = _reader(delivered("one", 1, 1.01), delivered("two", 2, 1.02), delivered("three", 3, 1.03),
                     confirm(2, 1.04, multiple=True), delivered("one", 4, 1.7))
    assert _found(_control(), _writer("one", "two", "three"), reader) == _reader_found("mtl-confirm-multiple", 4)
    # confirm-multiple-exclusive: ... and "two" (2), the sequence it names
    reader = _reader(delivered("one", 1, 1.01), delivered("two", 2, 1.02), confirm(2, 1.04, multiple=True),
                     delivered("two", 3, 1.7))
    assert _found(_control(), _writer("one", "two"), reader) == _reader_found("mtl-confirm-multiple", 3)
    # a single Confirm of the copy's latest sequence settles it; of an earlier one, sent again since, not
    reader = _reader(delivered("one", 1, 1.01), delivered("one", 2, 1.7), confirm(2, 1.71), delivered("one", 3, 2.4))
    assert _found(_control(), _writer("one"), reader) == _reader_found("mtl-confirm-multiple", 3)
    reader = _reader(delivered("one", 1, 1.01), delivered("one", 2, 1.7), confirm(1, 1.71), delivered("one", 3, 2.4))
    assert _found(_control(), _writer("one"), reader) == []
    # a Confirm without multiple covers exactly the sequence it names
    reader = _reader(delivered("one", 1, 1.01), delivered("two", 2, 1.02), confirm(2, 1.03), delivered("one", 3, 1.7))
    assert _found(_control(), _writer("one", "two"), reader) == []


def test_a_content_sent_again_on_a_confirm_none_reader_lease():
    reader = _reader(delivered("once", 1, 1.01), delivered("once", 2, 1.7))
    assert _found(_control("none"), _writer("once"), reader) == _reader_found("mtl-confirm-model", 1)
    # on a full lease, a Content not confirmed is sent again: as the profile says
    assert _found(_control("full"), _writer("once"), reader) == []


def test_a_content_sent_again_without_its_properties():
    reader = _reader(delivered("one", 1, 1.01, {"k": "v"}), delivered("one", 2, 1.7))
    assert _found(_control(), _writer("one", properties={"k": "v"}), reader) == _reader_found("mtl-confirm-model", 1)
    kept = _reader(delivered("one", 1, 1.01, {"k": "v"}), delivered("one", 2, 1.7, {"k": "v"}))
    assert _found(_control(), _writer("one", properties={"k": "v"}), kept) == []


def test_a_recycling_reject_owes_every_content_it_covers_at_once():
    head = [delivered("one", 1, 1.01), delivered("two", 2, 1.02), reject(2, 1.03, multiple=True)]
    both = _reader(*head, delivered("one", 3, 1.04), delivered("two", 4, 1.05), confirm(4, 1.06, multiple=True))
    assert _found(_control(), _writer("one", "two"), both) == []
    # reject-ignores-multiple: "two" comes back at once, "one" not while the connection stays open 0.4 s
    only_named = _reader(*head, delivered("two", 3, 1.04), ended=1.45)
    assert _found(_control(), _writer("one", "two"), only_named) == _reader_found("mtl-reject-multiple", 2)
    # ... nor when the confirm timeout sends it later
    late = _reader(*head, delivered("two", 3, 1.04), delivered("one", 4, 1.63))
    assert _found(_control(), _writer("one", "two"), late) == _reader_found("mtl-reject-multiple", 4)
    # a connection that ends sooner proves nothing yet
    assert _found(_control(), _writer("one", "two"), _reader(*head, delivered("two", 3, 1.04), ended=1.3)) == []
    # the sequence the Reject names is owed at once too (mtl-reject-recycle)
    single = _reader(delivered("one", 1, 1.01), reject(1, 1.02), ended=1.5)
    assert _found(_control(), _writer("one"), single) == _reader_found("mtl-reject-recycle", 1)


def test_nothing_is_judged_after_a_reject_without_recycle():
    reader = _reader(delivered("one", 1, 1.01), reject(1, 1.02, recycle=False), delivered("one", 2, 1.1))
    assert _found(_control(), _writer("one"), reader) == []


def test_a_body_the_capture_does_not_account_for_is_not_judged():
    ignored = _reader(delivered("one", 1, 1.01), delivered("two", 2, 1.02), confirm(2, 1.04, multiple=True),
                      delivered("one", 4, 1.7))
    found = _reader_found("mtl-confirm-multiple", 3)
    assert _found(_control(), _writer("one", "two"), ignored) == found
    # written twice (a second copy may come), or never seen written
    assert _found(_control(), _writer("one", "two"), _writer("one", port=41009), ignored) == []
    assert _found(_control(), _writer("two"), ignored) == []
    # delivered on another reader too: a Content another reader left may be sent to this one
    other = _reader(delivered("one", 7, 1.01), port=41010, lease="R2")
    assert _found(_control(), _writer("one", "two"), ignored, other) == []
    # a connection blind over any moment from the write to the last delivery may hide a write
    blind = _fact(41011, [], leases=["X"], blind_from=1.5, ended=1.6)
    assert _found(_control(), _writer("one", "two"), ignored, blind) == []
    blind_before = _fact(41011, [], leases=["X"], blind_from=0.6, ended=0.9)
    assert _found(_control(), _writer("one", "two"), ignored, blind_before) == found


def test_a_reader_whose_lease_the_capture_does_not_tie_to_one_reader_grant_is_not_judged():
    ignored = _reader(delivered("one", 1, 1.01), confirm(1, 1.02), delivered("one", 2, 1.7))
    assert _found(_control(), _writer("one"), ignored) == _reader_found("mtl-confirm-multiple", 2)
    assert _found(_writer("one"), ignored) == []
    assert _found(_control(kind="writer"), _writer("one"), ignored) == []
    assert _found(_control(), _control("none"), _writer("one"), ignored) == []


def test_the_contents_session_lives_at_the_server_host():
    from conformance.trace.observer import Observer
    from conformance.trace.rules import rules_for
    rules = rules_for("mtl", "zmtp", {}, services=True)
    rules.grants.append(("R", {"first_ts": 1.0, "server_port": 7001, "grant": {"kind": "reader", "confirm": "full"}}))
    observer = Observer("mtl", "zmtp", ("127.0.0.1", 41000), ("127.0.0.1", 6999), rules)
    observer.finish()
    assert [(key, "host_wide" in fact) for _, key, fact in observer.facts] == [
        ("127.0.0.1:7001 R", False), ("127.0.0.1 contents", False)]
    # without the test services, a body proves nothing of where it came from: no contents fact
    rules = rules_for("mtl", "zmtp", {})
    rules.grants.append(("R", {"first_ts": 1.0, "server_port": 7001, "grant": {"kind": "reader", "confirm": "full"}}))
    observer = Observer("mtl", "zmtp", ("127.0.0.1", 41000), ("127.0.0.1", 6999), rules)
    observer.finish()
    assert [key for _, key, _ in observer.facts] == ["127.0.0.1:7001 R"]
