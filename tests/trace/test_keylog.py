"""check-trace --keylog: a CURVE session built by hand (tests/trace/curvesession.py) is opened
with either side's short-term key from the key log, and the mc0 messages inside are checked;
bad key log lines and a key log that matches nothing."""

from __future__ import annotations

import json

import pytest

from conformance.cli import main
from tests.trace import curvesession as cs
from tests.trace.pcapfiles import CLIENT, SERVER, conversation, data, syns, write_pcap

# mc0 (docs/profiles/mc0.md): '' FROBNICATE ID 7, answered by ERROR ID 7 MESSAGE ..., then by an
# OK ID 7 too: one answer too many (mc0-id-reply), visible only inside the boxes
REQUEST = [b"", b"FROBNICATE", b"ID", b"7"]
ERROR = [b"", b"ERROR", b"ID", b"7", b"MESSAGE", b"unknown verb"]
SECOND_OK = [b"", b"OK", b"ID", b"7"]


def _session(tmp_path, welcome=None, name="curve.pcap", replies=None):
    """The exchange in the order a client waits for: greetings and HELLO, WELCOME, INITIATE,
    READY, the request, the broker's two answers."""
    welcome = welcome or cs.welcome()
    client = [cs.greeting(False) + cs.hello(), cs.initiate(), cs.messages("client", REQUEST, 3)]
    server = [cs.greeting(True) + welcome, cs.ready(),
              replies if replies is not None else cs.messages("server", ERROR, 2) + cs.messages("server", SECOND_OK, 8)]
    segments, at = [*syns()], {CLIENT: 0, SERVER: 0}
    for c, s in zip(client, server):
        for side, payload in ((CLIENT, c), (SERVER, s)):
            segments.append(data(side, at[side], payload))
            at[side] += len(payload)
    return write_pcap(tmp_path / name, segments)


def _keylog(tmp_path, *lines, name="keys.txt"):
    path = tmp_path / name
    path.write_text("# CURVE key log v1: ROLE TRANSIENT_PUBLIC TRANSIENT_SECRET SERVER_PUBLIC (hex)\n"
                    + "".join(line + "\n" for line in lines))
    return path


def _records(tmp_path, capsys, pcap, *keylogs):
    out = tmp_path / "records.jsonl"
    args = ["check-trace", "--port", "9000=mc0", str(pcap), "--records", str(out)]
    for keylog in keylogs:
        args += ["--keylog", str(keylog)]
    code = main(args)
    capsys.readouterr()
    return code, [json.loads(line) for line in out.read_text().splitlines()]


def _findings(records):
    return [(r["requirementId"], r["sender"]) for r in records if r["grade"] != "INFORMATIONAL"]


def _notes(records):
    return [r["message"] for r in records if r["grade"] == "INFORMATIONAL"]


VOUCH_UNCHECKED = "the vouch in the INITIATE (Box[C' + S](C->S')) is encrypted and not checked"


def _box_notes(records):
    """The notes but the one on the vouch (a client's c' does not open it: it needs the server's s')."""
    return [n for n in _notes(records) if VOUCH_UNCHECKED not in n]


def test_without_a_key_log_the_messages_are_not_checkable(tmp_path, capsys):
    code, records = _records(tmp_path, capsys, _session(tmp_path))
    assert code == 0 and _findings(records) == []
    notes = _notes(records)
    assert len(notes) == 2 and all("not checkable without the session keys" in n for n in notes)
    assert any("client from byte" in n and ": 4 frames" in n for n in notes)  # FROBNICATE's 4 MESSAGEs


@pytest.mark.parametrize("role,public,secret", [("CLIENT", cs.C_T, cs.CLIENT_T_SECRET),
                                                ("SERVER", cs.S_T, cs.SERVER_T_SECRET)])
