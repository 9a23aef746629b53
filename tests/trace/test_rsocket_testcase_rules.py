"""The client role's `stream` test case (docs/profiles/rsocket.md: REQUEST_STREAM `range:5` with an
initial request-n of 2, a REQUEST_N of 2 each time it has taken the PAYLOADs it asked for, exit 0
when the stream completes with `0` to `4`) judged on hand-written frames: a close of such a client
right after a frame it must ignore, with only items of its stream in order between, answers that
frame; only when the rules are told the capture is of a conformance run (``services``).

Frames from Protocol.md's layouts: a 24-bit length, stream ID (4 bytes), type << 10 | flags
(2 bytes): REQUEST_STREAM 0x06 (initial request-n u32, data), REQUEST_N 0x08, PAYLOAD 0x0A with
N 0x020 and C 0x040, ERROR 0x0B (code u32, data), EXT 0x3F with I 0x200 (extended type u32)."""

from __future__ import annotations

from conformance.trace.observer import Observer
from conformance.trace.rules import rules_for

H = bytes.fromhex
# SETUP 1.0, keepalive 500 ms, lifetime 2000 ms, both MIME types text/plain: the reaction time is
# silence_ms (300 ms), below the lifetime
SETUP = H("00000000" "0400" "0001" "0000" "000001f4" "000007d0") + b"\x0atext/plain" * 2
STREAM_RANGE_5 = H("00000001" "1800" "00000002") + b"range:5"  # REQUEST_STREAM, n 2
LATE_SETUP_ERROR = H("00000000" "2c00" "00000001") + b"late"  # ERROR[INVALID_SETUP] on stream 0
EXT_IGNORABLE = H("00000000" "fe00" "00001092") + b"x"  # EXT with I, extended type 4242
REQUEST_N_2 = H("00000001" "2000" "00000002")
CLOSE = ("client", None, "FIN")


def item(k: int, complete: bool = False) -> bytes:
    return H("00000001") + (0x2860 if complete else 0x2820).to_bytes(2, "big") + str(k).encode()


def findings(*events, services: bool = True) -> list[tuple[str, str]]:
    """events: (side, seconds, frame bytes) or (side, seconds, "FIN") on one TCP connection."""
    return observed(rules_for("rsocket", "tcp", {"silence_ms": 300}, services=services), events)


def observed(rules, events) -> list[tuple[str, str]]:
    """The findings ``rules`` give for ``events`` (as ``findings`` takes them)."""
    observer = Observer("rsocket", "tcp", ("127.0.0.1", 40000), ("127.0.0.1", 9000), rules)
    offset = {"client": 0, "server": 0}
    for side, ts, what in events:
        if what == "FIN":
            observer.end(side, ts, "FIN")
            continue
        wire = len(what).to_bytes(3, "big") + what
        observer.data(side, ts, offset[side], wire)
        offset[side] += len(wire)
    observer.finish()
    return [(f.sender, f.requirement) for f in observer.findings]


def both_ways(*events) -> list[tuple[str, str]]:
    """The findings with services on; with them off there must be none."""
    assert findings(*events, services=False) == []
    return findings(*events)


OPENING = [("client", 0, SETUP), ("client", 0.01, STREAM_RANGE_5), ("server", 0.02, item(0))]


def test_a_close_after_a_late_setup_error_and_an_item_answers_the_error():
    events = OPENING + [("server", 0.03, LATE_SETUP_ERROR), ("server", 0.04, item(1)), ("client", 0.05, "FIN")]
    assert both_ways(*events) == [("client", "rsocket-client-ignores-setup-errors")]


def test_a_close_after_an_ignorable_ext_and_an_item_answers_the_ext():
    events = OPENING + [("server", 0.03, EXT_IGNORABLE), ("server", 0.04, item(1)), ("client", 0.05, "FIN")]
    assert both_ways(*events) == [("client", "rsocket-unaccounted-ignored")]


