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


def test_zmtp_pings_keep_the_client_present(tmp_path, capsys):
    # profile: "Any traffic from the client counts" (as present); a client with TTL 100 ms that
    # only PINGs (RFC 37: %x04 "PING", a 2-octet TTL, a context) every 50 ms for 0.6 s was never
    # quiet past twice its TTL, so no NOOP was owed; without the PINGs it was (mc0-noop-timing)
    connect = [b"", b"CONNECT", b"ID", b"1", b"VERSION", b"0.3", b"TTL", b"100"]
    ok = [b"", b"OK", b"ID", b"1"]
    ready = _command(b"\x05READY" + b"\x0bSocket-Type" + b"\x00\x00\x00\x06DEALER")
    head = [("client", _greeting(False) + ready), ("server", _greeting(True) + ready),
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