def test_either_sides_short_term_key_opens_the_messages(tmp_path, capsys, role, public, secret):
    keylog = _keylog(tmp_path, cs.key_line(role, public, secret))
    code, records = _records(tmp_path, capsys, _session(tmp_path), keylog)
    assert _findings(records) == [("mc0-id-reply", "server")]  # the second answer to ID 7
    assert "OK ID b'7'" in [r["message"] for r in records if r["grade"] == "FAILED"][0]
    assert code == 1 and _box_notes(records) == []
    # the vouch Box[C' + S](C->S') opens with s' (or the client's long-term secret), never with c'
    vouch = [n for n in _notes(records) if VOUCH_UNCHECKED in n]
    assert len(vouch) == (role == "CLIENT") and all("holds no s' for this connection's S'" in n for n in vouch)


def test_a_key_log_that_matches_nothing_says_so(tmp_path, capsys):
    other = cs.crypto_scalarmult_base(cs.OTHER_T_SECRET)
    keylog = _keylog(tmp_path, cs.key_line("CLIENT", other, cs.OTHER_T_SECRET),
                     cs.key_line("SERVER", other, cs.OTHER_T_SECRET))
    code, records = _records(tmp_path, capsys, _session(tmp_path), keylog)
    assert code == 0 and _findings(records) == []
    notes = _notes(records)
    assert len(notes) == 2 and all("no session key in the key log matched this connection" in n for n in notes)


def test_a_welcome_not_boxed_by_the_key_the_hello_was_for_is_a_finding(tmp_path, capsys):
    # a broker with another long-term key answered the HELLO boxed for S (RFC 26: the server opens
    # the HELLO box with its own key first); under S the WELCOME does not open
    wrong = _session(tmp_path, welcome=cs.welcome(signer_secret=bytes(range(200, 232))))
    keylog = _keylog(tmp_path, cs.key_line("CLIENT", cs.C_T, cs.CLIENT_T_SECRET))
    code, records = _records(tmp_path, capsys, wrong, keylog)
    assert code == 1 and _findings(records) == [("mc0-curve", "server")]
    assert any("not opened with the key log's key: the WELCOME did not open" in n for n in _notes(records))


def test_a_repeated_short_nonce_is_a_finding(tmp_path, capsys):
    # the ERROR's six MESSAGEs carry nonces 2-7; a NOOP boxed with nonce 5 again (RFC 26: the
    # short nonce is incremented for each command, a repeat would let a box be replayed)
    replies = cs.messages("server", ERROR, 2) + cs.messages("server", [b"", b"NOOP"], 5)
    keylog = _keylog(tmp_path, cs.key_line("CLIENT", cs.C_T, cs.CLIENT_T_SECRET))
    code, records = _records(tmp_path, capsys, _session(tmp_path, replies=replies), keylog)
    assert code == 1 and _findings(records) == [("mc0-curve", "server"), ("mc0-curve", "server")]
    assert "short nonce 5 after 7" in " ".join(r["message"] for r in records)


def test_a_message_box_that_does_not_open_is_a_finding_and_the_rest_a_note(tmp_path, capsys):
    replies = bytearray(cs.messages("server", ERROR, 2))
    replies[20] ^= 1  # inside the first MESSAGE's box (2 octets of frame header, 16 of name and nonce)
    keylog = _keylog(tmp_path, cs.key_line("SERVER", cs.S_T, cs.SERVER_T_SECRET))
    code, records = _records(tmp_path, capsys, _session(tmp_path, replies=bytes(replies)), keylog)
    assert code == 1 and _findings(records) == [("mc0-curve", "server")]
    assert "the MESSAGE box does not open" in " ".join(r["message"] for r in records)
    assert any("server from byte" in n and "a MESSAGE did not open (bad-box)" in n for n in _notes(records))


def test_a_frame_in_clear_after_the_handshake_is_a_finding(tmp_path, capsys):
    replies = bytearray(cs.messages("server", ERROR, 2))
    replies[40] ^= 0x20  # the second MESSAGE's name: "\x07MEsSAGE" is no MESSAGE command
    code, records = _records(tmp_path, capsys, _session(tmp_path, replies=bytes(replies)))
    assert code == 1 and _findings(records) == [("mc0-curve", "server")]
    assert "a message frame in clear after the CURVE handshake" in " ".join(r["message"] for r in records)


