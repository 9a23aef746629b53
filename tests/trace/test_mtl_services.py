"""MTL's test-service rule (conformance/trace/rules/mtl_services.py) on hand-written captures.

docs/profiles/mtl.md, "Test service (server role)": the virtual host is test-env, and a
Connection.Open of it with protocol {"name": "MTL", "version": 1} gets 201, or 401 where the
server asks for authentication; "Command names are case-insensitive" (mtl-command-names).  With
--test-services on, 400 or 501 to that Open spelled in another letter case as the connection's
first request is a finding under mtl-command-names; with it off, for the answers the service
gives, for any other request, body or state, nothing.

The bytes are ZMTP 3.0 (https://rfc.zeromq.org/spec/23/) written out by hand: a 64-byte greeting
(signature FF, 8 padding bytes, 7F; version 3.0; mechanism "NULL" padded to 20 bytes; as-server
0; 31 filler bytes), a READY command (flags 04, size, "\\x05READY", then the property
Socket-Type: a name length byte, the name, a 4-byte value length, the value), then messages as
frames (flags 01 when more frames follow, else 00; a one-byte size; the body).  A control
request is the REQ envelope's empty frame, the command name and a JSON body; a reply the empty
frame, the three-digit status and a JSON body."""

from __future__ import annotations

from conformance.cli import main
from conformance.trace.check import check_file
from tests.trace.pcapfiles import CLIENT, SERVER, data, write_pcap

GREETING = b"\xff" + b"\x00" * 8 + b"\x7f" + b"\x03\x00" + b"NULL" + b"\x00" * 16 + b"\x00" + b"\x00" * 31
OPEN_BODY = b'{"protocol":{"name":"MTL","version":1},"virtual-host":"test-env"}'
UNAUTHORIZED = b'{"status":"Unauthorized","mechanisms":["PLAIN","SCRAM-SHA-256"]}'
READY_201 = b'{"status":"Ready","profiles":["test","confirm-test"]}'
BAD_REQUEST = b'{"status":"Bad Request"}'


def _ready(socket_type: bytes) -> bytes:
    body = b"\x05READY" + b"\x0bSocket-Type" + len(socket_type).to_bytes(4, "big") + socket_type
    return b"\x04" + bytes([len(body)]) + body


def _message(*frames: bytes) -> bytes:
    out = b""
    for i, frame in enumerate(frames):
        out += (b"\x01" if i < len(frames) - 1 else b"\x00") + bytes([len(frame)]) + frame
    return out


def _request(command: bytes, body: bytes = OPEN_BODY) -> bytes:
    return _message(b"", command, body)


def _reply(code: bytes, body: bytes) -> bytes:
    return _message(b"", code, body)


def test_the_hand_written_bytes_are_what_the_reference_reads():
    from reference_impl.mtl import control
    assert len(GREETING) == 64
    assert control.decode_request([b"CONNECTION.OPEN", OPEN_BODY]).body == \
        {"protocol": {"name": "MTL", "version": 1}, "virtual-host": "test-env"}


def _segments(*exchanges, syn: bool = True):
    """Greetings and READYs (REQ client, ROUTER server), then (client bytes, server bytes) pairs."""
    from tests.trace.pcapfiles import syns
    moves = [("client", GREETING + _ready(b"REQ")), ("server", GREETING + _ready(b"ROUTER"))]
    for sent, answered in exchanges:
        moves += [("client", sent), ("server", answered)]
    offset = {"client": 0, "server": 0}
    out = list(syns()) if syn else []
    for side, payload in moves:
        out.append(data(CLIENT if side == "client" else SERVER, offset[side], payload))
        offset[side] += len(payload)
    return out


def _findings(tmp_path, *exchanges, services: str = "on", syn: bool = True):
    path = write_pcap(tmp_path / f"mtl-{services}.pcap", _segments(*exchanges, syn=syn))
    result = check_file(path, {SERVER[1]: "mtl"}, None, {}, test_services=services)
    assert result.problems == []
    return [(f.sender, f.requirement, f.level) for f in result.findings]


def test_the_open_of_test_env_in_capitals_refused_400_is_a_finding(tmp_path):
    found = _findings(tmp_path, (_request(b"CONNECTION.OPEN"), _reply(b"400", BAD_REQUEST)))
    assert found == [("server", "mtl-command-names", "MUST")]


def test_other_spellings_and_501_are_findings_too(tmp_path):
    for name in (b"connection.open", b"cOnNeCtIoN.oPeN", b"Connection.OPEN"):
        for code in (b"400", b"501"):
            assert _findings(tmp_path, (_request(name), _reply(code, BAD_REQUEST))) == \
                [("server", "mtl-command-names", "MUST")], (name, code)


def test_without_the_services_it_is_not_judged(tmp_path):
    assert _findings(tmp_path, (_request(b"CONNECTION.OPEN"), _reply(b"400", BAD_REQUEST)), services="off") == []


