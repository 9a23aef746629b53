"""Checks across connections (conformance/trace/sessions): an RSocket session set up on one
connection and resumed on another, on hand-built captures (tests/trace/rsocket_frames.py).

Positions are hand-computed: the client's REQUEST_STREAM is 17 bytes (implied positions 0-17),
each server PAYLOAD of one byte 7 (0-7, 7-14)."""

from __future__ import annotations

import json

from conformance.cli import main
from conformance.trace.check import check_file
from conformance.trace.sessions import Sessions
from tests.trace import rsocket_frames as rs
from tests.trace.pcapfiles import conversation, write_pcap

SERVER = ("127.0.0.1", 7878)
FIRST, SECOND = ("127.0.0.1", 40001), ("127.0.0.1", 40002)
RESUMED = f"{SECOND[0]}:{SECOND[1]} -> {SERVER[0]}:{SERVER[1]}"


def _set_up(*extra, lease=False):
    """The first connection: SETUP with R (and L), a stream of two PAYLOADs; then its transport drops."""
    return conversation(FIRST, SERVER, [("client", rs.setup(lease) + rs.REQUEST_STREAM),
                                        *([("server", rs.lease())] if lease else []),
                                        ("server", rs.payload(b"0")), ("server", rs.payload(b"1")), *extra])


def _resumed(*moves, start=900):
    return conversation(SECOND, SERVER, list(moves), start=start)


def _capture(tmp_path, *connections, pause_after=None, name="c.pcap"):
    """One capture of the connections in turn, a millisecond apart; a second's pause after the
    segment numbered ``pause_after`` (the connection's FINs come that much after it)."""
    segments = [seg for conn in connections for seg in conn]
    times = [1000.0 + i / 1000 + (1.0 if pause_after is not None and i > pause_after else 0)
             for i in range(len(segments))]
    return write_pcap(tmp_path / name, segments, times=times)


def _findings(*paths, services="auto"):
    sessions = Sessions()
    for path in paths:
        result = check_file(path, {}, "rsocket", {}, test_services=services)
        assert result.findings == [] and result.problems == [], [str(f) for f in result.findings]
        sessions.add(str(path), result.facts)
    return [(f.requirement, f.sender, f.connection, f.frame) for _, f in sessions.findings()]


def test_a_resume_ok_below_what_the_server_answered_is_a_finding(tmp_path):
    # the server answered the REQUEST_STREAM (positions 0-17) with PAYLOADs: it received 17
    bad = _capture(tmp_path, _set_up(), _resumed(("client", rs.resume(14)), ("server", rs.resume_ok(14))))
    assert _findings(bad) == [("rsocket-resume-ok-position", "server", RESUMED, 0)]
    good = _capture(tmp_path, _set_up(), _resumed(("client", rs.resume(14)), ("server", rs.resume_ok(17))),
                    name="good.pcap")
    assert _findings(good) == []


def test_without_the_setup_connection_nothing_is_judged(tmp_path):
    only = _capture(tmp_path, _resumed(("client", rs.resume(14)), ("server", rs.resume_ok(14))))
    assert _findings(only) == []


def test_a_resume_ok_to_a_token_no_setup_carried_is_a_finding_in_a_conformance_run(tmp_path):
    # the suite RESUMEs without a SETUP of its own only with tokens no run sets up (the profile's test service)
    only = _capture(tmp_path, _resumed(("client", rs.resume(14)), ("server", rs.resume_ok(14))))
    assert _findings(only, services="on") == [("rsocket-resume-rejected", "server", RESUMED, 0)]
    # the same token set up on a connection of the capture (or of another capture given with it)
    assert _findings(_capture(tmp_path, _set_up(), _resumed(("client", rs.resume(14)), ("server", rs.resume_ok(17))),
                              name="set-up.pcap"), services="on") == []
    # refused as owed
    refused = _capture(tmp_path, _resumed(("client", rs.resume(14)), ("server", rs.frame(0, 0x0B, 0, bytes.fromhex("00000004") + b"no session"))),
                       name="refused.pcap")
    assert _findings(refused, services="on") == []


def test_a_refusal_a_test_client_read_is_one_that_came_while_its_resume_case_waited():
    from conformance.trace.sessions.rsocket import _read_refusal
    fact = {"kind": "RESUME", "resume": {"ts": 10.0}, "rejected_resume": 10.2, "services": True, "test_client": True,
            "reply": 1.0}
    assert _read_refusal(fact) is fact
    # after the case's wait for the answer (it may have given up), not a test client, not a conformance run
    for other in ({"rejected_resume": 11.5}, {"test_client": False}, {"services": False}, {"rejected_resume": None}):
        assert _read_refusal({**fact, **other}) is None


