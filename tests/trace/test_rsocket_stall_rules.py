"""The RSocket test service sends what it owes without delay (docs/profiles/rsocket.md, "Test
service (server role)"): judged on hand-written frames with explicit timestamps against the
suite's wait ``expect_ms`` (5 s unless --param says otherwise), only with the test services on,
and only once a later packet (here the client's FIN, or a frame) proves the connection stayed
open that long: a capture that just ends proves nothing.

Frames from Protocol.md's layouts: stream ID (4 bytes), then type << 10 | flags (2 bytes), with
F 0x080, C 0x040, N 0x020; REQUEST_RESPONSE 0x04, REQUEST_STREAM 0x06, REQUEST_CHANNEL 0x07,
REQUEST_N 0x08, CANCEL 0x09, PAYLOAD 0x0A, KEEPALIVE 0x03; the request-n of REQUEST_STREAM and
REQUEST_CHANNEL is the 4 bytes before the data."""

from __future__ import annotations

from conformance.trace.observer import Observer
from conformance.trace.rules import rules_for

H = bytes.fromhex
# SETUP 1.0, keepalive 500 ms, lifetime 2000 ms, both MIME types text/plain (10 bytes)
SETUP = H("00000000" "0400" "0001" "0000" "000001f4" "000007d0") + b"\x0atext/plain" * 2
WAIT = 5.0  # the suite's expect_ms default


def frame(stream: int, word: int, body: bytes = b"") -> bytes:
    return stream.to_bytes(4, "big") + word.to_bytes(2, "big") + body


def n(value: int) -> bytes:
    return value.to_bytes(4, "big")


def item(stream: int, ts: float, data: bytes, complete: bool = False):
    return ("server", ts, frame(stream, 0x2860 if complete else 0x2820, data))  # PAYLOAD N (|C)


def fin(side: str, ts: float):
    return ("end", side, ts)


def findings(*events, services: bool = True, params: dict | None = None) -> list[tuple[str, str]]:
    """events: (side, seconds, frame bytes) or fin(side, seconds) on one TCP connection."""
    rules = rules_for("rsocket", "tcp", {"silence_ms": 300, **(params or {})})
    rules.services = services
    observer = Observer("rsocket", "tcp", ("127.0.0.1", 40000), ("127.0.0.1", 9000), rules)
    offset = {"client": 0, "server": 0}
    for event in events:
        if event[0] == "end":
            observer.end(event[1], event[2], "FIN")
            continue
        side, ts, what = event
        wire = len(what).to_bytes(3, "big") + what
        observer.data(side, ts, offset[side], wire)
        offset[side] += len(wire)
    observer.finish()
    return [(f.sender, f.requirement) for f in observer.findings]


def judged(*events, params: dict | None = None) -> list[tuple[str, str]]:
    """The findings with the test services on; with them off there must be none."""
    assert findings(*events, services=False, params=params) == []
    return findings(*events, params=params)


# -- range:<n> on a stream id re-used once 2^31-1 was used ---------------------------------------

REUSED = [("client", 0, SETUP),
          ("client", 0.01, frame(1, 0x1000, b"echo:first")),  # REQUEST_RESPONSE on 1
          item(1, 0.02, b"first", complete=True),
          ("client", 0.03, frame(0x7FFFFFFF, 0x1000, b"echo:max")),  # on 2^31-1
          item(0x7FFFFFFF, 0.04, b"max", complete=True),
          ("client", 1.0, frame(1, 0x1800, n(2) + b"range:2"))]  # REQUEST_STREAM on 1 again, n 2


def test_range_items_owed_on_a_reused_id_past_the_wait():
    assert judged(*REUSED, fin("client", 1.0 + WAIT + 0.01)) == [("server", "rsocket-stream-id-reuse")]
    # a later frame proves it as well as the close
    keepalive = ("client", 1.0 + WAIT + 0.01, frame(0, 0x0C00, n(0) + n(0)))  # KEEPALIVE, position 0
    assert judged(*REUSED, keepalive) == [("server", "rsocket-stream-id-reuse")]


def test_range_items_within_the_wait_or_a_capture_that_ends_are_not_judged():
    assert judged(*REUSED, fin("client", 1.0 + WAIT - 0.01)) == []
    assert judged(*REUSED) == []  # no later packet: "never" cannot be told from "later"
    # the server's own close first: it ended the connection, nothing is owed after it
    assert judged(*REUSED, fin("server", 1.5), fin("client", 1.0 + WAIT + 0.01)) == []


def test_range_served_cancelled_or_plain_is_not_a_stall():
    served = [item(1, 1.01, b"0"), item(1, 1.02, b"1"), ("server", 1.03, frame(1, 0x2840))]  # then C alone
    assert judged(*REUSED, *served, fin("client", 1.0 + WAIT + 0.5)) == []
    cancel = ("client", 1.5, frame(1, 0x2400))  # CANCEL
    assert judged(*REUSED, cancel, fin("client", 1.0 + WAIT + 0.5)) == []
    # a fresh id: a stall of a plain request breaks the service only, no requirement
    plain = [("client", 0, SETUP), ("client", 1.0, frame(1, 0x1800, n(2) + b"range:2"))]
    assert judged(*plain, fin("client", 1.0 + WAIT + 0.5)) == []


