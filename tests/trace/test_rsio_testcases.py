"""rsio's client-role test cases judged from a suite capture (conformance/trace/rules/rsio_testcases.py).

docs/profiles/rsio.md, "Test cases (client role)": `fixed`, `large` and `error` subscribe as below
and end with goodbye once their stream has ended as they expect; the suite waits expect_ms for it.
The captures are written the way `run --pcap` writes them, the target being the client (the suite
its server), so the section header names the connection as a target client.  Every message is
written byte by byte from the profile's layout: a varint type, then the fields (Id and Long as
LEB128 varints, a String or bytes field as a varint length then the bytes; fixed-size elements as
elementSize raw bytes, onNextPacked as count then the elements)."""

from __future__ import annotations

from conformance.trace import capture
from conformance.trace.check import check_file

CLIENT, SERVER = ("127.0.0.1", 40500), ("127.0.0.1", 7300)

CLIENT_HELLO = bytes.fromhex("01 00 00")  # clientHello (1), version 0, no extensions
SERVER_HELLO = bytes.fromhex("02 00 00")
GOODBYE = bytes.fromhex("03 00")  # goodbye (3), reason ""
COMPLETE = bytes.fromhex("09 01")  # onComplete (9), subscriber 1
SUBSCRIBED = bytes.fromhex("07 01 00")  # subscribed (7), subscriber 1, elementSize 0

# fixed: subscribe (4) "test/fixed/8/4" (14 bytes), subscriber 1, initialDemand 8; subscribed, elementSize 4;
# onNextPacked (11), subscriber 1, count 8, element k's byte i = (k+i) mod 256
SUB_FIXED = bytes.fromhex("04 0e") + b"test/fixed/8/4" + bytes.fromhex("01 08")
SUBSCRIBED_FIXED = bytes.fromhex("07 01 04")
PACKED = bytes.fromhex("0b 01 08" "00010203" "01020304" "02030405" "03040506" "04050607" "05060708" "06070809"
                       "0708090a")
PACKED_WRONG = PACKED[:-1] + b"\x0b"  # element 7's last byte 11, not 10

# large: subscribe "test/large/100000" (17 bytes), subscriber 1, initialDemand 1; the element's byte i = i mod 256
SUB_LARGE = bytes.fromhex("04 11") + b"test/large/100000" + bytes.fromhex("01 01")
_LARGE = bytes(i % 256 for i in range(256)) * 390 + bytes(range(160))  # 99,840 + 160 = 100,000 bytes
# onNextPart (12), subscriber 1, element 0, 60,000 bytes (LEB128 e0 d4 03); onNextLastPart (13), the other
# 40,000 (LEB128 c0 b8 02)
PART = bytes.fromhex("0c 01 00 e0d403") + _LARGE[:60000]
LAST_PART = bytes.fromhex("0d 01 00 c0b802") + _LARGE[60000:]
# onNext (8), subscriber 1, 100,000 bytes (LEB128 a0 8d 06)
WHOLE = bytes.fromhex("08 01 a08d06") + _LARGE

# error: subscribe "test/error" (10 bytes), subscriber 1, initialDemand 0; onError (10) "test error"
SUB_ERROR = bytes.fromhex("04 0a") + b"test/error" + bytes.fromhex("01 00")
ON_ERROR = bytes.fromhex("0a 01 0a") + b"test error"


def _client_findings(tmp_path, moves, quiet: float = 0.001, closes=("client", "server"), suite: str = "server",
                     services: str = "auto", gaps=None):
    """Findings against the client: the hellos, ``moves`` a millisecond apart (but ``gaps``: move index ->
    seconds before it), then ``closes`` (FINs), the first ``quiet`` s after the last move.  ``suite``: the
    suite's side ("server": a target client)."""
    t = 10.0
    conn = capture._Conn(CLIENT, SERVER, t, suite)
    conn.events += [(10.001, "client", CLIENT_HELLO), (10.002, "server", SERVER_HELLO)]
    t = 10.002
    for i, (side, data) in enumerate(moves):
        t += (gaps or {}).get(i, 0.001)
        conn.events.append((t, side, data))
    for i, side in enumerate(closes):
        t += quiet if i == 0 else 0.001
        conn.events.append((t, side, "FIN"))
    recorder = capture.Recorder()
    recorder.conns.append(conn)
    path = tmp_path / "run.pcapng"
    capture.write(recorder, path)
    result = check_file(path, {SERVER[1]: "rsio"}, None, {}, test_services=services)
    assert result.problems == []
    return [f.requirement for f in result.findings if f.sender == "client"]


FIXED = [("client", SUB_FIXED), ("server", SUBSCRIBED_FIXED), ("server", PACKED), ("server", COMPLETE)]
LARGE_IN_PARTS = [("client", SUB_LARGE), ("server", SUBSCRIBED), ("server", PART), ("server", LAST_PART),
                  ("server", COMPLETE)]
ERROR = [("client", SUB_ERROR), ("server", SUBSCRIBED), ("server", ON_ERROR)]


def test_a_served_case_ended_with_goodbye_is_not_judged(tmp_path):
    for moves in (FIXED, LARGE_IN_PARTS, ERROR):
        assert _client_findings(tmp_path, [*moves, ("client", GOODBYE), ("server", GOODBYE)]) == []


