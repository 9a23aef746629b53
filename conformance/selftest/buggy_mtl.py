"""MTL servers with exactly one bug each, built from the reference by overriding one method.

    server = await BuggyMtlServer("content-after-dismiss").start()
    ... server.url ...
    await server.close()

``BuggyMtlServer(None)`` is the bug-free twin (the reference with the same timers);
``BuggyMtlServer(None, router_keeps_dead_peers_open=True)`` is a correct twin that, like a libzmq
ROUTER, forgets a dead data peer without closing its TCP connection.
"""

from __future__ import annotations

from dataclasses import replace

from reference_impl.common.errors import CodecError, ProtocolViolation
from reference_impl.mtl import control
from reference_impl.mtl.codec import Confirm, Ping, Pong, Reject, decode_data
from reference_impl.mtl.connection import ControlSession, LeaseGrant, Pending, Profile
from reference_impl.mtl.control import Reply
from reference_impl.mtl.sasl import SCRAM_SHA_256, b64decode, b64encode, canonical_mechanism
from reference_impl.mtl.server import MtlServer, Peer
from reference_impl.mtl.service import TEST_PROFILES, Broker, BrokerOptions
from reference_impl.zmtp.codec import COMMAND, MORE, Frame
from reference_impl.zmtp.commands import Metadata
from reference_impl.zmtp.connection import Connection, HandshakeComplete, Phase

# the timers of the adapter's ref_params, so scenario deadlines fit
TIMERS = dict(heartbeat_interval=1.0, heartbeat_timeout=2.5, redeliver_after=0.6)

BUGS = {
    "answers-ill-formed",      # replies 400 to control requests it cannot read (SHOULD drop them)
    "content-after-dismiss",   # Dismiss answered 200 but the resource stays summoned
    "ignores-multiple",        # Confirm multiple TRUE confirms only the sequence it names
    "skips-402",               # SCRAM: 201 Ready straight after the client-first message, no challenge
    "server-first-no-iterations",  # SCRAM: the server-first message leaves out its iteration count (i=)
    "server-final-in-201",     # SCRAM: server-final in an invented 201 field instead of a last 402
    "lease-shared",            # a lease already taken is granted again on another data connection
    "summon-twice-ok",         # a second Summon of a summoned resource is answered 200
    "confirm-full-on-test",    # the test profile grants confirm full instead of 501
    "port-as-string",          # 202 carries the port as a JSON string
    "profile-before-auth",     # after a 401 challenge, grants Connection.Profile to the unauthenticated client
    "case-sensitive-commands", # only the exact spelling Connection.Open etc. is known
    "no-dead-peer",            # never disconnects a silent data peer
    # hunt-zmtp additions
    "redeliver-drops-properties",  # confirm-test: a timed-out Content is sent again without its properties
    "confirms-none-writer",    # Content on a confirm none writer lease is confirmed all the same
    "redeliver-on-none-reader",  # Content on a confirm none reader lease is kept pending and sent again
    "failed-reauth-keeps-auth",  # a failed Authorize after 201 answers 401 but the session stays authenticated
    "reject-ignores-multiple",  # Reject multiple TRUE covers only the sequence it names
    "zmtp-3.1-only",           # refuses a ZMTP 3.0 peer (greeting minor version 0) on both endpoints
    "authorize-before-open",   # Connection.Authorize is served before Connection.Open (then Profile works, no Open ever)
    "confirm-multiple-exclusive",  # Confirm multiple TRUE covers the Contents before the sequence, not the sequence itself
    # hunt-mtl additions (a mutation hunt over the reference: bugs no case caught)
    "long-threshold-off-by-one",  # ZMTP: a frame of exactly 256 octets goes out in the short form (size octet 0)
    "fan-out-per-control-session",  # Content reaches only readers leased on the writer's own control connection
    "lease-reclaimable-after-close",  # a closed data connection's lease is released, not forgotten: it can be taken again
    "reject-multiple-lax-boolean",  # Reject's multiple octet: any non-zero value is read as TRUE (not ignored)
    "only-ping-pong-is-traffic",  # only Ping and Pong restart the dead-peer timer (other commands do not)
    "pings-once",              # an idle data peer gets one Ping per connection, never another
    "ping-timer-from-rx",      # the Ping clock runs from what it heard, not what it sent: a chatty peer is never pinged
    "confirm-multiple-unbounded",  # Confirm/Reject multiple naming a sequence never issued covers every pending one below it
    "accepts-incompatible-socket-type",  # ZMTP: the ROUTER serves a peer of any socket type (a PUB included)
}


