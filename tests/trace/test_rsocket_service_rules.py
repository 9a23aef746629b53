"""The RSocket test service's promises (docs/profiles/rsocket.md, "Test service (server role)")
judged on hand-written frames: only when the rules are told the capture is of a conformance run
(``services``), never otherwise.

Frames from Protocol.md's layouts: stream ID (4 bytes), then type << 10 | flags (2 bytes), with
M 0x100, F 0x080, C 0x040, N 0x020; REQUEST_RESPONSE 0x04, REQUEST_FNF 0x05, REQUEST_CHANNEL
0x07, REQUEST_N 0x08, CANCEL 0x09, PAYLOAD 0x0A, ERROR 0x0B; with M, a 24-bit metadata length
and the metadata come before the data.  Composite metadata (Extensions/CompositeMetadata.md): an
entry of the well-known routing type 0x7E is the byte 0xFE, a 24-bit length, and (Routing.md)
each tag behind a one-byte length."""

from __future__ import annotations

from conformance.trace.observer import Observer
from conformance.trace.rules import rules_for
from conformance.trace.sessions import Sessions

H = bytes.fromhex
WINDOW = 0.3  # silence_ms 300
# SETUP 1.0, keepalive 500 ms, lifetime 2000 ms, both MIME types text/plain (10 bytes)
SETUP = H("00000000" "0400" "0001" "0000" "000001f4" "000007d0") + b"\x0atext/plain" * 2
COMPOSITE = b"message/x.rsocket.composite-metadata.v0"
# the same with composite metadata (39 bytes) as the metadata MIME type
SETUP_COMPOSITE = (H("00000000" "0400" "0001" "0000" "000001f4" "000007d0") + bytes([len(COMPOSITE)]) + COMPOSITE
                   + b"\x0atext/plain")
UNKNOWN_ROUTE = H("00000001" "2c00" "00000201") + b"unknown route"  # ERROR[APPLICATION_ERROR] on stream 1


def frame(stream: int, word: int, body: bytes = b"") -> bytes:
    return stream.to_bytes(4, "big") + word.to_bytes(2, "big") + body


def with_metadata(metadata: bytes, data: bytes) -> bytes:
    return len(metadata).to_bytes(3, "big") + metadata + data


#: composite metadata holding one routing entry with the tag "echo:routed" (11 bytes)
ROUTED = H("fe" "00000c" "0b") + b"echo:routed"


def observe(*events, services: bool = True, client_port: int = 40000) -> Observer:
    """events: (side, seconds, frame bytes) on one TCP connection to 127.0.0.1:9000."""
    rules = rules_for("rsocket", "tcp", {"silence_ms": int(WINDOW * 1000)})
    rules.services = services
    observer = Observer("rsocket", "tcp", ("127.0.0.1", client_port), ("127.0.0.1", 9000), rules)
    offset = {"client": 0, "server": 0}
    for side, ts, what in events:
        wire = len(what).to_bytes(3, "big") + what
        observer.data(side, ts, offset[side], wire)
        offset[side] += len(wire)
    observer.finish()
    return observer


def findings(*events, services: bool = True) -> list[tuple[str, str]]:
    return [(f.sender, f.requirement) for f in observe(*events, services=services).findings]


def both_ways(*events) -> list[tuple[str, str]]:
    """The findings with services on; with them off there must be none."""
    assert findings(*events, services=False) == []
    return findings(*events)


# -- echo:<text> -------------------------------------------------------------------------------

FRAGMENTED_ECHO = [("client", 0, SETUP),
                   ("client", 0.01, frame(1, 0x1080, b"echo:")),  # REQUEST_RESPONSE, F
                   ("client", 0.02, frame(1, 0x28A0, b"frag")),  # PAYLOAD, N|F
                   ("client", 0.03, frame(1, 0x2820, b"mented"))]  # PAYLOAD, N: the last fragment


def test_an_echo_of_the_first_fragment_alone_breaks_reassembly():
    answer = ("server", 0.04, frame(1, 0x2860, b""))  # PAYLOAD N|C: what "echo:" alone would echo
    assert both_ways(*FRAGMENTED_ECHO, answer) == [("server", "rsocket-request-fragments")]


def test_the_echo_of_the_joined_request_is_right():
    assert both_ways(*FRAGMENTED_ECHO, ("server", 0.04, frame(1, 0x2860, b"fragmented"))) == []
    # nor is an ERROR, or a requester that cancels, judged: only a PAYLOAD the service sent
    assert both_ways(*FRAGMENTED_ECHO, ("server", 0.04, H("00000001" "2c00" "00000201") + b"busy")) == []
    assert both_ways(*FRAGMENTED_ECHO, ("client", 0.035, frame(1, 0x2400)), ("server", 0.04, frame(1, 0x2860))) == []


