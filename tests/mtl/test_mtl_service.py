"""The sans-IO control session and broker: replies, leases, fan-out, confirms, timers."""

from __future__ import annotations

import base64

import pytest

from reference_impl.mtl.codec import (
    Confirm, Content, Dismiss, Lease, Ping, Pong, Reject, Response, Summon, decode_data, encode_data,
)
from reference_impl.mtl.control import Request
from reference_impl.mtl.sasl import ScramClientExchange
from reference_impl.mtl.service import Broker, BrokerOptions

OPEN = {"protocol": {"name": "MTL", "version": 1}, "virtual-host": "test-env"}
PLAIN = {"mechanism": "PLAIN", "response": base64.b64encode(b"\0alice\0wonderland").decode()}


def req(command, body):
    return Request(command, body)


def logged_in(broker, profile="test", now=0.0):
    session = broker.control_session()
    assert session.handle(req("Connection.Open", OPEN), now).code == 401
    assert session.handle(req("Connection.Authorize", PLAIN), now).code == 201
    assert session.handle(req("Connection.Profile", {"profile": profile}), now).code == 200
    return session


def lease(broker, session, kind="Writer", confirm="none", resources=("resource",)):
    reply = session.handle(req(f"Connection.{kind}", {"resources": list(resources), "confirm": confirm}), 0.0)
    assert reply.code == 202, reply
    assert isinstance(reply.body["port"], int)
    return reply.body["lease"]


class Flow:
    """One data connection on the broker."""

    def __init__(self, broker, key, now=0.0):
        self.broker, self.key = broker, key
        broker.data_open(key, now)

    def send(self, command, now=0.0):
        out = self.broker.data_message(self.key, encode_data(command), now)
        return out

    def got(self, out):
        return [decode_data(frames) for key, frames in out.sends if key == self.key]


# -- control ------------------------------------------------------------------------

def test_control_happy_path_and_codes() -> None:
    broker = Broker(data_port=5556)
    session = broker.control_session()
    assert session.handle(req("Connection.Profile", {"profile": "test"}), 0).code == 403  # before Open
    assert session.handle(req("Connection.Nope", {}), 0).code == 400
    reply = session.handle(req("Connection.Open", OPEN), 0)
    assert reply.code == 401 and reply.body["mechanisms"] == ["PLAIN", "SCRAM-SHA-256"]
    assert session.handle(req("Connection.Profile", {"profile": "test"}), 0).code == 401  # not authenticated
    reply = session.handle(req("Connection.Authorize", PLAIN), 0)
    assert reply.code == 201 and reply.body["profiles"] == ["test", "confirm-test"]
    assert session.handle(req("Connection.Writer", {"resources": [], "confirm": "none"}), 0).code == 403  # no profile
    assert session.handle(req("Connection.Profile", {"profile": "nope"}), 0).code == 400
    assert session.handle(req("CONNECTION.PROFILE", {"profile": "TEST"}), 0).code == 200
    assert session.handle(req("Connection.Reader", {"resources": ["resource"], "confirm": "full"}), 0).code == 501
    assert session.handle(req("Connection.Reader", {"resources": ["other"], "confirm": "none"}), 0).code == 400
    assert session.handle(req("Connection.Reader", {"resources": "resource", "confirm": "none"}), 0).code == 400
    assert session.handle(req("Connection.Reader", {"resources": [], "confirm": "maybe"}), 0).code == 400
    reply = session.handle(req("Connection.Reader", {"resources": [], "confirm": "none"}), 0)
    assert reply.code == 202 and reply.body["port"] == 5556 and reply.body["lease"] in broker.leases


@pytest.mark.parametrize("body", [
    {"protocol": {"name": "MTL", "version": 2}}, {"protocol": {"name": "AMQP", "version": 1}},
    {"protocol": {"name": "MTL", "version": True}}, {"protocol": "MTL"}, [], {"protocol": {"name": "MTL", "version": 1},
                                                                              "virtual-host": 7},
])
def test_open_refuses_bad_bodies(body) -> None:
    assert Broker().control_session().handle(req("Connection.Open", body), 0).code == 400


def test_anonymous_server_and_reauthentication() -> None:
    broker = Broker(BrokerOptions(anonymous=True))
    session = broker.control_session()
    assert session.handle(req("Connection.Open", OPEN), 0).code == 201
    assert session.handle(req("Connection.Profile", {"profile": "test"}), 0).code == 200
    assert session.handle(req("Connection.Authorize", PLAIN), 0).code == 201