def test_the_services_answers_are_no_finding(tmp_path):
    assert _findings(tmp_path, (_request(b"CONNECTION.OPEN"), _reply(b"401", UNAUTHORIZED))) == []
    assert _findings(tmp_path, (_request(b"connection.open"), _reply(b"201", READY_201))) == []


def test_answers_that_do_not_refuse_the_command_are_not_judged(tmp_path):
    # 403 Forbidden or a server error may have reasons of the server's own
    for code in (b"403", b"500", b"503"):
        assert _findings(tmp_path, (_request(b"CONNECTION.OPEN"), _reply(code, BAD_REQUEST))) == [], code


def test_the_canonical_spelling_refused_is_not_this_rule(tmp_path):
    # a server that refuses Connection.Open itself breaks the service, not the case-insensitivity
    assert _findings(tmp_path, (_request(b"Connection.Open"), _reply(b"400", BAD_REQUEST))) == []


def test_another_body_may_be_what_the_400_is_for(tmp_path):
    bodies = [
        b'{"protocol":{"name":"MTL","version":1},"virtual-host":"other"}',  # a host the service does not pin
        b'{"protocol":{"name":"MTL","version":1}}',  # no virtual host
        b'{"protocol":{"name":"MTL","version":1.0},"virtual-host":"test-env"}',  # 1.0 is not the number 1
        b'{"protocol":{"name":"MTL","version":2},"virtual-host":"test-env"}',
        b'{"protocol":{"name":"mtl","version":1},"virtual-host":"test-env"}',
        b'{"protocol":{"name":"MTL","version":1},"virtual-host":"test-env","x-suite":1}',  # another key
        # a key twice: which value a server takes is its own
        b'{"protocol":{"name":"MTL","version":1},"virtual-host":"other","virtual-host":"test-env"}',
    ]
    for body in bodies:
        assert _findings(tmp_path, (_request(b"CONNECTION.OPEN", body), _reply(b"400", BAD_REQUEST))) == [], body


def test_the_same_body_with_whitespace_and_keys_in_another_order_is_the_same_open(tmp_path):
    body = b'{ "virtual-host" : "test-env",\n  "protocol": {"version": 1, "name": "MTL"} }'
    assert _findings(tmp_path, (_request(b"CONNECTION.OPEN", body), _reply(b"400", BAD_REQUEST))) == \
        [("server", "mtl-command-names", "MUST")]


def test_names_that_are_not_connection_open_are_not_judged(tmp_path):
    for name in (b"CONNECTION.OPENED", b"CONNECTION_OPEN", b"CHANNEL.OPEN", b"Connection.Frobnicate"):
        assert _findings(tmp_path, (_request(name), _reply(b"400", BAD_REQUEST))) == [], name


def test_only_the_connections_first_request_is_judged(tmp_path):
    # a second Open (after one the server answered) may meet a state the spec leaves to the server
    assert _findings(tmp_path, (_request(b"Connection.Open"), _reply(b"401", UNAUTHORIZED)),
                     (_request(b"CONNECTION.OPEN"), _reply(b"400", BAD_REQUEST))) == []
    # an ill-formed request first (a name that is not UTF-8): the server drops it, and the Open is the second
    ill_formed = _request(b"\xff", b"{}")
    path = write_pcap(tmp_path / "ill.pcap", [*_segments()[:4], data(CLIENT, 64 + len(_ready(b"REQ")), ill_formed),
                                              data(CLIENT, 64 + len(_ready(b"REQ")) + len(ill_formed),
                                                   _request(b"CONNECTION.OPEN")),
                                              data(SERVER, 64 + len(_ready(b"ROUTER")), _reply(b"400", BAD_REQUEST))])
    result = check_file(path, {SERVER[1]: "mtl"}, None, {}, test_services="on")
    assert "mtl-command-names" not in [f.requirement for f in result.findings]


def test_later_commands_in_another_case_are_not_judged(tmp_path):
    # whether Authorize or Profile would be served rests on the session's state, not on the service alone
    authorize = b'{"mechanism":"PLAIN","response":"AGFsaWNlAHdvbmRlcmxhbmQ="}'  # "\0alice\0wonderland"
    assert _findings(tmp_path, (_request(b"Connection.Open"), _reply(b"401", UNAUTHORIZED)),
                     (_request(b"connection.authorize", authorize), _reply(b"400", BAD_REQUEST))) == []


def test_a_capture_that_begins_mid_connection_is_not_judged(tmp_path):
    path = write_pcap(tmp_path / "mid.pcap", _segments((_request(b"CONNECTION.OPEN"), _reply(b"400", BAD_REQUEST)),
                                                       syn=False))
    result = check_file(path, {SERVER[1]: "mtl"}, None, {}, test_services="on")
    assert [f for f in result.findings if f.requirement == "mtl-command-names"] == []


