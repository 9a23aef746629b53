"""mc0's message rules on clear-text (NULL) connections built by hand (docs/profiles/mc0.md):
what a misbehaving client sends must give findings or nothing, never a traceback."""

from __future__ import annotations

from conformance.cli import main
from tests.trace.pcapfiles import CLIENT, SERVER, conversation, write_pcap


def _greeting(as_server: bool) -> bytes:
    # RFC 23: signature, version 3.0, mechanism NULL, as-server, filler
    return b"\xff" + bytes(8) + b"\x7f" + b"\x03\x00" + b"NULL".ljust(20, b"\0") + bytes([as_server]) + bytes(31)


def _message(parts: list[bytes]) -> bytes:
    """A ZMTP message: each part a frame, MORE (01) on all but the last, LONG (02) past 255 octets."""
    out = b""
    for i, part in enumerate(parts):
        more = 0x01 if i < len(parts) - 1 else 0
        if len(part) > 255:
            out += bytes([more | 0x02]) + len(part).to_bytes(8, "big") + part
        else:
            out += bytes([more, len(part)]) + part
    return out


def test_a_connect_whose_ttl_has_thousands_of_digits_is_checked_without_a_traceback(tmp_path, capsys):
    # int() refuses more than 4300 digits (ValueError); the broker answers such a TTL with ERROR
    # (profile: a malformed message gets ERROR and the broker keeps serving)
    connect = [b"", b"CONNECT", b"ID", b"1", b"VERSION", b"0.3", b"TTL", b"9" * 5000]
    refused = [b"", b"ERROR", b"ID", b"1", b"MESSAGE", b"bad TTL"]
    pcap = write_pcap(tmp_path / "ttl.pcap", conversation(CLIENT, SERVER, [
        ("client", _greeting(False)), ("server", _greeting(True)),
        ("client", _message(connect)), ("server", _message(refused))]))
    code = main(["check-trace", "--port", "9000=mc0", str(pcap)])
    out = capsys.readouterr().out
    # mc0 asks for CURVE: each NULL greeting is a finding (mc0-curve), and the messages are still read
    assert code == 1 and "1 connections, 4 frames checked, 2 findings" in out
    assert [line.split()[2] for line in out.splitlines() if line.startswith("  FAILED")] == ["mc0-curve:"] * 2


def _command(body: bytes) -> bytes:
    return bytes([0x04, len(body)]) + body  # RFC 23: COMMAND flag, short size


# RFC 23: NULL's READY command with the Socket-Type property
READY = _command(b"\x05READY" + b"\x0bSocket-Type" + b"\x00\x00\x00\x06DEALER")


def test_zmtp_pings_keep_the_client_present(tmp_path, capsys):
    # profile: "Any traffic from the client counts" (as present); a client with TTL 100 ms that
    # only PINGs (RFC 37: %x04 "PING", a 2-octet TTL, a context) every 50 ms for 0.6 s was never
    # quiet past twice its TTL, so no NOOP was owed; without the PINGs it was (mc0-noop-timing)
    connect = [b"", b"CONNECT", b"ID", b"1", b"VERSION", b"0.3", b"TTL", b"100"]
    ok = [b"", b"OK", b"ID", b"1"]
    head = [("client", _greeting(False) + READY), ("server", _greeting(True) + READY),
            ("client", _message(connect)), ("server", _message(ok))]
    pings = [("client", _command(b"\x04PING" + b"\x00\x00" + b"p"))] * 12

    def grades(moves):
        segments = conversation(CLIENT, SERVER, moves)
        # handshake and the first moves a millisecond apart, each PING 50 ms later, then the FINs
        times, t = [], 1000.0
        for i in range(len(segments)):
            t += 0.05 if 2 + len(head) <= i < len(segments) - 2 else 0.001
            times.append(t)
        if len(moves) == len(head):  # no PINGs: the same 0.6 s pass in silence before the FINs
            times[-2:] = [times[-3] + 0.6, times[-3] + 0.601]
        pcap = write_pcap(tmp_path / "ttl.pcap", segments, times=times)
        main(["check-trace", "--port", "9000=mc0", str(pcap)])
        return [word.rstrip(":") for line in capsys.readouterr().out.splitlines()
                if line.startswith("  NON-STRICT") for word in line.split() if word.startswith("mc0-")]

    assert grades(head) == ["mc0-noop-timing"]
    assert grades(head + pings) == []