def test_failed_authorize_then_success() -> None:
    session = Broker().control_session()
    session.handle(req("Connection.Open", OPEN), 0)
    bad = {"mechanism": "PLAIN", "response": base64.b64encode(b"\0alice\0nope").decode()}
    assert session.handle(req("Connection.Authorize", bad), 0).code == 401
    assert session.handle(req("Connection.Authorize", {"mechanism": "KERBEROS_V4", "response": ""}), 0).code == 401
    assert session.handle(req("Connection.Authorize", {"mechanism": "PLAIN", "response": "!!"}), 0).code == 400
    assert session.handle(req("Connection.Authorize", PLAIN), 0).code == 201


def test_scram_through_the_402_cycle() -> None:
    session = Broker().control_session()
    session.handle(req("Connection.Open", OPEN), 0)
    client = ScramClientExchange("alice", "wonderland")
    first = session.handle(req("Connection.Authorize", {"mechanism": "scram-sha-256",
                                                        "response": base64.b64encode(client.client_first()).decode()}), 0)
    assert first.code == 402 and first.body["mechanism"] == "SCRAM-SHA-256"
    final = client.client_final(base64.b64decode(first.body["challenge"]))
    second = session.handle(req("Connection.Authorize", {"mechanism": "SCRAM-SHA-256",
                                                         "response": base64.b64encode(final).decode()}), 0)
    assert second.code == 402 and client.verify_server_final(base64.b64decode(second.body["challenge"]))
    assert session.handle(req("Connection.Authorize", {"mechanism": "SCRAM-SHA-256", "response": ""}), 0).code == 201
    assert session.user == "alice"


def test_authentication_expires_with_auth_ttl() -> None:
    broker = Broker(BrokerOptions(auth_ttl=10.0))
    session = logged_in(broker, now=0.0)
    assert session.handle(req("Connection.Profile", {"profile": "test"}), 9.0).code == 200
    reply = session.handle(req("Connection.Profile", {"profile": "test"}), 10.5)
    assert reply.code == 401 and "PLAIN" in reply.body["mechanisms"]
    assert session.handle(req("Connection.Authorize", PLAIN), 11.0).code == 201
    assert session.handle(req("Connection.Writer", {"resources": [], "confirm": "none"}), 11.0).code == 202


# -- data -------------------------------------------------------------------------------

def test_before_lease_and_lease_ownership() -> None:
    broker = Broker()
    token = lease(broker, logged_in(broker))
    a, b = Flow(broker, "a"), Flow(broker, "b")
    assert a.got(a.send(Summon(1, "resource"))) == [Response(1, 403)]
    assert a.got(a.send(Dismiss(2, "resource"))) == [Response(2, 403)]
    assert a.got(a.send(Content(3, "resource", (), b"x"))) == [Response(3, 403)]
    assert a.got(a.send(Confirm(1, True))) == []
    assert a.got(a.send(Reject(1, True, True))) == []
    assert a.got(a.send(Ping())) == [Pong()]
    assert a.got(a.send(Lease(4, "unknown"))) == [Response(4, 403)]
    assert a.got(a.send(Lease(5, token))) == [Response(5, 200)]
    assert a.got(a.send(Lease(6, token))) == [Response(6, 200)]
    assert b.got(b.send(Lease(1, token))) == [Response(1, 403)]
    other = lease(broker, logged_in(broker))
    assert a.got(a.send(Lease(7, other))) == [Response(7, 403)]  # one lease per connection


def test_a_lease_dies_with_its_data_connection() -> None:
    """Regression (tests/load/test_load_mtl.py): every grant ever presented stayed in ``leases``, its
    ``owner`` pinning the closed connection's key (the server's Peer, with all it holds) forever."""
    broker = Broker()
    session = logged_in(broker)
    tokens = [lease(broker, session), lease(broker, session)]
    a, b = Flow(broker, "a"), Flow(broker, "b")
    assert a.got(a.send(Lease(1, tokens[0]))) == [Response(1, 200)]
    assert b.got(b.send(Lease(1, tokens[1]))) == [Response(1, 200)]
    broker.data_close("a")
    out = broker.tick(broker.options.heartbeat_timeout + 1.0)  # b is silent past the heartbeat timeout
    assert out.closes == ["b"]
    assert broker.leases == {} and broker.sessions == {}
    c = Flow(broker, "c")
    assert c.got(c.send(Lease(1, tokens[0]))) == [Response(1, 403)]  # as when its owner was alive