def test_the_session_spans_files_and_the_cli_reports_it(tmp_path, capsys):
    first = _capture(tmp_path, _set_up(), name="first.pcap")
    second = _capture(tmp_path, _resumed(("client", rs.resume(14)), ("server", rs.resume_ok(14))),
                      name="second.pcap")
    records = tmp_path / "records.jsonl"
    assert main(["check-trace", "--port", "7878=rsocket", str(first), str(second), "--records", str(records)]) == 1
    assert "across connections: 1 findings" in capsys.readouterr().out
    (record,) = [json.loads(line) for line in records.read_text().splitlines()]
    assert (record["requirementId"], record["capture"], record["connection"]) == \
        ("rsocket-resume-ok-position", str(second), RESUMED)


def test_a_resume_below_the_clients_keepalive_position_is_a_finding(tmp_path):
    said = _capture(tmp_path, _set_up(("client", rs.keepalive(14))),
                    _resumed(("client", rs.resume(0)), ("server", rs.resume_ok(17))))
    assert _findings(said) == [("rsocket-resume-client-first-frame", "client", RESUMED, 0)]
    # without the KEEPALIVE nothing shows the PAYLOADs reached the client: they may have been in flight
    unsaid = _capture(tmp_path, _set_up(), _resumed(("client", rs.resume(0)), ("server", rs.resume_ok(17))),
                      name="unsaid.pcap")
    assert _findings(unsaid) == []


#: REQUEST_N (0x08) of 2 on stream 1: the profile's `stream`/`resume` test case sends it once it has
#: taken the two PAYLOADs it asked for
REQUEST_N_2 = rs.frame(1, 0x08, 0, bytes.fromhex("00000002"))


def test_a_resume_below_what_the_resume_test_case_took_is_a_finding_in_a_conformance_run(tmp_path):
    # SETUP with R, REQUEST_STREAM range:5 n 2 (the test case), PAYLOADs 0-7 and 7-14, REQUEST_N 2:
    # the client took both, so it received up to 14; its RESUME names 0
    took = _capture(tmp_path, _set_up(("client", REQUEST_N_2)),
                    _resumed(("client", rs.resume(0)), ("server", rs.resume_ok(27))))
    assert _findings(took, services="on") == [("rsocket-resume-client-first-frame", "client", RESUMED, 0)]
    # not a conformance run: any client's application may ask for more before it took what came
    assert _findings(took, services="off") == []
    # the right RESUME names 14
    right = _capture(tmp_path, _set_up(("client", REQUEST_N_2)),
                     _resumed(("client", rs.resume(14)), ("server", rs.resume_ok(27))), name="right.pcap")
    assert _findings(right, services="on") == []


def test_a_request_n_of_another_size_is_not_the_test_cases_proof(tmp_path):
    request_n_3 = rs.frame(1, 0x08, 0, bytes.fromhex("00000003"))
    other = _capture(tmp_path, _set_up(("client", request_n_3)),
                     _resumed(("client", rs.resume(0)), ("server", rs.resume_ok(27))))
    assert _findings(other, services="on") == []


def test_a_resume_ok_past_all_the_client_sent_is_a_finding_in_a_conformance_run(tmp_path):
    # the client's REQUEST_STREAM is all it sent (positions 0-17): RESUME_OK names 27
    past = _capture(tmp_path, _set_up(), _resumed(("client", rs.resume(14)), ("server", rs.resume_ok(27))))
    assert _findings(past, services="on") == [("rsocket-resume-ok-position", "server", RESUMED, 0)]
    # elsewhere the client may have resumed in between on a connection the capture lacks, and sent more
    assert _findings(past, services="off") == []


def test_a_resume_ok_past_what_the_capture_shows_is_not_judged_across_captures(tmp_path):
    first = _capture(tmp_path, _set_up(), name="first.pcap")
    second = _capture(tmp_path, _resumed(("client", rs.resume(14)), ("server", rs.resume_ok(27))), name="second.pcap")
    assert _findings(first, second, services="on") == []