# -- range:<n> requested in fragments ------------------------------------------------------------

FRAGMENTED = [("client", 0, SETUP),
              ("client", 0.01, frame(1, 0x1880, n(3) + b"range:")),  # REQUEST_STREAM, F, n 3
              ("client", 0.02, frame(1, 0x2820, b"3")),  # PAYLOAD N: the last fragment
              item(1, 0.03, b"0")]


def test_items_of_a_fragmented_request_owed_from_the_last_item_sent():
    assert judged(*FRAGMENTED, fin("client", 0.03 + WAIT + 0.01)) == [("server", "rsocket-request-fragments")]
    assert judged(*FRAGMENTED, fin("client", 0.03 + WAIT - 0.01)) == []
    done = [item(1, 0.04, b"1"), item(1, 0.05, b"2", complete=True)]
    assert judged(*FRAGMENTED, *done, fin("client", 0.05 + WAIT + 0.5)) == []


# -- items past the request's own request-n: a REQUEST_N's credit --------------------------------

CREDIT = [("client", 0, SETUP),
          ("client", 0.01, frame(1, 0x1800, n(2) + b"range:300")),
          item(1, 0.02, b"0"), item(1, 0.03, b"1"),  # the request's credit, spent
          ("client", 0.04, frame(1, 0x2000, n(0x7FFFFFFF))),  # REQUEST_N 2^31-1, twice
          ("client", 0.05, frame(1, 0x2000, n(0x7FFFFFFF)))]


def test_items_a_request_n_granted_owed_past_the_wait():
    assert judged(*CREDIT, fin("client", 0.04 + WAIT + 0.01)) == [("server", "rsocket-credits-cumulative")]
    assert judged(*CREDIT, fin("client", 0.04 + WAIT - 0.01)) == []
    # a run made with a shorter wait is judged against it (--param expect_ms=2000)
    shorter = {"expect_ms": 2000}
    assert judged(*CREDIT, fin("client", 2.06), params=shorter) == [("server", "rsocket-credits-cumulative")]
    assert judged(*CREDIT, fin("client", 2.03), params=shorter) == []


def test_no_credit_left_owes_nothing():
    spent = CREDIT[:4]  # the request's two items sent, no REQUEST_N: the service waits for credit
    assert judged(*spent, fin("client", 10.0)) == []


# -- a channel the requester completed -----------------------------------------------------------

CHANNEL = [("client", 0, SETUP),
           ("client", 0.01, frame(1, 0x1C80, n(2) + b"fir")),  # REQUEST_CHANNEL, F, n 2
           ("client", 0.02, frame(1, 0x2860, b"st")),  # PAYLOAD N|C: the last fragment, complete
           ("server", 0.03, frame(1, 0x2000, n(2))),  # REQUEST_N 2
           item(1, 0.04, b"first")]  # the echo, without C


def test_a_completed_channel_whose_completion_never_comes():
    assert judged(*CHANNEL, fin("client", 0.04 + WAIT + 0.01)) == [("server", "rsocket-seq-channel-initial-complete")]
    assert judged(*CHANNEL, fin("client", 0.04 + WAIT - 0.01)) == []
    assert judged(*CHANNEL) == []


def test_a_channel_completed_or_still_open_owes_no_completion():
    assert judged(*CHANNEL, ("server", 0.05, frame(1, 0x2840)), fin("client", 0.05 + WAIT + 0.5)) == []
    open_channel = [("client", 0, SETUP), ("client", 0.01, frame(1, 0x1C00, n(2) + b"first")),
                    ("server", 0.03, frame(1, 0x2000, n(2))), item(1, 0.04, b"first")]
    assert judged(*open_channel, fin("client", 0.04 + WAIT + 0.5)) == []
    # completed with C alone: no item carried the completion, so no requirement to file it under
    c_alone = [*open_channel, ("client", 0.05, frame(1, 0x2840))]
    assert judged(*c_alone, fin("client", 0.05 + WAIT + 0.5)) == []


def test_a_channel_the_responder_cancelled_owes_no_completion():
    cancel = ("server", 0.05, frame(1, 0x2400))  # CANCEL from the responder
    assert judged(*CHANNEL, cancel, fin("client", 0.05 + WAIT + 0.5)) == []


def test_a_leased_connection_is_not_judged():
    # SETUP with L (0x040), then the server's LEASE (0x02): TTL 30 s, 1000 requests; a request may wait for a lease
    leased = [("client", 0, H("00000000" "0440") + SETUP[6:]), ("server", 0.005, frame(0, 0x0800, n(30000) + n(1000))),
              *REUSED[1:]]
    assert judged(*leased, fin("client", 1.0 + WAIT + 0.5)) == []