class _IllFormedAnswered(Peer):
    def _on_request(self, frames, now):
        try:
            envelope, rest = control.split_envelope(frames)
            control.decode_request(rest)
        except CodecError:
            envelope = frames[:frames.index(b"") + 1] if b"" in frames else [b""]
            self.send(envelope + control.encode_reply(400))
            return
        super()._on_request(frames, now)


class _SkipsChallenge(ControlSession):
    def _authorize(self, request, now):
        body = request.body
        if isinstance(body, dict) and isinstance(body.get("mechanism"), str) \
                and canonical_mechanism(body["mechanism"]) == SCRAM_SHA_256:
            self._succeed("alice", now)
            return self._ready()
        return super()._authorize(request, now)


class _ServerFirstNoIterations(ControlSession):
    def _authorize(self, request, now):
        reply = super()._authorize(request, now)
        challenge = b64decode(reply.body.get("challenge", "")) if reply.code == 402 else b""
        if challenge.startswith(b"r="):  # the server-first (the server-final starts v=)
            kept = b",".join(a for a in challenge.split(b",") if not a.startswith(b"i="))
            return Reply(402, {**reply.body, "challenge": b64encode(kept)})
        return reply


class _ProfileBeforeAuth(ControlSession):
    def _profile(self, request, now):
        if self.state != "open":
            return super()._profile(request, now)
        self.state = "ready"  # the bug: Profile never asks whether the client authenticated
        try:
            return super()._profile(request, now)
        finally:
            self.state = "open"


class _ServerFinalIn201(ControlSession):
    def _authorize(self, request, now):
        reply = super()._authorize(request, now)
        sasl = self._sasl
        # RFC 5802: server-final is "v=<signature>", server-first "r=<nonce>,..."
        if reply.code == 402 and sasl is not None and b64decode(reply.body["challenge"]).startswith(b"v="):
            step = sasl.step(b"")  # acks itself instead of waiting for the client's empty response
            self._sasl = None
            self._succeed(step.user, now)
            return Reply(201, {**self._ready().body, "server-final": reply.body["challenge"]})
        return reply


class _PortAsString(ControlSession):
    def _lease(self, request, now):
        reply = super()._lease(request, now)
        if reply.code == 202:
            return Reply(202, {**reply.body, "port": str(reply.body["port"])})
        return reply


class _CaseSensitive(ControlSession):
    KNOWN = {"Connection.Open", "Connection.Authorize", "Connection.Profile", "Connection.Reader", "Connection.Writer"}

    def handle(self, request, now):
        if request.command not in self.KNOWN:
            return control.error_reply(400)
        return super().handle(request, now)


class _FailedReauthKeepsAuth(ControlSession):
    def _authorize(self, request, now):
        before = (self.state, self.user)
        reply = super()._authorize(request, now)
        if reply.code == 401 and before[0] == "ready":
            self.state, self.user = before  # the bug: the failed exchange does not undo the earlier success
        return reply


class _AuthorizeBeforeOpen(ControlSession):
    def handle(self, request, now):
        if self.state == "new" and request.key == control.AUTHORIZE:
            return self._authorize(request, now)  # the bug: the "Open first" check skips Authorize
        return super().handle(request, now)


class _Zmtp31OnlyConnection(Connection):
    def _begin_handshake(self, greeting, now):
        if greeting.minor != 1:
            raise ProtocolViolation("unsupported-version", f"ZMTP 3.{greeting.minor} is not 3.1")
        super()._begin_handshake(greeting, now)


class _Zmtp31OnlyPeer(Peer):
    def __init__(self, server, kind, reader, writer):
        super().__init__(server, kind, reader, writer)
        self.zmtp.__class__ = _Zmtp31OnlyConnection


class _LongThresholdConnection(Connection):
    def _write(self, frame: Frame) -> None:
        assert self.mechanism is not None
        wrapped = self.mechanism.wrap(frame)
        if len(wrapped.body) == 256:  # the bug: LONG only when size > 256, so 256 goes out short, size 256 & 0xFF
            flags = (MORE if wrapped.more else 0) | (COMMAND if wrapped.command else 0)
            self._out += bytes([flags, 0]) + wrapped.body
            return
        super()._write(frame)