def test_the_test_case_asking_for_more_and_finishing_is_right():
    events = OPENING + [("server", 0.03, LATE_SETUP_ERROR), ("server", 0.04, item(1)),
                        ("client", 0.05, REQUEST_N_2), ("server", 0.06, item(2)), ("server", 0.07, item(3)),
                        ("client", 0.08, REQUEST_N_2), ("server", 0.09, item(4, complete=True)),
                        ("client", 0.10, "FIN")]
    assert both_ways(*events) == []


def test_a_close_with_no_frame_to_ignore_is_not_judged_here():
    # a stalled or killed client: not a rule about frames to ignore
    assert both_ways(*OPENING, ("server", 0.04, item(1)), ("client", 0.05, "FIN")) == []


def test_another_request_is_not_the_stream_test_case():
    other_n = H("00000001" "1800" "00000005") + b"range:5"  # n 5: an application that may want two items
    events = [("client", 0, SETUP), ("client", 0.01, other_n), ("server", 0.02, item(0)),
              ("server", 0.03, LATE_SETUP_ERROR), ("server", 0.04, item(1)), ("client", 0.05, "FIN")]
    assert both_ways(*events) == []


def test_a_close_past_the_reaction_time_is_not_judged():
    events = OPENING + [("server", 0.03, LATE_SETUP_ERROR), ("server", 0.04, item(1)), ("client", 0.4, "FIN")]
    assert both_ways(*events) == []


def test_an_item_out_of_order_may_be_what_the_client_stopped_on():
    events = OPENING + [("server", 0.03, LATE_SETUP_ERROR), ("server", 0.04, item(7)), ("client", 0.05, "FIN")]
    assert both_ways(*events) == []


def test_a_server_that_closed_first_ended_the_test_case():
    events = OPENING + [("server", 0.03, LATE_SETUP_ERROR), ("server", 0.04, item(1)), ("server", 0.045, "FIN"),
                        ("client", 0.05, "FIN")]
    assert both_ways(*events) == []


def test_a_setup_error_before_the_server_served_anything_may_end_the_connection():
    events = [("client", 0, SETUP), ("client", 0.01, STREAM_RANGE_5), ("server", 0.02, LATE_SETUP_ERROR),
              ("server", 0.03, item(0)), ("client", 0.04, "FIN")]
    assert both_ways(*events) == []


# -- a test client's `request-response` case: it exits (its connection ends) once answered ---------------
# REQUEST_RESPONSE 0x04 (type << 10 = 0x1000); ERROR 0x0B code APPLICATION_ERROR 0x201; PAYLOAD N, N|C
REQUEST_ECHO = H("00000001" "1000") + b"echo:hello"
APPLICATION_ERROR = H("00000001" "2c00" "00000201") + b"boom"
ANSWER_WITHOUT_C = H("00000001" "2820") + b"hello"
ANSWER = H("00000001" "2860") + b"hello"


def response_case(answer: bytes, close: tuple, test_client: bool = True) -> list[tuple[str, str]]:
    """The case answered at 0.02 s, then ``close`` ((side, seconds)); the suite waits reply_ms (2 s)."""
    rules = rules_for("rsocket", "tcp", {"silence_ms": 300, "reply_ms": 2000}, services=True,
                      test_client=test_client)
    events = [("client", 0.0, SETUP), ("client", 0.01, REQUEST_ECHO), ("server", 0.02, answer), (*close, "FIN")]
    return [found for found in observed(rules, events) if found[0] == "client"]


def test_a_test_client_still_open_a_reply_wait_after_its_answer():
    # the suite gave up on its exit 2 s after the answer and closed
    assert response_case(APPLICATION_ERROR, ("server", 2.03)) == [("client", "rsocket-application-error-stream")]
    assert response_case(ANSWER_WITHOUT_C, ("server", 2.03)) == [("client", "rsocket-response-payload-complete")]
    # its own close that late is as late
    assert response_case(ANSWER_WITHOUT_C, ("client", 2.5)) == [("client", "rsocket-response-payload-complete")]