def _delivery_findings(tmp_path, capsys, deliveries: list[list[bytes]]) -> list[str]:
    """A NULL connection that subscribes to t and PUTs body "tick" with X-From: a; the broker's
    MESSAGEs for t are ``deliveries``; the FAILED lines of check-trace (NULL's mc0-curve aside)."""
    sub = [b"", b"SUB", b"ID", b"s", b"", b"t"]  # headers, the empty separator, positionals
    put = [b"", b"PUT", b"TOPIC", b"t", b"X-From", b"a", b"", b"tick"]
    moves = [("client", _greeting(False) + READY), ("server", _greeting(True) + READY),
             ("client", _message(sub)), ("server", _message([b"", b"OK", b"ID", b"s"])),
             ("client", _message(put))] + [("server", _message(d)) for d in deliveries]
    pcap = write_pcap(tmp_path / "x.pcap", conversation(CLIENT, SERVER, moves))
    main(["check-trace", "--port", "9000=mc0", str(pcap)])
    return [line for line in capsys.readouterr().out.splitlines()
            if line.startswith("  FAILED") and "mc0-curve" not in line]


# the profile: X- headers of a PUT are forwarded untouched, in order, in its MESSAGE
OTHERS = [b"", b"MESSAGE", b"TOPIC", b"t", b"X-From", b"b", b"", b"tick"]  # another publisher's PUT of the same body
OWN = [b"", b"MESSAGE", b"TOPIC", b"t", b"X-From", b"a", b"", b"tick"]
STRIPPED = [b"", b"MESSAGE", b"TOPIC", b"t", b"", b"tick"]


def test_another_publishers_delivery_of_the_same_body_is_not_a_finding(tmp_path, capsys):
    assert _delivery_findings(tmp_path, capsys, [OTHERS, OWN]) == []
    assert _delivery_findings(tmp_path, capsys, [OWN, OTHERS]) == []


def test_a_put_delivered_only_without_its_headers_is_a_finding_at_that_message(tmp_path, capsys):
    found = _delivery_findings(tmp_path, capsys, [STRIPPED])
    assert len(found) == 1 and "mc0-reserved-headers" in found[0], found
    # the server's frames: greeting 0, READY 1, OK 2, the MESSAGE 3
    assert "server 127.0.0.1:9000, frame 3 " in found[0] and "carries X- headers [], the PUT [X-From=a]" in found[0]
    # neither delivery is its own: placed at the first (another publisher's is as wrong for this PUT)
    found = _delivery_findings(tmp_path, capsys, [OTHERS, STRIPPED])
    assert len(found) == 1 and "frame 3 " in found[0] and "[X-From=b], the PUT [X-From=a]" in found[0], found


def _reply_findings(tmp_path, capsys, moves: list[tuple[str, list[bytes]]]) -> list[str]:
    """A NULL connection carrying ``moves`` (side, message parts); the FAILED lines of check-trace
    (NULL's mc0-curve aside)."""
    head = [("client", _greeting(False) + READY), ("server", _greeting(True) + READY)]
    pcap = write_pcap(tmp_path / "r.pcap", conversation(CLIENT, SERVER, head + [(s, _message(m)) for s, m in moves]))
    main(["check-trace", "--port", "9000=mc0", str(pcap)])
    return [line for line in capsys.readouterr().out.splitlines()
            if line.startswith("  FAILED") and "mc0-curve" not in line]


def test_an_ok_to_a_request_the_profile_refuses_is_a_finding(tmp_path, capsys):
    # profile: "CONNECT VERSION 0.3 (0.2 accepted); another version gets ERROR."
    v01 = [b"", b"CONNECT", b"ID", b"v", b"VERSION", b"0.1"]
    found = _reply_findings(tmp_path, capsys, [("client", v01), ("server", [b"", b"OK", b"ID", b"v"])])
    assert len(found) == 1 and "mc0-connect-version" in found[0], found
    error = [b"", b"ERROR", b"ID", b"v", b"MESSAGE", b"bad version"]
    assert _reply_findings(tmp_path, capsys, [("client", v01), ("server", error)]) == []
    # the draft's headers are "optionally followed by the empty string and any positional parameters":
    # UNSUB ID u (no separator) is an UNSUB with no topics, and OK is a right answer
    unsub = [b"", b"UNSUB", b"ID", b"u"]
    assert _reply_findings(tmp_path, capsys, [("client", unsub), ("server", [b"", b"OK", b"ID", b"u"])]) == []
    # IDs need not be unique: with a NOOP of the same ID outstanding, the OK may be the NOOP's
    noop = [b"", b"NOOP", b"ID", b"v"]
    assert _reply_findings(tmp_path, capsys, [("client", v01), ("client", noop), ("server", [b"", b"OK", b"ID", b"v"]),
                                              ("server", error)]) == []