@pytest.mark.parametrize("line,problem", [
    ("CLIENT abc", "expected ROLE TRANSIENT_PUBLIC TRANSIENT_SECRET SERVER_PUBLIC, got 2 fields"),
    ("PEER " + " ".join([cs.C_T.hex(), cs.CLIENT_T_SECRET.hex(), cs.S.hex()]), "the role is CLIENT or SERVER"),
    ("CLIENT " + " ".join([cs.C_T.hex()[:-1] + "g", cs.CLIENT_T_SECRET.hex(), cs.S.hex()]),
     "the transient public key is not 64 hex digits"),
    ("SERVER " + " ".join([cs.C_T.hex(), cs.SERVER_T_SECRET.hex(), cs.S.hex()]),
     "the transient public key does not belong to the secret key"),
])
def test_a_malformed_key_log_line_names_file_and_line(tmp_path, capsys, line, problem):
    keylog = _keylog(tmp_path, "", cs.key_line("CLIENT", cs.C_T, cs.CLIENT_T_SECRET), line)
    assert main(["check-trace", "--port", "9000=mc0", str(_session(tmp_path)), "--keylog", str(keylog)]) == 2
    err = capsys.readouterr().err
    assert f"--keylog {keylog}:4: {problem}" in err, err
    assert "Traceback" not in err


def test_a_missing_key_log_is_a_usage_error(tmp_path, capsys):
    assert main(["check-trace", "--port", "9000=mc0", str(_session(tmp_path)),
                 "--keylog", str(tmp_path / "nope.keys")]) == 2
    assert f"{tmp_path / 'nope.keys'}: cannot read the key log" in capsys.readouterr().err


def test_the_key_log_is_readable_by_its_owner_only(tmp_path):
    from conformance.trace import keylog
    path = tmp_path / "run.pcapng.keys"
    path.write_text("old\n")
    path.chmod(0o644)  # an earlier file's mode is narrowed too
    parsed = keylog.parse_line(cs.key_line("SERVER", cs.S_T, cs.SERVER_T_SECRET), "test:1")
    assert keylog.write([parsed], path) == 1
    assert path.stat().st_mode & 0o777 == 0o600
    assert keylog.read([path]).servers  # and it reads back


def test_a_capture_without_curve_sessions_removes_an_earlier_key_log_beside_it(tmp_path):
    from conformance.trace import capture, keylog
    path = tmp_path / "run.pcapng"
    keylog.beside(path).write_text("# an earlier run's keys\n")
    recorder = capture.start()
    capture.stop()
    assert capture.write(recorder, path) == 0 and path.exists()
    assert not keylog.beside(path).exists()


def test_a_handshake_ended_by_a_zmtp_error_is_a_note_not_a_finding(tmp_path, capsys):
    # ZMTP 3.1 (RFC 37, "The ERROR Command"): a peer may end a security handshake that cannot
    # succeed with ERROR; here the broker answers the HELLO with %x05 "ERROR" + short string
    refusal = cs.command(b"\x05ERROR" + bytes([6]) + b"denied")
    segments = [*syns(), data(CLIENT, 0, cs.greeting(False) + cs.hello()),
                data(SERVER, 0, cs.greeting(True) + refusal)]
    pcap = write_pcap(tmp_path / "refused.pcap", segments)
    code, records = _records(tmp_path, capsys, pcap)
    assert code == 0 and _findings(records) == []
    assert any("ended the CURVE handshake with a ZMTP ERROR ('denied')" in n for n in _notes(records))


def test_a_boxed_message_past_the_checkers_limit_is_a_note_and_not_held(tmp_path, capsys, monkeypatch):
    # as the clear-text reader's max_frame: a peer sending MORE forever must not grow the checker
    # without bound; the limit is made small here (the ERROR's six parts are 27 octets in all, the request's four 13)
    from conformance.trace.rules import mc0
    monkeypatch.setattr(mc0, "MAX_MESSAGE", 16, raising=False)
    keylog = _keylog(tmp_path, cs.key_line("CLIENT", cs.C_T, cs.CLIENT_T_SECRET))
    code, records = _records(tmp_path, capsys, _session(tmp_path), keylog)
    assert code == 0 and _findings(records) == []  # the ERROR is not read, nor the OK after it
    assert any("server from byte" in n and "a message of more than 16 octets" in n for n in _notes(records))


