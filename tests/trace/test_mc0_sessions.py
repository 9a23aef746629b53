"""mc0 across connections (conformance/trace/sessions/mc0.py) on captures built by hand: a PUT
that reaches one subscriber and not another (mc0-put-subscribers), and one server short-term key
S' in the WELCOMEs of two connections (mc0-curve), with the legitimate variants that must give
nothing."""

from __future__ import annotations

from nacl.utils import random as random_bytes

from conformance.trace.check import check_file
from conformance.trace.keylog import KeyLog, SessionKey
from conformance.trace.sessions import Sessions
from reference_impl.mc0 import testkeys
from reference_impl.zmtp import curve
from tests.trace.pcapfiles import conversation, write_pcap

BROKER = ("127.0.0.1", 9000)


def _greeting(as_server: bool, mechanism: bytes = b"NULL") -> bytes:
    # RFC 23: signature, version 3.0, mechanism, as-server, filler
    return b"\xff" + bytes(8) + b"\x7f" + b"\x03\x00" + mechanism.ljust(20, b"\0") + bytes([as_server]) + bytes(31)


def _command(body: bytes) -> bytes:
    return bytes([0x04, len(body)]) + body  # RFC 23: COMMAND flag, short size


# RFC 23: NULL's READY command with the Socket-Type property
READY = _command(b"\x05READY" + b"\x0bSocket-Type" + b"\x00\x00\x00\x06DEALER")


def _message(parts: list[bytes]) -> bytes:
    """A ZMTP message: each part a short frame, MORE on all but the last."""
    return b"".join(bytes([0x01 if i < len(parts) - 1 else 0, len(part)]) + part for i, part in enumerate(parts))


def _findings(path, keys=None) -> list[tuple[str, str, str]]:
    """(requirement, sender, connection) of the session checks (NULL's own mc0-curve findings aside)."""
    result = check_file(path, {}, "mc0", {}, keys)
    assert result.problems == []
    sessions = Sessions()
    sessions.add(str(path), result.facts)
    return [(f.requirement, f.sender, f.connection) for _, f in sessions.findings()]


# -- a PUT fanned out to one subscriber of two --------------------------------------------------

HEAD = [("client", _greeting(False) + READY), ("server", _greeting(True) + READY)]
PUT = [b"", b"PUT", b"TOPIC", b"news", b"", b"hello"]
DELIVERY = [b"", b"MESSAGE", b"TOPIC", b"news", b"", b"hello"]


def _sub(request_id: bytes) -> list[bytes]:
    return [b"", b"SUB", b"ID", request_id, b"", b"news"]


def _ok(request_id: bytes) -> list[bytes]:
    return [b"", b"OK", b"ID", request_id]


def _fan_out(tmp_path, name="c.pcap", *, second_gets_it=False, second_ends=4.0, second_before=(),
             second_ok_at=1.2, with_sub=(), publisher_after=(), publisher_ends=4.0, with_publisher=True):
    """main and second subscribe to news (OK at 1.1 and ``second_ok_at``), the publisher PUTs at
    1.5 and main gets it at 1.6; second gets it at 1.7 if ``second_gets_it``.  ``*_ends``: when
    the connection's FINs come (seconds from 1000); ``second_before``: second's messages before its
    SUB, ``with_sub`` after it (before its OK); ``publisher_after``: what the broker sends the publisher after the PUT (at 1.55)."""
    timed: list[tuple[float, tuple]] = []

    def connection(port, moves, ends):
        segments = conversation(("127.0.0.1", port), BROKER, HEAD + [(side, _message(m)) for _, side, m in moves],
                                start=port)
        times = [1.0 + i / 1000 for i in range(4)] + [t for t, _, _ in moves] + [ends, ends + 0.001]
        timed.extend(zip(times, segments))

    connection(41001, [(1.05, "client", _sub(b"s1")), (1.1, "server", _ok(b"s1")), (1.6, "server", DELIVERY)], 4.0)
    second = [(1.02 + i / 1000, side, m) for i, (side, m) in enumerate(second_before)]
    second += [(1.15, "client", _sub(b"s2")), *[(1.16, "client", m) for m in with_sub],
               (second_ok_at, "server", _ok(b"s2"))]
    if second_gets_it:
        second.append((1.7, "server", DELIVERY))
    connection(41002, second, second_ends)
    if with_publisher:
        connection(41003, [(1.5, "client", PUT)] + [(1.55, "server", m) for m in publisher_after], publisher_ends)
    timed.sort(key=lambda t: t[0])
    return write_pcap(tmp_path / name, [s for _, s in timed], times=[1000 + t for t, _ in timed])