class _AnySocketTypeConnection(Connection):
    def _complete_handshake(self, now: float) -> None:
        assert self.mechanism is not None and self.peer_greeting is not None
        metadata = self.mechanism.peer_metadata or Metadata()
        self.peer = HandshakeComplete(metadata, (self.peer_greeting.major, self.peer_greeting.minor),
                                      self.mechanism.peer_user)
        # the bug: the peer's Socket-Type is never checked against the ROUTER's partners
        self.phase = Phase.TRAFFIC
        if self.heartbeat_interval and self.peer.peer_version >= (3, 1):
            self._next_ping_at = now + self.heartbeat_interval
        self._events.append(self.peer)


class _AnySocketTypePeer(Peer):
    def __init__(self, server, kind, reader, writer):
        super().__init__(server, kind, reader, writer)
        self.zmtp.__class__ = _AnySocketTypeConnection


class _LongThresholdPeer(Peer):
    def __init__(self, server, kind, reader, writer):
        super().__init__(server, kind, reader, writer)
        self.zmtp.__class__ = _LongThresholdConnection


class BuggyBroker(Broker):
    def __init__(self, bug: str | None, options: BrokerOptions) -> None:
        super().__init__(options)
        self.bug = bug
        self._writing: LeaseGrant | None = None  # fan-out-per-control-session: the lease of the Content in hand

    def control_session(self) -> ControlSession:
        session_class = {"skips-402": _SkipsChallenge, "server-first-no-iterations": _ServerFirstNoIterations,
                         "server-final-in-201": _ServerFinalIn201,
                         "port-as-string": _PortAsString, "profile-before-auth": _ProfileBeforeAuth,
                         "case-sensitive-commands": _CaseSensitive,
                         "failed-reauth-keeps-auth": _FailedReauthKeepsAuth,
                         "authorize-before-open": _AuthorizeBeforeOpen}.get(self.bug or "", ControlSession)
        if self.bug == "fan-out-per-control-session":
            tagged: set[str] = set()  # the leases this control connection granted

            def grant(kind, profile, resources, confirm):
                port, token = self._grant(kind, profile, resources, confirm)
                tagged.add(token)
                self.leases[token].granted_with = tagged
                return port, token
            return session_class(self._control, grant)
        return session_class(self._control, self._grant)

    def data_message(self, key, frames, now):
        if self.bug == "reject-multiple-lax-boolean" and len(frames) == 2:
            header = bytes(frames[0])
            if len(header) == 11 and header[0] == 0x07 and header[9] not in (0, 1):
                frames = [header[:9] + b"\x01" + header[10:], frames[1]]  # the bug: non-zero read as TRUE
        session = self.sessions.get(key)
        before = session.last_rx if session is not None else None
        out = super().data_message(key, frames, now)
        if self.bug == "only-ping-pong-is-traffic" and session is not None:
            try:
                command = decode_data(frames)
            except CodecError:
                command = None
            if not isinstance(command, (Ping, Pong)):
                session.last_rx = before  # the bug: only heartbeats count as traffic
        return out

    def data_close(self, key):
        if self.bug == "lease-reclaimable-after-close":
            session = self.sessions.pop(key, None)
            if session is not None and session.lease is not None:
                session.lease.owner = None  # the bug: released for the next connection instead of forgotten
            return
        super().data_close(key)

    def _ping_due(self, s, now):
        if self.bug == "pings-once" and s.last_ping is not None:
            return False
        if self.bug == "ping-timer-from-rx" and self.options.heartbeat_interval is not None:
            last_heard = max(s.last_rx, s.last_ping if s.last_ping is not None else s.last_rx)
            return now >= last_heard + self.options.heartbeat_interval
        return super()._ping_due(s, now)

    def _on_command(self, s, cmd, now, out):
        if self.bug == "ignores-multiple" and isinstance(cmd, Confirm):
            cmd = Confirm(cmd.seq, False)
        if self.bug == "reject-ignores-multiple" and isinstance(cmd, Reject):
            cmd = Reject(cmd.seq, False, cmd.recycle)
        if self.bug == "confirm-multiple-unbounded" and isinstance(cmd, (Confirm, Reject)) and cmd.multiple \
                and s.lease is not None and s.lease.kind == "reader" and s.lease.confirm == "full" \
                and cmd.seq > s.last_issued and s.last_issued >= 1:
            cmd = replace(cmd, seq=s.last_issued)  # the bug: a sequence never issued covers everything below it
        if self.bug == "confirm-multiple-exclusive" and isinstance(cmd, Confirm) and cmd.multiple:
            if cmd.seq <= 1:
                return
            cmd = Confirm(cmd.seq - 1, True)
        super()._on_command(s, cmd, now, out)

    _in_tick = False

    def tick(self, now):
        self._in_tick = True
        try:
            return super().tick(now)
        finally:
            self._in_tick = False

    def _deliver_one(self, reader, resource, properties, body, now, out):
        if self._writing is not None and reader.lease is not None \
                and getattr(reader.lease, "granted_with", None) is not getattr(self._writing, "granted_with", None):
            return  # the bug: the writer's Content skips readers leased on another control connection
        if self.bug == "redeliver-drops-properties" and self._in_tick:
            properties = ()
        super()._deliver_one(reader, resource, properties, body, now, out)
        if self.bug == "redeliver-on-none-reader" and reader.lease is not None and reader.lease.confirm == "none":
            reader.pending[reader.last_issued] = Pending(resource, properties, body, now)

    def _content(self, s, cmd, now, out):
        self._writing = s.lease if self.bug == "fan-out-per-control-session" else None
        try:
            super()._content(s, cmd, now, out)
        finally:
            self._writing = None
        lease = s.lease
        if self.bug == "confirms-none-writer" and lease is not None and lease.kind == "writer" \
                and lease.confirm == "none":
            resource = cmd.resource or self._only_resource(lease)
            if resource is not None and lease.covers(resource):
                out.send(s.key, Confirm(cmd.seq, False))

    def _dismiss(self, s, resource):
        if self.bug == "content-after-dismiss":
            return 200 if resource in s.summoned else 400
        return super()._dismiss(s, resource)

    def _summon(self, s, resource):
        if self.bug == "summon-twice-ok" and resource in s.summoned:
            return 200
        return super()._summon(s, resource)

    def _take_lease(self, s, token):
        grant = self.leases.get(token)
        if self.bug == "lease-shared" and grant is not None and grant.owner is not None:
            s.lease = grant
            return 200
        return super()._take_lease(s, token)


