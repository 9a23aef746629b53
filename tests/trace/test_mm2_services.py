"""Micromessage2's test-service and test-client rules (conformance/trace/rules/micromessage2_services.py)
on hand-written captures.

Every frame below is written byte by byte from docs/profiles/micromessage2.md: a handshake is major
u8, minor u8, flags u8 (0), identity-len u8, identity, required-len u16 BE, required, optional-len
u16 BE, optional; an ERROR frame is flags 4, a one-byte length, the reason.  What the test service
and the test clients lack is the profile's ("Test service (server role)", "Test cases (client
role)").  Each rule: a finding with --test-services on, none with it off, none for the correct
behaviour."""

from __future__ import annotations

import dpkt

from conformance.trace.check import check_file
from tests.trace.pcapfiles import conversation, write_pcap

CLIENT, SERVER = ("127.0.0.1", 40200), ("127.0.0.1", 7100)


def _hello(required: str = "", optional: str = "", identity: bytes = b"hulk") -> bytes:
    req, opt = required.encode(), optional.encode()
    return bytes([1, 0, 0, len(identity)]) + identity + len(req).to_bytes(2, "big") + req \
        + len(opt).to_bytes(2, "big") + opt


def _error(reason: bytes = b"missing-required-extension") -> bytes:
    return bytes([4, len(reason)]) + reason


def _findings(tmp_path, moves, services: str, sender: str, times=None, closes=("client", "server")):
    """The findings against ``sender`` of one connection: ``moves``, then the FINs of ``closes`` in that
    order; ``times``: each move's and each FIN's time (default a millisecond apart)."""
    segments = conversation(CLIENT, SERVER, moves, fin=False)
    offset = {"client": sum(len(p) for s, p in moves if s == "client"),
              "server": sum(len(p) for s, p in moves if s == "server")}
    isn = {"client": 100, "server": 5100}
    ends = {"client": CLIENT, "server": SERVER}
    for side in closes:
        peer = "server" if side == "client" else "client"
        segments.append((ends[side], ends[peer], isn[side] + 1 + offset[side], dpkt.tcp.TH_ACK | dpkt.tcp.TH_FIN, b""))
    stamps = [1000.0, 1000.0005, *(times or [1000.001 + i / 1000 for i in range(len(moves) + len(closes))])]
    path = write_pcap(tmp_path / f"mm2-{services}.pcap", segments, times=stamps)
    result = check_file(path, {SERVER[1]: "micromessage2"}, None, {}, test_services=services)
    assert result.problems == []
    return [f.requirement for f in result.findings if f.sender == sender]


def _server(tmp_path, moves, **kw):
    """(findings against the server with the services on, with them off)."""
    return _findings(tmp_path, moves, "on", "server", **kw), _findings(tmp_path, moves, "off", "server", **kw)


def _client(tmp_path, moves, **kw):
    return _findings(tmp_path, moves, "on", "client", **kw), _findings(tmp_path, moves, "off", "client", **kw)


# -- the test service: a client hello or final message requiring what it lacks -----------------

def test_a_hello_requiring_an_unregistered_name_answered_by_a_hello(tmp_path):
    for required in ("microauth", "json;x-conformance-missing"):
        moves = [("client", _hello(required)), ("server", _hello())]
        assert _server(tmp_path, moves) == (["mm2-server-lacks-required"], []), required


def test_a_hello_requiring_what_the_service_lacks_answered_by_error(tmp_path):
    for required in ("microauth", "json;x-conformance-missing"):
        assert _server(tmp_path, [("client", _hello(required)), ("server", _error())]) == ([], []), required
    # the suite closes after the ERROR first, or the server does: either way nothing owed
    assert _server(tmp_path, [("client", _hello("microauth")), ("server", _error())],
                   closes=("server", "client")) == ([], [])


def test_a_hello_requiring_what_the_service_lacks_answered_by_a_close_alone(tmp_path):
    moves = [("client", _hello("x-conformance-missing"))]
    assert _server(tmp_path, moves, closes=("server", "client")) == (["mm2-server-lacks-required"], [])


def test_names_the_service_may_implement_are_not_judged(tmp_path):
    # the spec's names, and a vendor name outside x-conformance-: the service may have it
    for required in ("json;dotnet", "batch-ack:max-count=2;pubsub", "ack", "x-acme-trace:level=3", "x-suite-thing"):
        moves = [("client", _hello(required)), ("server", _hello()), ("client", _hello(required))]
        assert _server(tmp_path, moves) == ([], []), required


def test_a_hello_of_another_major_is_left_to_the_version_rules(tmp_path):
    other = bytes([2]) + _hello("microauth")[1:]
    assert _server(tmp_path, [("client", other)], closes=("server", "client")) == ([], [])