def _owed_error_findings(tmp_path, moves, quiet: float | None, services: str = "on") -> list[str]:
    """A NULL connection (greetings and READYs), ``moves`` (side, message parts) a millisecond apart,
    then the client's FIN ``quiet`` s after the last and the broker's (None: the capture just ends);
    the broker's mc0-message-structure findings."""
    from conformance.trace.check import check_file
    all_moves = [("client", _greeting(False) + READY), ("server", _greeting(True) + READY),
                 *((side, _message(parts)) for side, parts in moves)]
    segments = conversation(CLIENT, SERVER, all_moves, fin=quiet is not None)
    times = [1000.0, 1000.0005, *(1000.001 + i / 1000 for i in range(len(all_moves)))]
    if quiet is not None:
        times += [times[-1] + quiet, times[-1] + quiet + 0.001]
    pcap = write_pcap(tmp_path / f"owed-{services}.pcap", segments, times=times)
    result = check_file(pcap, {SERVER[1]: "mc0"}, None, {}, test_services=services)
    assert result.problems == []
    return [f.requirement for f in result.findings if f.sender == "server" and f.requirement != "mc0-curve"]


# an odd header count (profile: an even one is required; a malformed message gets ERROR and the broker
# keeps serving), and the ERROR it is owed
ODD = [b"", b"PUT", b"TOPIC", b"odd", b"X-Dangling"]
ODD_REFUSED = [b"", b"ERROR", b"MESSAGE", b"odd header count"]


def test_a_broker_silent_a_reply_wait_after_a_malformed_message(tmp_path):
    # the first answered, the second never: the client closes reply_ms (2 s) later, the broker still open
    moves = [("client", ODD), ("server", ODD_REFUSED), ("client", ODD)]
    assert _owed_error_findings(tmp_path, moves, 2.001) == ["mc0-message-structure"]
    assert _owed_error_findings(tmp_path, moves, 2.001, services="off") == []
    assert _owed_error_findings(tmp_path, moves, 1.99) == []  # the ERROR may have been on its way
    assert _owed_error_findings(tmp_path, moves, None) == []  # the capture just ends: 'never' is not 'later'


def test_a_broker_answering_each_malformed_message_is_not_judged(tmp_path):
    moves = [("client", ODD), ("server", ODD_REFUSED), ("client", ODD), ("server", ODD_REFUSED)]
    assert _owed_error_findings(tmp_path, moves, 9) == []


def test_a_message_after_the_ok_to_its_topics_unsub_is_a_finding(tmp_path, capsys):
    # the draft's [ 'UNSUB', '', 'topic1', 'topic2' ]; profile: one UNSUB ends a subscription
    def sub(i):
        return [b"", b"SUB", b"ID", i, b"", b"t"]

    def ok(i):
        return [b"", b"OK", b"ID", i]

    unsub, message = [b"", b"UNSUB", b"ID", b"u", b"", b"t"], [b"", b"MESSAGE", b"TOPIC", b"t", b"", b"x"]
    found = _reply_findings(tmp_path, capsys, [("client", sub(b"s")), ("server", ok(b"s")), ("client", unsub),
                                               ("server", ok(b"u")), ("server", message)])
    assert len(found) == 1 and "mc0-unsub" in found[0] and "mc0-unsub-once" not in found[0], found
    # subscribed twice: the level of mc0-unsub-once (SHOULD), not mc0-unsub's
    head = [("client", _greeting(False) + READY), ("server", _greeting(True) + READY)]
    moves = [("client", sub(b"s")), ("server", ok(b"s")), ("client", sub(b"r")), ("server", ok(b"r")),
             ("client", unsub), ("server", ok(b"u")), ("server", message)]
    pcap = write_pcap(tmp_path / "twice.pcap", conversation(CLIENT, SERVER, head + [(s, _message(m)) for s, m in moves]))
    main(["check-trace", "--port", "9000=mc0", str(pcap)])
    lines = [line for line in capsys.readouterr().out.splitlines() if "mc0-unsub" in line]
    assert len(lines) == 1 and "mc0-unsub-once" in lines[0] and "FAILED" not in lines[0], lines
    # a delivery before the UNSUB's OK, or after a SUB sent again (even before that OK), is no finding
    assert _reply_findings(tmp_path, capsys, [("client", sub(b"s")), ("server", ok(b"s")), ("client", unsub),
                                              ("server", message), ("server", ok(b"u"))]) == []
    assert _reply_findings(tmp_path, capsys, [("client", sub(b"s")), ("server", ok(b"s")), ("client", unsub),
                                              ("client", sub(b"r")), ("server", ok(b"u")), ("server", ok(b"r")),
                                              ("server", message)]) == []


def test_a_message_without_its_separator_is_a_finding(tmp_path, capsys):
    # profile: PUT TOPIC t '' body reaches every subscriber of t exactly as `MESSAGE TOPIC t <other headers> '' body`
    sub, ok = [b"", b"SUB", b"ID", b"s", b"", b"t"], [b"", b"OK", b"ID", b"s"]
    found = _reply_findings(tmp_path, capsys, [("client", sub), ("server", ok), ("server", [b"", b"MESSAGE", b"TOPIC", b"t"])])
    assert len(found) == 1 and "mc0-message" in found[0], found
    assert _reply_findings(tmp_path, capsys, [("client", sub), ("server", ok),
                                              ("server", [b"", b"MESSAGE", b"TOPIC", b"t", b""])]) == []