def test_an_echo_must_carry_the_request_metadata():
    request = [("client", 0, SETUP),
               ("client", 0.01, frame(1, 0x1180, with_metadata(b"m", b"echo:"))),  # REQUEST_RESPONSE, M|F
               ("client", 0.02, frame(1, 0x2820, b"x"))]
    assert both_ways(*request, ("server", 0.03, frame(1, 0x2860, b"x"))) == [("server", "rsocket-request-fragments")]
    assert both_ways(*request, ("server", 0.03, frame(1, 0x2960, with_metadata(b"m", b"x")))) == []


def test_unknown_route_to_a_fragmented_echo():
    request = [("client", 0, SETUP), ("client", 0.01, frame(1, 0x1080, b"e")),
               ("client", 0.02, frame(1, 0x2820, b"cho:one"))]
    assert both_ways(*request, ("server", 0.03, UNKNOWN_ROUTE)) == [("server", "rsocket-request-fragments")]
    # error:<text> answers APPLICATION_ERROR <text>, whatever the text
    request = [("client", 0, SETUP), ("client", 0.01, frame(1, 0x1080, b"error:")),
               ("client", 0.02, frame(1, 0x2820, b"unknown route"))]
    assert both_ways(*request, ("server", 0.03, UNKNOWN_ROUTE)) == []


def test_a_plain_request_answered_wrong_names_no_requirement():
    # neither fragmented nor routed: only the service is broken, no requirement of the spec
    assert both_ways(("client", 0, SETUP), ("client", 0.01, frame(1, 0x1000, b"echo:x")),
                     ("server", 0.02, frame(1, 0x2860, b"y"))) == []


# -- routing entries ---------------------------------------------------------------------------

ROUTED_REQUEST = frame(1, 0x1100, with_metadata(ROUTED, b"not-a-route"))  # REQUEST_RESPONSE, M


def test_a_routing_entry_chooses_the_route():
    assert both_ways(("client", 0, SETUP_COMPOSITE), ("client", 0.01, ROUTED_REQUEST),
                     ("server", 0.02, UNKNOWN_ROUTE)) == [("server", "rsocket-mime-not-interpreted")]
    assert both_ways(("client", 0, SETUP_COMPOSITE), ("client", 0.01, ROUTED_REQUEST),
                     ("server", 0.02, frame(1, 0x2860, b"not-a-route"))) == [
        ("server", "rsocket-mime-not-interpreted")]
    assert both_ways(("client", 0, SETUP_COMPOSITE), ("client", 0.01, ROUTED_REQUEST),
                     ("server", 0.02, frame(1, 0x2960, with_metadata(ROUTED, b"routed")))) == []


def test_without_composite_metadata_the_data_is_the_route():
    assert both_ways(("client", 0, SETUP), ("client", 0.01, ROUTED_REQUEST), ("server", 0.02, UNKNOWN_ROUTE)) == []


def test_a_routing_entry_of_two_tags_is_not_judged():
    two_tags = H("fe" "000010" "0b") + b"echo:routed" + H("04") + b"echo"
    request = frame(1, 0x1100, with_metadata(two_tags, b"not-a-route"))
    assert both_ways(("client", 0, SETUP_COMPOSITE), ("client", 0.01, request), ("server", 0.02, UNKNOWN_ROUTE)) == []


# -- request-channel ---------------------------------------------------------------------------

CHANNEL = [("client", 0, SETUP),
           ("client", 0.01, frame(1, 0x1C00, H("00000002") + b"a")),  # REQUEST_CHANNEL n 2, "a"
           ("server", 0.02, frame(1, 0x2000, H("00000002"))),  # REQUEST_N 2
           ("server", 0.03, frame(1, 0x2820, b"a"))]  # the echo of the initial payload
LAST_ITEM = ("client", 0.04, frame(1, 0x2860, b"b"))  # PAYLOAD N|C
COMPLETE = ("server", 0.05, frame(1, 0x2840))  # PAYLOAD C alone


def test_a_channel_completed_without_echoing_the_item_its_completion_carried():
    assert both_ways(*CHANNEL, LAST_ITEM, COMPLETE) == [("server", "rsocket-seq-channel-initial-complete")]
    f_and_c = ("client", 0.04, frame(1, 0x28E0, b"b"))  # PAYLOAD N|F|C: F is ignored
    assert both_ways(*CHANNEL, f_and_c, COMPLETE) == [("server", "rsocket-f-and-c")]


def test_a_channel_that_echoes_its_last_item_completes_either_way():
    assert both_ways(*CHANNEL, LAST_ITEM, ("server", 0.05, frame(1, 0x2860, b"b"))) == []  # N|C
    assert both_ways(*CHANNEL, LAST_ITEM, ("server", 0.05, frame(1, 0x2820, b"b")), COMPLETE) == []
    # C alone carries no item: nothing is owed
    assert both_ways(*CHANNEL, ("client", 0.04, frame(1, 0x2840)), COMPLETE) == []