def test_fan_out_and_dismiss() -> None:
    broker = Broker()
    session = logged_in(broker)
    w, r1, r2 = Flow(broker, "w"), Flow(broker, "r1"), Flow(broker, "r2")
    w.send(Lease(1, lease(broker, session)))
    r1.send(Lease(1, lease(broker, session, "Reader")))
    r2.send(Lease(1, lease(broker, session, "Reader", resources=())))
    assert r1.got(r1.send(Summon(2, "resource"))) == [Response(2, 200)]
    assert r1.got(r1.send(Summon(3, "resource"))) == [Response(3, 400)]
    assert r2.got(r2.send(Summon(2, "resource"))) == [Response(2, 200)]
    assert w.got(w.send(Summon(2, "resource"))) == [Response(2, 403)]
    out = w.send(Content(9, "", (("k", "v"),), b"hi"))
    assert r1.got(out) == [Content(1, "resource", (("k", "v"),), b"hi")]
    assert r2.got(out) == [Content(1, "resource", (("k", "v"),), b"hi")]
    assert w.got(out) == []  # confirm none: no Confirm
    assert r1.got(r1.send(Dismiss(4, "resource"))) == [Response(4, 200)]
    assert r1.got(r1.send(Dismiss(5, "resource"))) == [Response(5, 400)]
    out = w.send(Content(10, "resource", (), b"later"))
    assert r1.got(out) == [] and r2.got(out) == [Content(2, "resource", (), b"later")]
    assert r1.got(r1.send(Content(11, "resource", (), b""))) == [Response(11, 403)]
    assert w.got(w.send(Content(12, "other", (), b""))) == [Response(12, 400)]


def confirm_setup(broker):
    session = logged_in(broker, "confirm-test")
    w, r = Flow(broker, "w"), Flow(broker, "r")
    w.send(Lease(1, lease(broker, session, "Writer", "full")))
    r.send(Lease(1, lease(broker, session, "Reader", "full")))
    r.send(Summon(2, "resource"))
    return w, r


def test_writer_confirmed_and_reader_redelivery() -> None:
    broker = Broker(BrokerOptions(redeliver_after=2.0, heartbeat_interval=None, heartbeat_timeout=None))
    w, r = confirm_setup(broker)
    out = w.send(Content(41, "resource", (), b"one"), now=0.0)
    assert w.got(out) == [Confirm(41, False)]
    w.send(Content(42, "resource", (), b"two"), now=0.1)
    assert r.got(broker.tick(1.9)) == []
    r.send(Confirm(1, False), now=1.95)
    assert r.got(broker.tick(2.15)) == [Content(3, "resource", (), b"two")]
    r.send(Confirm(3, True), now=2.2)
    assert r.got(broker.tick(10.0)) == []


def test_confirm_multiple_reject_recycle_and_unknown() -> None:
    broker = Broker(BrokerOptions(redeliver_after=2.0, heartbeat_interval=None, heartbeat_timeout=None))
    w, r = confirm_setup(broker)
    for i, body in enumerate([b"a", b"b", b"c"]):
        w.send(Content(i, "resource", (), body), now=0.0)
    assert r.got(r.send(Confirm(99, True))) == []  # never sent: ignored
    assert set(broker.sessions["r"].pending) == {1, 2, 3}
    r.send(Confirm(2, True))
    assert set(broker.sessions["r"].pending) == {3}
    out = r.send(Reject(3, False, True), now=0.5)
    assert r.got(out) == [Content(4, "resource", (), b"c")]
    out = r.send(Reject(4, True, False), now=0.6)
    assert r.got(out) == [] and not broker.sessions["r"].pending


def test_dismiss_drops_pending() -> None:
    broker = Broker(BrokerOptions(redeliver_after=1.0, heartbeat_interval=None, heartbeat_timeout=None))
    w, r = confirm_setup(broker)
    w.send(Content(1, "resource", (), b"x"))
    r.send(Dismiss(3, "resource"))
    assert r.got(broker.tick(5.0)) == []


def test_heartbeats_and_dead_peer() -> None:
    broker = Broker(BrokerOptions(heartbeat_interval=1.0, heartbeat_timeout=3.0))
    a = Flow(broker, "a", now=0.0)
    assert broker.next_deadline() == 1.0
    assert a.got(broker.tick(1.0)) == [Ping()]
    assert a.got(broker.tick(1.5)) == []
    assert a.got(broker.tick(2.0)) == [Ping()]
    a.send(Pong(), now=2.5)
    out = broker.tick(5.0)
    assert "a" not in out.closes
    out = broker.tick(5.6)
    assert out.closes == ["a"] and "a" not in broker.sessions


def test_unclaimed_leases_are_bounded_oldest_first() -> None:
    """A client that asks for leases and never presents them cannot grow the broker without end."""
    broker = Broker(BrokerOptions(max_unclaimed_leases=3))
    session = logged_in(broker)
    tokens = [lease(broker, session) for _ in range(5)]
    assert len(broker.leases) == 3
    flows = [Flow(broker, key) for key in "abcde"]
    codes = [flow.got(flow.send(Lease(1, token)))[0].code for flow, token in zip(flows, tokens)]
    assert codes == [403, 403, 200, 200, 200]
    more = [lease(broker, session) for _ in range(3)]  # presented leases no longer count against the bound
    assert all(t in broker.leases for t in tokens[2:] + more)