def test_a_client_closing_without_the_goodbye_after_its_stream_was_served(tmp_path):
    assert _client_findings(tmp_path, FIXED) == ["rsio-fixed-size"]
    assert _client_findings(tmp_path, LARGE_IN_PARTS) == ["rsio-split-support"]
    assert _client_findings(tmp_path, ERROR) == ["rsio-on-error"]
    # test/large's element whole (one onNext): the case is broken, but no requirement names what it exercised
    assert _client_findings(tmp_path, [("client", SUB_LARGE), ("server", SUBSCRIBED), ("server", WHOLE),
                                       ("server", COMPLETE)]) == []


def test_only_a_target_client_of_a_suite_capture_is_judged(tmp_path):
    assert _client_findings(tmp_path, FIXED, suite="client") == []  # the suite was the client
    assert _client_findings(tmp_path, FIXED, services="off") == []
    # --test-services on for a capture that does not say which clients were targets: not judged
    assert _client_findings(tmp_path, FIXED, suite="client", services="on") == []


def test_a_client_silent_past_the_suites_wait(tmp_path):
    # the suite (server) gave up expect_ms (5 s) after onError and closed: the client's silence is proven
    assert _client_findings(tmp_path, ERROR, quiet=5.001, closes=("server", "client")) == ["rsio-on-error"]
    assert _client_findings(tmp_path, ERROR, quiet=4.9, closes=("server", "client")) == []
    # a goodbye that comes only after that wait is late as well
    late = [*ERROR, ("client", GOODBYE), ("server", GOODBYE)]
    assert _client_findings(tmp_path, late, gaps={3: 5.2}) == ["rsio-on-error"]
    assert _client_findings(tmp_path, late, gaps={3: 4.9}) == []


def test_a_stream_not_served_as_the_test_service_does_is_not_judged(tmp_path):
    wrong = [("client", SUB_FIXED), ("server", SUBSCRIBED_FIXED), ("server", PACKED_WRONG), ("server", COMPLETE)]
    assert _client_findings(tmp_path, wrong) == []
    not_fixed = [("client", SUB_FIXED), ("server", SUBSCRIBED), ("server", COMPLETE)]
    assert _client_findings(tmp_path, not_fixed) == []
    short = [("client", SUB_FIXED), ("server", SUBSCRIBED_FIXED), ("server", COMPLETE)]  # no elements
    assert _client_findings(tmp_path, short) == []
    # another subscribe (not a judged case's first), a second subscribe, the server's goodbye first
    other = [("client", bytes.fromhex("04 0c") + b"test/range/3" + bytes.fromhex("01 03")), ("server", SUBSCRIBED),
             ("server", COMPLETE)]
    assert _client_findings(tmp_path, other) == []
    assert _client_findings(tmp_path, [("client", SUB_ERROR), ("client", SUB_FIXED), *FIXED[1:]]) == []
    # (the client then closes without answering the server's goodbye: that rule, not the case's)
    assert _client_findings(tmp_path, [*ERROR, ("server", GOODBYE)]) == ["rsio-goodbye-orderly"]


def test_a_test_client_waits_for_the_answer_to_its_goodbye(tmp_path):
    # the profile's hello case: goodbye once the serverHello came, then the server's goodbye, then the close
    assert _client_findings(tmp_path, [("client", GOODBYE)], quiet=0.01) == ["rsio-goodbye-orderly"]
    # waited at least the run's silence_ms (unrecorded here: the shorter of the adapter's, 300 ms)
    assert _client_findings(tmp_path, [("client", GOODBYE)], quiet=0.35) == []
    assert _client_findings(tmp_path, [("client", GOODBYE), ("server", GOODBYE)]) == []
    assert _client_findings(tmp_path, [("client", GOODBYE)], quiet=0.01, suite="client") == []


def test_a_goodbye_for_what_the_server_sent_wrong_may_close_at_once(tmp_path):
    # test/range/10 with initialDemand 3 (the demand case, not judged here), then four elements: the client
    # says goodbye for the element past its demand and closes at once
    sub = bytes.fromhex("04 0d") + b"test/range/10" + bytes.fromhex("01 03")
    elements = [("server", bytes.fromhex("08 01 08") + k.to_bytes(8, "big")) for k in range(4)]
    moves = [("client", sub), ("server", SUBSCRIBED), *elements, ("client", GOODBYE)]
    assert _client_findings(tmp_path, moves, quiet=0.01) == []
    # after test/fixed/8/4 served in full, the case's goodbye waits
    assert _client_findings(tmp_path, [*FIXED, ("client", GOODBYE)], quiet=0.01) == ["rsio-goodbye-orderly"]


def test_a_goodbye_before_the_fixed_streams_end_took_valid_elements_for_an_error(tmp_path):
    # the suite pauses before onComplete (client-fixed-and-packed): a goodbye then gave up on valid elements
    moves = [("client", SUB_FIXED), ("server", SUBSCRIBED_FIXED), ("server", PACKED), ("client", GOODBYE),
             ("server", GOODBYE)]
    assert _client_findings(tmp_path, moves) == ["rsio-fixed-size"]
    # ... or a close without one
    assert _client_findings(tmp_path, moves[:3]) == ["rsio-fixed-size"]
    # elements the test service would not send: a goodbye is the client's right
    wrong = [("client", SUB_FIXED), ("server", SUBSCRIBED_FIXED), ("server", PACKED_WRONG), ("client", GOODBYE),
             ("server", GOODBYE)]
    assert "rsio-fixed-size" not in _client_findings(tmp_path, wrong)
    # once the stream ended: the goodbye that ends the case
    done = [("client", SUB_FIXED), ("server", SUBSCRIBED_FIXED), ("server", PACKED), ("server", COMPLETE),
            ("client", GOODBYE), ("server", GOODBYE)]
    assert _client_findings(tmp_path, done) == []
