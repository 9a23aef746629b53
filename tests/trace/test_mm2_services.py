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
    moves = [("client", _hello("", "json")), ("server", _hello("x-conformance-server-only")),
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