def test_a_channel_past_its_credit_or_cancelled_is_not_judged():
    no_credit = [("client", 0, SETUP), ("client", 0.01, frame(1, 0x1C00, H("00000002") + b"a")),
                 ("server", 0.03, frame(1, 0x2820, b"a"))]  # no REQUEST_N: the requester may send nothing
    # the requester's item past its credit is its own finding (the wire monitor's), nothing more
    events = (*no_credit, LAST_ITEM, COMPLETE)
    assert findings(*events) == findings(*events, services=False) == [("client", "rsocket-reactive-streams")]
    assert both_ways(*CHANNEL, LAST_ITEM, ("client", 0.045, frame(1, 0x2400)), COMPLETE) == []


# -- fnf:<text> and last-fnf, across connections ----------------------------------------------

FNF = [("client", 0, SETUP),
       ("client", 0.01, frame(1, 0x1480, b"fnf:frag")),  # REQUEST_FNF, F
       ("client", 0.02, frame(1, 0x2820, b"mented"))]  # its last fragment
ASK = ("client", 0.5, frame(3, 0x1000, b"last-fnf"))  # REQUEST_RESPONSE, silence_ms after the fnf


def across(*connections: Observer) -> list[tuple[str, str]]:
    sessions = Sessions()
    for observer in connections:
        assert observer.findings == []
        sessions.add("capture", observer.facts)
    return [(f.sender, f.requirement) for _, f in sessions.findings()]


def test_last_fnf_returning_the_first_fragment_of_the_last_fnf():
    wrong = ("server", 0.51, frame(3, 0x2860, b"frag"))
    assert across(observe(*FNF, ASK, wrong)) == [("server", "rsocket-request-fragments")]
    assert across(observe(*FNF, ASK, wrong, services=False)) == []
    assert across(observe(*FNF, ASK, ("server", 0.51, frame(3, 0x2860, b"fragmented")))) == []


def test_last_fnf_asked_too_soon_is_not_judged():
    # the service may not have kept the fnf yet: the active cases wait silence_ms before asking
    assert across(observe(*FNF, ("client", 0.1, frame(3, 0x1000, b"last-fnf")),
                          ("server", 0.11, frame(3, 0x2860, b"frag")))) == []


def test_another_connection_fnf_may_be_the_last():
    wrong = ("server", 0.51, frame(3, 0x2860, b"frag"))
    other = [("client", 0.2, SETUP), ("client", 0.3, frame(1, 0x1400, b"fnf:frag"))]
    assert across(observe(*FNF, ASK, wrong), observe(*other, client_port=40001)) == []
    # one seen after the answer reached the server after the answer left it
    later = [("client", 0.6, SETUP), ("client", 0.7, frame(1, 0x1400, b"fnf:frag"))]
    assert across(observe(*FNF, ASK, wrong), observe(*later, client_port=40001)) == [
        ("server", "rsocket-request-fragments")]
    # one the server had read before the fnf was sent: it answered a request sent after it first
    read = [("client", 0.0, SETUP), ("client", 0.001, frame(1, 0x1400, b"fnf:frag")),
            ("client", 0.002, frame(3, 0x1000, b"echo:x")), ("server", 0.003, frame(3, 0x2860, b"x"))]
    assert across(observe(*FNF, ASK, wrong), observe(*read, client_port=40001)) == [
        ("server", "rsocket-request-fragments")]


def test_the_readers_keep_f_with_c_on_both_transports():
    # the codec reports F|C as C alone; the rules' readers keep that F was set
    for transport, wire in (("tcp", lambda m: len(m).to_bytes(3, "big") + m), ("ws", lambda m: m)):
        reader = rules_for("rsocket", transport, {}).new_reader("client")
        marked = [f.fields.get("f_and_c", False) for message in (frame(1, 0x28E0, b"b"), frame(1, 0x2860, b"b"))
                  for f in reader.feed(wire(message))]
        assert marked == [True, False], transport


def test_a_connection_with_more_fnfs_than_a_fact_keeps_is_not_judged():
    def later(count: int) -> Observer:  # fnfs all seen after the answer: harmless while the fact holds them
        fnfs = [("client", 1 + 0.001 * n, frame(2 * n + 1, 0x1400, b"fnf:x")) for n in range(count)]
        return observe(("client", 0.2, SETUP), *fnfs, client_port=40001)  # open before the ask
    wrong = ("server", 0.51, frame(3, 0x2860, b"frag"))
    assert across(observe(*FNF, ASK, wrong), later(64)) == [("server", "rsocket-request-fragments")]
    assert across(observe(*FNF, ASK, wrong), later(65)) == []