def test_a_final_message_requiring_what_the_service_lacks_left_unanswered(tmp_path):
    moves = [("client", _hello()), ("server", _hello()), ("client", _hello("x-conformance-missing"))]
    # the suite gives up 4 s after the final, the server still silent: it owed ERROR and the close
    late = [1000.001, 1000.002, 1000.003, 1004.003, 1004.004]
    assert _server(tmp_path, moves, times=late) == (["mm2-server-lacks-required"], [])
    # the suite closing a second after its final: the server's ERROR may still have been on its way
    early = [1000.001, 1000.002, 1000.003, 1001.003, 1001.004]
    assert _server(tmp_path, moves, times=early) == ([], [])


def test_a_final_message_requiring_what_the_service_lacks_answered(tmp_path):
    moves = [("client", _hello()), ("server", _hello()), ("client", _hello("x-conformance-missing"))]
    late = [1000.001, 1000.002, 1000.003, 1000.004, 1004.003, 1004.004]
    assert _server(tmp_path, [*moves, ("server", _error())], times=late) == ([], [])
    # a SEND's echo instead: the server went on
    message = bytes.fromhex("00 0001 09") + b"test/echo" + bytes.fromhex("0000 01") + b"x"
    assert _server(tmp_path, [*moves, ("server", message)]) == (["mm2-server-lacks-required"], [])


# -- the test clients: a server hello requiring, or suggesting, what they lack --------------------

def test_a_client_going_on_after_a_hello_requiring_what_it_lacks(tmp_path):
    moves = [("client", _hello("", "json")), ("server", _hello("x-conformance-server-only", "json")),
             ("client", _hello("x-conformance-server-only", "json"))]
    assert _client(tmp_path, moves) == (["mm2-client-error-on-required"], [])


def test_a_client_refusing_a_hello_requiring_what_it_lacks(tmp_path):
    moves = [("client", _hello("", "json")), ("server", _hello("x-conformance-server-only")), ("client", _error())]
    assert _client(tmp_path, moves) == ([], [])


def test_what_the_clients_own_hello_listed_it_implements(tmp_path):
    moves = [("client", _hello("x-conformance-missing")), ("server", _hello("x-conformance-missing")),
             ("client", _hello("x-conformance-missing"))]
    assert _client(tmp_path, moves) == ([], [])
    # and a vendor name outside x-conformance- and x-suite-: a client may have it
    moves = [("client", _hello()), ("server", _hello("x-acme-trace")), ("client", _hello("x-acme-trace"))]
    assert _client(tmp_path, moves) == ([], [])


def test_a_client_activating_a_suggestion_it_lacks(tmp_path):
    moves = [("client", _hello("", "json")), ("server", _hello("", "json;x-suite-suggestion")),
             ("client", _hello("", "json;x-suite-suggestion"))]
    assert _client(tmp_path, moves) == (["mm2-client-final"], [])


def test_a_client_leaving_a_suggestion_it_lacks(tmp_path):
    moves = [("client", _hello("", "json")), ("server", _hello("", "json;x-suite-suggestion")),
             ("client", _hello("", "json"))]
    assert _client(tmp_path, moves) == ([], [])
    # offered by the client itself: it has it
    moves = [("client", _hello("", "json;x-suite-suggestion")), ("server", _hello("", "json;x-suite-suggestion")),
             ("client", _hello("", "json;x-suite-suggestion"))]
    assert _client(tmp_path, moves) == ([], [])


# -- the test service: test/push's messages, owed as fast as the ack window allows ---------------

def _message(seq: int, destination: bytes = b"test/push", properties: bytes = b"", payload: bytes = b"\x07") -> bytes:
    """MESSAGE/SEND (flags 0): seq u16 BE, destination-len u8, destination, properties-len u16 BE,
    properties, payload-len u8, payload."""
    return bytes([0]) + seq.to_bytes(2, "big") + bytes([len(destination)]) + destination \
        + len(properties).to_bytes(2, "big") + properties + bytes([len(payload)]) + payload


def _ack(seq: int) -> bytes:
    """An ack on batch-ack's ID 1: EXTENSION (flags 2), ID u8, length u8 = 2, seq u16 BE."""
    return bytes([2, 1, 2]) + seq.to_bytes(2, "big")


# batch-ack with a window of two; the push owes five messages. The server's numbers start just before
# the wrap (65535, 1, ...): the client acks 1 with the window full, acking 65535 and 1 across the wrap
PUSH_OPEN = [("client", _hello("batch-ack:max-count=2")), ("server", _hello()),
             ("client", _hello("batch-ack:max-count=2")),
             ("client", _message(1, properties=b"count:5;size:1;")),
             ("server", _message(65535)), ("server", _message(1)), ("client", _ack(1)), ("server", _message(2))]


def _times(quiet: float, moves):
    """A millisecond apart, then the client's FIN and the server's ``quiet`` s after the last move."""
    start = [1000.001 + i / 1000 for i in range(len(moves))]
    return [*start, start[-1] + quiet, start[-1] + quiet + 0.001]