SECOND = "127.0.0.1:41002 -> 127.0.0.1:9000"


def test_a_put_delivered_to_one_subscriber_and_not_another_is_a_finding(tmp_path):
    assert _findings(_fan_out(tmp_path)) == [("mc0-put-subscribers", "server", SECOND)]
    assert _findings(_fan_out(tmp_path, second_gets_it=True)) == []


def test_a_subscriber_the_capture_does_not_prove_owed_the_put_is_not_judged(tmp_path):
    # the SUB's OK came after the PUT was sent: the PUT may have come first
    assert _findings(_fan_out(tmp_path, second_ok_at=1.51)) == []
    # the subscriber's connection ended 1.5 s after the PUT, less than the window (2 s): it may still come
    assert _findings(_fan_out(tmp_path, second_ends=3.0)) == []
    # a subscriber that asked for a TTL may be found absent when quiet (its subscriptions dropped)
    ttl = [[b"", b"CONNECT", b"VERSION", b"0.3", b"TTL", b"100000"]]
    assert _findings(_fan_out(tmp_path, second_before=[("client", m) for m in ttl])) == []
    # one that sent a message that does not decode: the broker keeps serving everyone *else*
    assert _findings(_fan_out(tmp_path, second_before=[("client", [b"", b"NOOP", b"ID"])])) == []
    # the OK may be another request's: a NOOP with the SUB's ID was waiting too
    assert _findings(_fan_out(tmp_path, with_sub=[[b"", b"NOOP", b"ID", b"s2"]])) == []


def test_a_put_the_capture_does_not_prove_the_broker_read_is_not_judged(tmp_path):
    # the publisher's connection is not in the capture: main's MESSAGE may be another publisher's
    assert _findings(_fan_out(tmp_path, with_publisher=False)) == []
    # the broker refused the PUT (an ERROR): main's MESSAGE was another's
    error = [b"", b"ERROR", b"MESSAGE", b"refused"]
    assert _findings(_fan_out(tmp_path, publisher_after=[error])) == []
    # the publisher closed right after its PUT: the broker may never have read it
    assert _findings(_fan_out(tmp_path, publisher_ends=1.6)) == []


# -- one server short-term key S' for two connections --------------------------------------------

SERVER_KEY = testkeys.SERVER


def _curve_connection(port: int, client_transient: curve.KeyPair, server_transient: curve.KeyPair):
    """Greetings, HELLO (boxed for the test server key) and the broker's WELCOME giving S'."""
    hello = curve.encode_hello(client_transient, SERVER_KEY.public, 1)
    cookie = curve.make_cookie(random_bytes(32), random_bytes(16), client_transient.public, server_transient.secret)
    welcome = curve.encode_welcome(SERVER_KEY.secret, client_transient.public, random_bytes(16),
                                   server_transient.public, cookie)
    return conversation(("127.0.0.1", port), BROKER, [
        ("client", _greeting(False, b"CURVE")), ("server", _greeting(True, b"CURVE")),
        ("client", _command(hello)), ("server", _command(welcome))], start=port)


def _transients(tmp_path, pairs, name="curve.pcap"):
    """One connection per (C', S') pair, one after the other; the key log holds each client's key."""
    keys, segments = KeyLog(), []
    for i, (client_transient, server_transient) in enumerate(pairs):
        keys.add(SessionKey("client", client_transient.public, client_transient.secret, SERVER_KEY.public))
        segments += _curve_connection(41001 + i, client_transient, server_transient)
    return _findings(write_pcap(tmp_path / name, segments), keys)


def test_one_server_short_term_key_in_two_connections_is_a_finding(tmp_path):
    fixed = curve.KeyPair.generate()
    c1, c2 = curve.KeyPair.generate(), curve.KeyPair.generate()
    assert _transients(tmp_path, [(c1, fixed), (c2, fixed)]) == [
        ("mc0-curve", "server", "127.0.0.1:41002 -> 127.0.0.1:9000")]
    assert _transients(tmp_path, [(c1, curve.KeyPair.generate()), (c2, curve.KeyPair.generate())]) == []


def test_one_hello_answered_twice_with_one_key_is_not_judged(tmp_path):
    # the same C' twice: one connection captured twice, or a HELLO replayed; nothing to compare
    fixed, c1 = curve.KeyPair.generate(), curve.KeyPair.generate()
    assert _transients(tmp_path, [(c1, fixed), (c1, fixed)]) == []