def test_what_the_request_response_case_does_not_judge():
    assert response_case(APPLICATION_ERROR, ("server", 1.9)) == []  # within the wait
    assert response_case(ANSWER_WITHOUT_C, ("client", 0.05)) == []  # it exited at once
    assert response_case(ANSWER, ("server", 2.03)) == []  # a plain answer: only the case is broken
    assert response_case(APPLICATION_ERROR, ("server", 2.03), test_client=False) == []  # the suite's client


def events_of(test_client: bool, *events, params=None) -> list[tuple[str, str]]:
    """Findings against the client of ``events`` ((side, seconds, frame bytes or "FIN")), the rules told
    whether the client is a test client."""
    rules = rules_for("rsocket", "tcp", params or {"silence_ms": 300, "expect_ms": 5000, "close_ms": 3000},
                      services=True, test_client=test_client)
    return [found for found in observed(rules, events) if found[0] == "client"]


UNSUPPORTED_SETUP = H("00000000" "2c00" "00000002") + b"no"  # ERROR[UNSUPPORTED_SETUP] on stream 0


def test_a_test_client_still_open_after_its_setup_was_rejected():
    rejected = [("client", 0.0, SETUP), ("server", 0.01, UNSUPPORTED_SETUP)]
    assert events_of(True, *rejected, ("server", 3.02, "FIN")) == [("client", "rsocket-client-setup-rejected")]
    assert events_of(True, *rejected, ("server", 2.9, "FIN")) == []
    assert events_of(True, *rejected, ("client", 0.05, "FIN")) == []
    assert events_of(False, *rejected, ("server", 3.02, "FIN")) == []


def test_a_test_clients_stream_case_owes_its_request_n_at_once():
    took_two = [("client", 0.0, SETUP), ("client", 0.01, STREAM_RANGE_5), ("server", 0.02, item(0)),
                ("server", 0.03, item(1))]
    assert events_of(True, *took_two, ("server", 5.04, "FIN")) == [("client", "rsocket-reactive-streams")]
    assert events_of(True, *took_two, ("server", 4.9, "FIN")) == []
    assert events_of(True, *took_two, ("client", 1.0, REQUEST_N_2), ("server", 6.0, "FIN")) == []
    assert events_of(False, *took_two, ("server", 5.04, "FIN")) == []
    # one item of the two it asked for: nothing owed yet
    assert events_of(True, *took_two[:3], ("server", 9.0, "FIN")) == []


# PAYLOAD fragments (0x0A << 10 = 0x2800): M|F|N (0x1A0) with metadata "m" (3-byte length) and data "h",
# then F|N (0x0A0) "el", then N|C (0x060) "lo": the answer "hello" in three fragments, metadata first
FIRST_FRAGMENT = H("00000001" "29a0" "000001") + b"mh"
MIDDLE_FRAGMENT = H("00000001" "28a0") + b"el"
LAST_FRAGMENT = H("00000001" "2860") + b"lo"


def fragmented(*after, test_client: bool = True) -> list[tuple[str, str]]:
    return events_of(test_client, ("client", 0.0, SETUP), ("client", 0.01, REQUEST_ECHO),
                     ("server", 0.02, FIRST_FRAGMENT), *after, params={"silence_ms": 300, "reply_ms": 2000})


def test_a_test_client_ending_its_request_response_mid_answer_took_a_fragment_for_it():
    assert fragmented(("client", 0.05, "FIN")) == [("client", "rsocket-fragment-metadata-first")]
    # the whole answer first: it exits once answered
    assert fragmented(("server", 0.4, MIDDLE_FRAGMENT), ("server", 0.41, LAST_FRAGMENT), ("client", 0.45, "FIN")) == []
    # past the case's wait for its answer (reply_ms), or not a test client: not judged
    assert fragmented(("client", 2.5, "FIN")) == []
    assert fragmented(("client", 0.05, "FIN"), test_client=False) == []