def test_a_push_stalled_with_the_window_open_across_the_wrap(tmp_path):
    # the server sent one message of the two the ack made room for, then nothing: the suite gave up a
    # wait later (expect_ms, 5 s) and closed
    assert _server(tmp_path, PUSH_OPEN, times=_times(5.001, PUSH_OPEN)) == (["mm2-ack-across-wrap"], [])
    # the client's next frame a wait later proves the silence as well as its close
    moves = [*PUSH_OPEN, ("client", _message(2, b"test/echo"))]
    times = [*_times(0, PUSH_OPEN)[:len(PUSH_OPEN)], 1000.001 + len(PUSH_OPEN) / 1000 + 5.0, 1006.0, 1006.001]
    assert _server(tmp_path, moves, times=times) == (["mm2-ack-across-wrap"], [])


def test_a_push_silent_less_than_the_wait_is_not_judged(tmp_path):
    assert _server(tmp_path, PUSH_OPEN, times=_times(4.999, PUSH_OPEN)) == ([], [])


def test_a_push_stalled_where_the_capture_just_ends_is_not_judged(tmp_path):
    assert _server(tmp_path, PUSH_OPEN, times=_times(60, PUSH_OPEN)[:-2], closes=()) == ([], [])


def test_a_push_sent_as_the_window_allows_is_not_judged(tmp_path):
    # the window full again (2 and 3 unacked): nothing is owed until the client acks
    moves = [*PUSH_OPEN, ("server", _message(3))]
    assert _server(tmp_path, moves, times=_times(9, moves)) == ([], [])
    # all five sent
    moves = [*PUSH_OPEN, ("server", _message(3)), ("client", _ack(3)), ("server", _message(4))]
    assert _server(tmp_path, moves, times=_times(9, moves)) == ([], [])
    # an ERROR ends what the service owes
    moves = [*PUSH_OPEN, ("server", _error(b"service-overloaded"))]
    assert _server(tmp_path, moves, times=_times(9, moves)) == ([], [])


def test_room_from_an_ack_that_does_not_cross_the_wrap_is_not_judged(tmp_path):
    # the same stall, the room given by an ack of 3 and 4 (no wrap): a plain stall, which no
    # requirement of the catalogue names
    moves = [("client", _hello("batch-ack:max-count=2")), ("server", _hello()),
             ("client", _hello("batch-ack:max-count=2")), ("client", _message(1, properties=b"count:5;size:1;")),
             ("server", _message(3)), ("server", _message(4)), ("client", _ack(4)), ("server", _message(5))]
    assert _server(tmp_path, moves, times=_times(9, moves)) == ([], [])
    # and an ack across the wrap with room left before it: the server had room and sent nothing anyway
    moves = [("client", _hello("batch-ack:max-count=3")), ("server", _hello()),
             ("client", _hello("batch-ack:max-count=3")), ("client", _message(1, properties=b"count:5;size:1;")),
             ("server", _message(65535)), ("server", _message(1)), ("client", _ack(1))]
    assert _server(tmp_path, moves, times=_times(9, moves)) == ([], [])


# -- the test service sends ERROR only where the profile owes one ------------------------------

SUBSCRIBE = b"subscribe;destination=test%2Ftopic"
PUBSUB = [("client", _hello("pubsub")), ("server", _hello()), ("client", _hello("pubsub"))]


def test_an_error_right_after_a_short_subscribe_with_large_payload(tmp_path):
    large = bytes([1 | 8]) + len(SUBSCRIBE).to_bytes(4, "big") + SUBSCRIBE  # COMMAND, LARGE_PAYLOAD: 4-byte length
    assert _server(tmp_path, [*PUBSUB, ("client", large), ("server", _error(b"bad-name"))]) == (["mm2-large-payload"], [])
    # the same subscribe with the one-byte length: not a frame this rule looks at
    short = bytes([1, len(SUBSCRIBE)]) + SUBSCRIBE
    assert _server(tmp_path, [*PUBSUB, ("client", short), ("server", _error(b"bad-name"))]) == ([], [])
    # the ERROR a prompt_ms (1 s) after it: it may be the service's read timeout on something else
    times = [1000.001, 1000.002, 1000.003, 1000.004, 1001.5, 1001.6, 1001.7]
    assert _server(tmp_path, [*PUBSUB, ("client", large), ("server", _error(b"bad-name"))], times=times) == ([], [])


def test_an_error_owed_earlier_on_the_connection_is_not_judged(tmp_path):
    large = bytes([1 | 8]) + len(SUBSCRIBE).to_bytes(4, "big") + SUBSCRIBE
    # the final message requires x-conformance-missing: the service owes ERROR and the close
    final = _hello("pubsub;x-conformance-missing")
    moves = [("client", _hello("pubsub")), ("server", _hello()), ("client", final), ("client", large),
             ("server", _error())]
    assert "mm2-large-payload" not in _server(tmp_path, moves)[0]