class _RouterServer(MtlServer):
    """The broker has already forgotten a dead peer (its lease, its state); a ROUTER cannot close one
    peer's connection, so the TCP connection stays open and carries nothing more."""

    def deliver(self, out):
        out.closes.clear()
        super().deliver(out)


class BuggyMtlServer:
    def __init__(self, bug: str | None, router_keeps_dead_peers_open: bool = False) -> None:
        assert bug is None or bug in BUGS, bug
        self.bug = bug
        self.server_class = _RouterServer if router_keeps_dead_peers_open else MtlServer
        self.server: MtlServer | None = None
        self.url = ""

    async def start(self) -> "BuggyMtlServer":
        timers = dict(TIMERS)
        if self.bug == "no-dead-peer":
            timers["heartbeat_timeout"] = None
        profiles = TEST_PROFILES
        if self.bug == "confirm-full-on-test":
            profiles = tuple(replace(p, confirm_models=frozenset({"none", "full"})) if p.name == "test" else p
                             for p in TEST_PROFILES)
        server = self.server_class(BuggyBroker(self.bug, BrokerOptions(profiles=profiles, **timers)))
        if self.bug == "answers-ill-formed":
            server.peer_class = _IllFormedAnswered
        if self.bug == "zmtp-3.1-only":
            server.peer_class = _Zmtp31OnlyPeer
        if self.bug == "long-threshold-off-by-one":
            server.peer_class = _LongThresholdPeer
        if self.bug == "accepts-incompatible-socket-type":
            server.peer_class = _AnySocketTypePeer
        self.server = await server.listen("127.0.0.1", 0)
        self.url = self.server.url
        return self

    async def close(self) -> None:
        if self.server is not None:
            await self.server.close()


__all__ = ["BUGS", "BuggyMtlServer", "Profile"]