def test_a_resume_whose_resume_ok_the_capture_lacks_may_have_counted_the_clients_frames(tmp_path):
    # a RESUME connection that drops with no RESUME_OK seen, yet the client sent a REQUEST_N (10 bytes)
    # on it: the server may have resumed and counted it (17 + 10 = 27)
    dropped = conversation(("127.0.0.1", 40003), SERVER, [("client", rs.resume(14) + REQUEST_N_2)], start=500)
    maybe = _capture(tmp_path, _set_up(), dropped, _resumed(("client", rs.resume(14)), ("server", rs.resume_ok(27))))
    assert _findings(maybe, services="on") == []


def test_after_resume_ok_the_server_goes_on_from_the_clients_position(tmp_path):
    resume = [("client", rs.resume(7)), ("server", rs.resume_ok(17))]
    replayed = _capture(tmp_path, _set_up(), _resumed(*resume, ("server", rs.payload(b"1")),
                                                      ("server", rs.payload(b"2"))))
    assert _findings(replayed) == []
    skipped = _capture(tmp_path, _set_up(), _resumed(*resume, ("server", rs.payload(b"2"))), name="skipped.pcap")
    assert _findings(skipped) == [("rsocket-resume-server-implied-position", "server", RESUMED, 1)]
    # nothing again, and the connection ends a second after RESUME_OK (segment 10 of the capture)
    silent = _capture(tmp_path, _set_up(), _resumed(*resume), pause_after=10, name="silent.pcap")
    assert _findings(silent) == [("rsocket-resume-server-implied-position", "server", RESUMED, 0)]
    # ... but a connection that ends at once may have been cut before the frames came
    brief = _capture(tmp_path, _set_up(), _resumed(*resume), name="brief.pcap")
    assert _findings(brief) == []


def test_a_leased_session_gets_a_lease_after_resume_ok(tmp_path):
    resume = [("client", rs.resume(14)), ("server", rs.resume_ok(17))]
    renewed = _capture(tmp_path, _set_up(lease=True), _resumed(*resume, ("server", rs.lease())), pause_after=11)
    assert _findings(renewed) == []
    stale = _capture(tmp_path, _set_up(lease=True), _resumed(*resume), pause_after=11, name="stale.pcap")
    assert _findings(stale) == [("rsocket-resume-lease-restart", "server", RESUMED, 0)]


# -- MTL leases: the checker on facts as conformance/trace/rules/mtl.py gives them ---------------

def _lease_fact(client_port: int, *answers, ended=None):
    """A data connection's presentations of one lease: (asked, code, answered) times in seconds."""
    return {"first_ts": answers[0][0], "dead_after": 3.5, "ended": ended, "transport": "tcp",
            "connection": f"127.0.0.1:{client_port} -> 127.0.0.1:7000", "capture": "c.pcap",
            "endpoints": {"client": f"127.0.0.1:{client_port}", "server": "127.0.0.1:7000"},
            "answers": [{"asked": asked, "code": code, "ts": ts, "at": {"frame": n, "offset": 10 * n, "end": None}}
                        for n, (asked, code, ts) in enumerate(answers)]}


def _lease_findings(*facts):
    from conformance.trace.sessions import findings_of
    return [(f.requirement, f.connection.split(" ")[0], f.frame) for _, f in findings_of("mtl", list(facts))]


def test_a_lease_granted_on_a_second_connection_while_the_first_holds_it():
    first, second = _lease_fact(1, (1.0, 200, 1.001)), _lease_fact(2, (1.01, 200, 1.011))
    assert _lease_findings(first, second) == [("mtl-lease-response", "127.0.0.1:2", 0)]
    # refused on the second, granted again on the first: the profile's own case
    assert _lease_findings(_lease_fact(1, (1.0, 200, 1.001), (1.02, 200, 1.021)),
                           _lease_fact(2, (1.01, 403, 1.011))) == []


def test_a_lease_presented_again_after_its_holder_closed_is_a_finding():
    # docs/profiles/mtl.md: a lease dies with the data connection that presented it first (403 after its close)
    findings = _lease_findings(_lease_fact(1, (1.0, 200, 1.001), ended=1.005), _lease_fact(2, (1.01, 200, 1.011)))
    assert [(requirement, sender) for requirement, sender, _ in findings] == [("mtl-lease-response", "127.0.0.1:2")]