@pytest.mark.parametrize("next_nonce,findings", [(3, 1), (2, 2)])  # then its nonce again: a repeat
def test_a_box_that_opens_with_reserved_flags_is_a_finding_not_an_unopened_box(tmp_path, capsys, next_nonce,
                                                                               findings):
    # RFC 26 MESSAGE: flags bit 0 MORE, bit 1 COMMAND, the others reserved; this box opens
    from nacl.bindings import crypto_box
    n = cs.short(2)
    body = b"\x07MESSAGE" + n + crypto_box(b"\x80" + b"x", b"CurveZMQMESSAGES" + n, cs.C_T, cs.SERVER_T_SECRET)
    replies = b"\x00" + bytes([len(body)]) + body + cs.messages("server", ERROR, next_nonce)
    keylog = _keylog(tmp_path, cs.key_line("CLIENT", cs.C_T, cs.CLIENT_T_SECRET))
    code, records = _records(tmp_path, capsys, _session(tmp_path, replies=replies), keylog)
    assert code == 1 and _findings(records) == [("mc0-curve", "server")] * findings
    messages = " ".join(r["message"] for r in records)
    assert "reserved MESSAGE flag bits in 0x80" in messages
    assert ("short nonce 2 after 2" in messages) == (findings == 2)
    assert _box_notes(records) == []  # it was opened: not among the boxes the key log did not open


# -- the vouch (RFC 26: Box[C' + S](C->S') in INITIATE, which the server checks before READY) ------

def _handshake(tmp_path, vouched=cs.C_T, answer=None, name="vouch.pcap"):
    """HELLO, WELCOME, an INITIATE whose vouch names ``vouched``, then ``answer`` (READY unless given)."""
    answer = cs.ready() if answer is None else answer
    moves = [("client", cs.greeting(False) + cs.hello()), ("server", cs.greeting(True) + cs.welcome()),
             ("client", cs.initiate(vouched))]
    if answer:
        moves.append(("server", answer))
    return write_pcap(tmp_path / name, conversation(CLIENT, SERVER, moves))


FORGED = cs.crypto_scalarmult_base(cs.OTHER_T_SECRET)  # a key of no session here, vouched for instead of C'
BOTH_KEYS = (cs.key_line("CLIENT", cs.C_T, cs.CLIENT_T_SECRET), cs.key_line("SERVER", cs.S_T, cs.SERVER_T_SECRET))


@pytest.mark.parametrize("lines", [BOTH_KEYS, BOTH_KEYS[1:]])
def test_a_ready_after_a_forged_vouch_is_the_brokers_finding(tmp_path, capsys, lines):
    # the server's s' (and the C the INITIATE carries) opens the vouch: it names another key than C'
    code, records = _records(tmp_path, capsys, _handshake(tmp_path, vouched=FORGED), _keylog(tmp_path, *lines))
    assert code == 1 and _findings(records) == [("mc0-curve", "client"), ("mc0-curve", "server")]
    failed = [r["message"] for r in records if r["grade"] == "FAILED"]
    assert "INITIATE: the vouch holds" in failed[0] and "READY after an INITIATE whose vouch" in failed[1]
    assert _notes(records) == []


@pytest.mark.parametrize("answer", [cs.command(b"\x05ERROR" + bytes([3]) + b"400"), b""])  # or just the close
def test_a_forged_vouch_refused_is_the_clients_finding_only(tmp_path, capsys, answer):
    code, records = _records(tmp_path, capsys, _handshake(tmp_path, vouched=FORGED, answer=answer),
                             _keylog(tmp_path, *BOTH_KEYS))
    assert code == 1 and _findings(records) == [("mc0-curve", "client")]