def test_check_trace_fails_on_it_with_the_services_on_only(tmp_path, capsys):
    path = write_pcap(tmp_path / "tcpdump.pcap",
                      _segments((_request(b"CONNECTION.OPEN"), _reply(b"400", BAD_REQUEST))))
    args = ["check-trace", "--port", f"{SERVER[1]}=mtl", str(path)]
    assert main([*args[:-1], "--test-services", "on", str(path)]) == 1
    assert "mtl-command-names" in capsys.readouterr().out
    assert main([*args[:-1], "--test-services", "off", str(path)]) == 0
    assert main(args) == 0  # auto: a tcpdump capture is not known to be of a conformance run


# -- RFC 23: "a ZMTP peer MUST accept protocol versions greater or equal to 3.0" ------------------

def _closed_after_greeting(tmp_path, greeting: bytes, served: bool, services: str = "on", socket_type=b"REQ"):
    """The server greets, the client greets (``greeting``) and sends READY; the server answers READY
    (``served``) or closes first (its FIN before the client's)."""
    import dpkt
    from tests.trace.pcapfiles import conversation
    moves = [("server", GREETING), ("client", greeting + _ready(socket_type))] + (
        [("server", _ready(b"ROUTER"))] if served else [])
    segments = conversation(CLIENT, SERVER, moves, fin=False)
    sent = {side: sum(len(p) for s, p in moves if s == side) for side in ("client", "server")}
    segments += [(SERVER, CLIENT, 5100 + 1 + sent["server"], dpkt.tcp.TH_ACK | dpkt.tcp.TH_FIN, b""),
                 (CLIENT, SERVER, 100 + 1 + sent["client"], dpkt.tcp.TH_ACK | dpkt.tcp.TH_FIN, b"")]
    path = write_pcap(tmp_path / f"zmtp-{services}.pcap", segments)
    result = check_file(path, {SERVER[1]: "mtl"}, None, {}, test_services=services)
    assert result.problems == []
    return [(f.sender, f.requirement) for f in result.findings]


def test_a_close_after_a_zmtp_3_0_greeting_is_a_finding(tmp_path):
    assert _closed_after_greeting(tmp_path, GREETING, served=False) == [("server", "mtl-router")]
    assert _closed_after_greeting(tmp_path, GREETING, served=False, services="off") == []
    # served: its READY came before the close
    assert _closed_after_greeting(tmp_path, GREETING, served=True) == []
    # a 3.1 greeting, or a 3.0 one with a mechanism the service does not speak: not this rule
    greeting_31 = GREETING[:11] + b"\x01" + GREETING[12:]
    plain = GREETING[:12] + b"PLAIN" + b"\x00" * 15 + GREETING[32:]
    assert len(greeting_31) == len(plain) == 64
    assert _closed_after_greeting(tmp_path, greeting_31, served=False) == []
    assert _closed_after_greeting(tmp_path, plain, served=False) == []
    # a socket type a ROUTER does not pair with: the server may close for that
    assert _closed_after_greeting(tmp_path, GREETING, served=False, socket_type=b"PUB") == []
    assert _closed_after_greeting(tmp_path, GREETING, served=False, socket_type=b"DEALER") == [("server", "mtl-router")]


# -- a Profile granted to a client that is not authenticated (not a service rule: any capture) --------

AUTHORIZE_WRONG = b'{"mechanism":"PLAIN","response":"AGFsaWNlAHdyb25n"}'  # base64 of "\0alice\0wrong"
PROFILE_TEST = b'{"profile":"test"}'
OK_200 = b'{"status":"OK"}'


def test_a_profile_granted_after_a_failed_authorize_owed_an_error_reply(tmp_path):
    after_failed = _findings(tmp_path, (_request(b"Connection.Open"), _reply(b"201", READY_201)),
                             (_request(b"Connection.Authorize", AUTHORIZE_WRONG), _reply(b"401", UNAUTHORIZED)),
                             (_request(b"Connection.Profile", PROFILE_TEST), _reply(b"200", OK_200)), services="off")
    assert after_failed == [("server", "mtl-control-error-reply", "MUST")]
    # challenged by the Open's 401 and never authenticated: the challenge's rule
    challenged = _findings(tmp_path, (_request(b"Connection.Open"), _reply(b"401", UNAUTHORIZED)),
                           (_request(b"Connection.Profile", PROFILE_TEST), _reply(b"200", OK_200)), services="off")
    assert challenged == [("server", "mtl-challenge", "MUST")]
    # refused as owed
    refused = _findings(tmp_path, (_request(b"Connection.Open"), _reply(b"201", READY_201)),
                        (_request(b"Connection.Authorize", AUTHORIZE_WRONG), _reply(b"401", UNAUTHORIZED)),
                        (_request(b"Connection.Profile", PROFILE_TEST), _reply(b"401", UNAUTHORIZED)), services="off")
    assert refused == []