def test_a_lease_is_not_judged_once_its_holder_may_have_let_it_go():
    # past the heartbeat timeout the server may have dropped the holder as a dead peer
    assert _lease_findings(_lease_fact(1, (1.0, 200, 1.001)), _lease_fact(2, (5.0, 200, 5.001))) == []
    # a first presentation refused holds nothing; answers that crossed prove no order
    assert _lease_findings(_lease_fact(1, (1.0, 403, 1.001)), _lease_fact(2, (1.01, 200, 1.011))) == []
    assert _lease_findings(_lease_fact(1, (1.0, 200, 1.02)), _lease_fact(2, (1.01, 200, 1.011))) == []


def _grant_fact(ts=0.5, kind="writer", confirm="none", ended=None, control_port=3):
    """A 202 Data Lease on a control connection, as the rules key it at the data port it names."""
    return {"first_ts": ts, "grant": {"kind": kind, "confirm": confirm, "ts": ts}, "ended": ended, "transport": "tcp",
            "connection": f"127.0.0.1:{control_port} -> 127.0.0.1:6999", "capture": "c.pcap",
            "endpoints": {"client": f"127.0.0.1:{control_port}", "server": "127.0.0.1:6999"}}


def _holder(client_port=1, asked=1.0, leases=1, complete=True, confirmed=True):
    """A data connection that presented the lease at ``asked`` (200), sent Content 1 and, if
    ``confirmed``, got a Confirm of it."""
    confirms = [{"ts": asked + 0.1, "seq": 1, "at": {"frame": 2, "offset": 40, "end": None}}] if confirmed else []
    return {**_lease_fact(client_port, (asked, 200, asked + 0.001)), "leases": leases, "complete": complete,
            "confirms": confirms}


def test_a_confirm_on_a_data_connection_holding_a_confirm_none_writer_lease():
    assert _lease_findings(_grant_fact(), _holder()) == [("mtl-confirm-model", "127.0.0.1:1", 2)]
    # what a writer lease of confirm full, or a reader lease, gets: nothing to judge
    assert _lease_findings(_grant_fact(confirm="full"), _holder()) == []
    assert _lease_findings(_grant_fact(kind="reader"), _holder()) == []
    assert _lease_findings(_grant_fact(), _holder(confirmed=False)) == []


def test_a_confirm_is_not_judged_unless_the_capture_ties_the_lease_to_its_202():
    # no 202 in the capture (its control connection is missing), or two for the same lease
    assert _lease_findings(_holder()) == []
    assert _lease_findings(_grant_fact(), _grant_fact(0.7, confirm="full", control_port=4), _holder()) == []
    # another lease presented on the data connection, or client frames not seen: its Contents may be under another
    assert _lease_findings(_grant_fact(), _holder(leases=2)) == []
    assert _lease_findings(_grant_fact(), _holder(complete=False)) == []
    # presented before this 202 came, or after its control connection had ended: not proven that 202's lease
    assert _lease_findings(_grant_fact(ts=1.5), _holder()) == []
    assert _lease_findings(_grant_fact(ended=0.9), _holder()) == []


def _data_connection(*frames, gap=False):
    """The mtl rules' fact of a data connection fed (side, fields) frames in order."""
    from conformance.protocols.base import Frame
    from conformance.trace.rules import rules_for
    rules = rules_for("mtl", "zmtp", {})
    rules.new_reader("client"), rules.new_reader("server")
    for n, (side, fields) in enumerate(frames):
        rules.at = (n, 10 * n, None)
        rules.on_frame(side, Frame(fields, ""), 1.0 + n / 100)
    if gap:
        rules.on_gap("client")
    [(_, fact)] = rules.session_facts()
    return fact


LEASED = [("client", {"kind": "lease", "seq": 1, "lease": "L"}), ("server", {"kind": "response", "seq": 1, "code": 200})]


def test_the_data_connections_fact_keeps_the_confirms_of_its_contents():
    content = ("client", {"kind": "content", "seq": 4, "resource": "resource"})
    fact = _data_connection(*LEASED, content, ("server", {"kind": "confirm", "seq": 4, "multiple": False}))
    assert (fact["leases"], fact["complete"], [c["seq"] for c in fact["confirms"]]) == (1, True, [4])
    assert [c["seq"] for c in _data_connection(*LEASED, content, ("server", {"kind": "confirm", "seq": 9,
                                                                             "multiple": True}))["confirms"]] == [9]
    # a Confirm of no Content sent, or of one sent before the lease was held, covers nothing of the lease's
    assert _data_connection(*LEASED, content, ("server", {"kind": "confirm", "seq": 3, "multiple": True}))[
        "confirms"] == []
    assert _data_connection(content, *LEASED, ("server", {"kind": "confirm", "seq": 4, "multiple": False}))[
        "confirms"] == []
    assert _data_connection(*LEASED, gap=True)["complete"] is False