def test_a_ready_after_the_clients_own_vouch_is_no_finding(tmp_path, capsys):
    code, records = _records(tmp_path, capsys, _handshake(tmp_path), _keylog(tmp_path, *BOTH_KEYS))
    assert code == 0 and _findings(records) == [] and _notes(records) == []


def test_without_the_servers_short_term_key_the_vouch_is_a_note_never_a_finding(tmp_path, capsys):
    # an external broker's capture: the suite logs its own c' only, which cannot open the vouch
    code, records = _records(tmp_path, capsys, _handshake(tmp_path, vouched=FORGED),
                             _keylog(tmp_path, BOTH_KEYS[0]))
    assert code == 0 and _findings(records) == []
    assert [n for n in _notes(records) if VOUCH_UNCHECKED in n and "holds no s'" in n]


# -- a replayed MESSAGE (RFC 26: short nonces increase; the profile FAILs a broker that serves a replay) --

NOOP = [b"", b"NOOP", b"ID", b"once"]
OK_ONCE = [b"", b"OK", b"ID", b"once"]


def _replay(tmp_path, capsys, after, request=NOOP, broker_closes_first=False):
    """The handshake, ``request`` in MESSAGEs 3-6 answered OK, then the same boxes again, then ``after``."""
    boxes = cs.messages("client", request, 3)
    moves = [("client", cs.greeting(False) + cs.hello()), ("server", cs.greeting(True) + cs.welcome()),
             ("client", cs.initiate()), ("server", cs.ready()), *after(boxes)]
    segments = conversation(CLIENT, SERVER, moves)
    if broker_closes_first:
        segments[-2:] = segments[-1:-3:-1]
    return _records(tmp_path, capsys, write_pcap(tmp_path / "replay.pcap", segments), _keylog(tmp_path, *BOTH_KEYS))


def test_an_ok_answering_a_replayed_message_is_the_brokers_finding(tmp_path, capsys):
    code, records = _replay(tmp_path, capsys, lambda boxes: [
        ("client", boxes), ("server", cs.messages("server", OK_ONCE, 2)),
        ("client", boxes), ("server", cs.messages("server", OK_ONCE, 6))])
    found = _findings(records)
    assert code == 1 and found == [("mc0-curve", "client")] * 4 + [("mc0-curve", "server")]  # four replayed boxes
    server = [r["message"] for r in records if r["grade"] == "FAILED" and r["sender"] == "server"]
    assert "OK ID b'once' answers a MESSAGE the client replayed" in server[0]


def test_a_replay_the_broker_refuses_is_the_clients_finding_only(tmp_path, capsys):
    code, records = _replay(tmp_path, capsys, lambda boxes: [
        ("client", boxes), ("server", cs.messages("server", OK_ONCE, 2)), ("client", boxes)],
        broker_closes_first=True)
    assert code == 1 and _findings(records) == [("mc0-curve", "client")] * 4


def test_the_answer_to_the_first_copy_after_the_replay_is_no_finding(tmp_path, capsys):
    # the replay goes out before the first copy's OK: that one OK is the first copy's
    code, records = _replay(tmp_path, capsys, lambda boxes: [
        ("client", boxes + boxes), ("server", cs.messages("server", OK_ONCE, 2))], broker_closes_first=True)
    assert code == 1 and _findings(records) == [("mc0-curve", "client")] * 4


@pytest.mark.parametrize("replayed", [True, False])
def test_a_broker_closing_on_a_replay_owes_no_error(tmp_path, capsys, replayed):
    # a malformed message (odd header count) is owed an ERROR, but its replay right behind it lets
    # the broker end the connection (a broker aborting on the replay may drop what it had queued);
    # without the replay (the next message boxed with a fresh nonce) the close owes the ERROR
    malformed = [b"", b"FROB", b"X-A"]
    again = cs.messages("client", malformed, 3 if replayed else 6)
    code, records = _replay(tmp_path, capsys, lambda boxes: [("client", boxes + again)],
                            request=malformed, broker_closes_first=True)
    server = [f for f in _findings(records) if f[1] == "server"]
    assert server == ([] if replayed else [("mc0-message-structure", "server")])