def test_a_202_is_a_session_fact_of_the_data_port_it_names():
    from conformance.trace.observer import Observer
    from conformance.trace.rules import rules_for
    rules = rules_for("mtl", "zmtp", {})
    rules.grants.append(("lease-1", {"first_ts": 1.0, "server_port": 7000, "grant": {}}))
    observer = Observer("mtl", "zmtp", ("127.0.0.1", 41000), ("127.0.0.1", 6999), rules)
    observer.finish()
    assert [(key, "server_port" in fact) for _, key, fact in observer.facts] == [("127.0.0.1:7000 lease-1", False)]


# -- Micromessage2 topics: the checker on facts as conformance/trace/rules/micromessage2.py gives them

def _topic_fact(client_port: int, proven=None, published=(), delivered=(), last_ts=5.0, complete=True, read=None):
    return {"first_ts": 1.0, "subscribed": proven and 1.0, "proven": proven, "unsubscribed": False,
            "published": [(ts, digest, {"frame": 4, "offset": 144, "end": None}) for ts, digest in published],
            "read": list(read) if read is not None else [None] * len(published),
            "delivered": list(delivered), "overflow": False, "window": 1.0, "ended": True, "last_ts": last_ts,
            "complete": complete,
            "connection": f"127.0.0.1:{client_port} -> 127.0.0.1:7100", "capture": "c.pcap", "transport": "tcp",
            "endpoints": {"client": f"127.0.0.1:{client_port}", "server": "127.0.0.1:7100"}}


def _topic_findings(*facts):
    from conformance.trace.sessions import findings_of
    return [(f.requirement, f.sender, f.connection.split(" ")[0]) for _, f in findings_of("micromessage2", list(facts))]


def test_a_publication_that_reaches_one_subscriber_and_not_another():
    publisher = _topic_fact(3, published=[(2.0, "m")])
    main, second = _topic_fact(1, proven=1.5, delivered=[(2.1, "m")]), _topic_fact(2, proven=1.6)
    assert _topic_findings(main, second, publisher) == [("mm2-topic-fan-out", "server", "127.0.0.1:2")]
    assert _topic_findings(main, _topic_fact(2, proven=1.6, delivered=[(2.2, "m")]), publisher) == []


def test_a_publication_nobody_got_or_a_subscriber_not_proven_is_not_judged():
    publisher = _topic_fact(3, published=[(2.0, "m")])
    # no delivery anywhere: the SEND may never have reached the server
    assert _topic_findings(_topic_fact(1, proven=1.5), _topic_fact(2, proven=1.6), publisher) == []
    got = _topic_fact(1, proven=1.5, delivered=[(2.1, "m")])
    # subscribed, but not shown in place before the publication was sent
    assert _topic_findings(got, _topic_fact(2, proven=2.05), publisher) == []
    # ended too soon after the delivery elsewhere, or part of its server frames not seen
    assert _topic_findings(got, _topic_fact(2, proven=1.6, last_ts=2.5), publisher) == []
    assert _topic_findings(got, _topic_fact(2, proven=1.6, complete=False), publisher) == []


def test_a_publication_the_server_read_and_delivered_to_nobody():
    # read: the server echoed the publisher's next message at 2.1, so it had the SEND by then
    publisher = _topic_fact(3, published=[(2.0, "m")], read=[2.1])
    assert _topic_findings(_topic_fact(1, proven=1.5), publisher) == [("mm2-topic-fan-out", "server", "127.0.0.1:1")]
    # the subscriber ended within the reaction time after that proof
    assert _topic_findings(_topic_fact(1, proven=1.5, last_ts=2.5), publisher) == []
    # not read: nothing proves the server had it
    assert _topic_findings(_topic_fact(1, proven=1.5), _topic_fact(3, published=[(2.0, "m")])) == []


# Micromessage2 frames laid out by hand from docs/profiles/micromessage2.md: a handshake is major,
# minor, flags, identity (u8 length), required and optional lists (u16 lengths); a MESSAGE/SEND is
# flags 0, seq u16, destination (u8 length), properties (u16 length), payload (u8 length); a
# COMMAND is flags 1 and its payload (u8 length).
def _handshake(required: bytes) -> bytes:
    return bytes([1, 0, 0, 4]) + b"test" + len(required).to_bytes(2, "big") + required + b"\0\0"


def _send(seq: int, destination: bytes, payload: bytes) -> bytes:
    return (b"\0" + seq.to_bytes(2, "big") + bytes([len(destination)]) + destination + b"\0\0"
            + bytes([len(payload)]) + payload)


SUBSCRIBE = b"\x01" + bytes([34]) + b"subscribe;destination=test%2Ftopic"
MM2 = ("127.0.0.1", 7100)


def _subscriber(port: int, delivered: bool, echo_before: bool = False):
    """Handshake with pubsub, subscribe, an echo that proves it read; the publication if ``delivered``.
    ``echo_before``: the same echo was sent before the subscribe too, so its answer proves nothing."""
    news = [("server", _send(1, b"test/topic", b"news"))] if delivered else []
    before = _send(1, b"test/echo", b"%d" % port) if echo_before else b""
    segments = conversation(("127.0.0.1", port), MM2, [
        ("client", _handshake(b"pubsub")), ("server", _handshake(b"")),
        ("client", _handshake(b"pubsub") + before + SUBSCRIBE + _send(2, b"test/echo", b"%d" % port)),
        ("server", _send(1, b"test/echo", b"%d" % port)), *news], start=port)
    return segments[:6], segments[6:-2], segments[-2:]  # before the publication, its delivery, the FINs


def test_a_topic_fanned_out_to_one_subscriber_of_two_is_a_finding(tmp_path):
    publisher = conversation(("127.0.0.1", 41003), MM2, [
        ("client", _handshake(b"pubsub")), ("server", _handshake(b"")),
        ("client", _handshake(b"pubsub") + _send(1, b"test/topic", b"news"))], start=41003)

    def capture(name, second_gets_it, echo_before=False):
        main, second = _subscriber(41001, True), _subscriber(41002, second_gets_it, echo_before)
        first = main[0] + second[0] + publisher[:5] + main[1] + second[1]
        fins = main[2] + second[2] + publisher[5:]
        times = [1000 + i / 1000 for i in range(len(first))] + [1002 + i / 1000 for i in range(len(fins))]
        return write_pcap(tmp_path / name, first + fins, times=times)

    sessions = Sessions()
    result = check_file(capture("bug.pcap", False), {}, "micromessage2", {})
    assert result.findings == []
    sessions.add("bug.pcap", result.facts)
    assert [(f.requirement, f.connection) for _, f in sessions.findings()] == [
        ("mm2-topic-fan-out", "127.0.0.1:41002 -> 127.0.0.1:7100")]
    assert _findings_of_file(capture("twin.pcap", True), "micromessage2") == []
    # the second's echo answers a message it also sent before subscribing: no proof it read the subscribe
    assert _findings_of_file(capture("unproven.pcap", False, echo_before=True), "micromessage2") == []


def test_a_publication_echoed_past_and_never_delivered_is_a_finding(tmp_path):
    """The publisher's next message comes back: the server read the SEND before it, yet the subscriber
    never gets it.  An echo of a message the publisher also sent before the SEND proves nothing."""
    def capture(name, echo_before=False):
        before = _send(1, b"test/echo", b"after") if echo_before else b""
        publisher = conversation(("127.0.0.1", 41003), MM2, [
            ("client", _handshake(b"pubsub")), ("server", _handshake(b"")),
            ("client", _handshake(b"pubsub") + before),
            ("client", _send(2, b"test/topic", b"news") + _send(3, b"test/echo", b"after")),
            ("server", _send(1, b"test/echo", b"after"))], start=41003)
        main = _subscriber(41001, False)
        first, fins = main[0] + publisher[:-2], main[2] + publisher[-2:]
        times = [1000 + i / 1000 for i in range(len(first))] + [1002 + i / 1000 for i in range(len(fins))]
        return write_pcap(tmp_path / name, first + fins, times=times)

    findings = _findings_of_file(capture("read.pcap"), "micromessage2")
    assert len(findings) == 1 and "mm2-topic-fan-out" in findings[0] and "127.0.0.1:41001" in findings[0], findings
    assert _findings_of_file(capture("ambiguous.pcap", echo_before=True), "micromessage2") == []


def _findings_of_file(path, protocol):
    sessions = Sessions()
    result = check_file(path, {}, protocol, {})
    sessions.add(str(path), result.facts)
    return [str(f) for f in result.findings] + [str(f) for _, f in sessions.findings()]
