"""The MTL test service (docs/profiles/mtl.md "Test service (server role)"): a broker, sans-IO.

Profiles:

``test``          the spec's own: one resource ``resource``; Content is never
                  confirmed (a lease asking ``confirm: full`` gets 501); Content
                  from every writer is fanned out to every reader that has
                  summoned the resource.
``confirm-test``  the same resource and fan-out, and it supports
                  ``confirm: full``.  On a full *reader* lease a Content not
                  confirmed within ``redeliver_after`` seconds (2 s by default)
                  is sent again with a new sequence; Reject with ``recycle``
                  sends what it covers again at once, Reject without it drops
                  it.  On a full *writer* lease the broker confirms each
                  Content it accepts (Confirm, multiple FALSE).

Content is delivered only to readers of the same profile, and only while the
resource is summoned: nothing is queued for later, so a Dismiss (answered 200)
stops it at once, pending redeliveries included.

Data flow rules (docs/profiles/mtl.md): before a successful Lease, Summon, Dismiss and
Content get Response 403, Confirm and Reject are ignored, Ping gets Pong.  A
lease belongs to the first data connection that presents it (presenting it
again there: 200; anywhere else, or a second lease on one connection: 403).
Summon of a resource already summoned, Dismiss of one not summoned, or a
resource the lease does not cover: 400; Summon/Dismiss on a writer lease and
Content on a reader lease: 403; Content naming no resource when the lease
covers several: 400.  Ill-formed commands are dropped.  Every message counts
as traffic: a connection silent for ``heartbeat_timeout`` is closed, and one
the broker has not heard from (or not written to) for ``heartbeat_interval``
gets a Ping.

Drive it with ``data_open`` / ``data_message`` / ``data_close`` / ``tick``;
each returns an :class:`Output` (frames to send per connection key, keys to
close).  ``control_session()`` makes the state machine of one control peer.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from reference_impl.common.errors import CodecError
from reference_impl.mtl.codec import (
    Confirm, Content, DataCommand, Dismiss, Lease, Ping, Pong, Properties, Reject, Response, Summon, decode_data,
    encode_data,
)
from reference_impl.mtl.connection import (
    ControlOptions, ControlSession, DataSession, LeaseGrant, Pending, Profile,
)
from reference_impl.mtl.sasl import MECHANISMS, Credentials

TEST_USERS = {"alice": "wonderland"}
TEST_PROFILES = (
    Profile("test", ("resource",), frozenset({"none"})),
    Profile("confirm-test", ("resource",), frozenset({"none", "full"})),
)


@dataclass
class BrokerOptions:
    users: Mapping[str, str] = field(default_factory=lambda: dict(TEST_USERS))
    anonymous: bool = False
    mechanisms: tuple[str, ...] = MECHANISMS
    profiles: tuple[Profile, ...] = TEST_PROFILES
    redeliver_after: float = 2.0
    heartbeat_interval: float | None = 5.0
    heartbeat_timeout: float | None = 15.0
    auth_ttl: float | None = None
    #: Granted leases no data connection has presented yet; past this many the oldest is forgotten
    #: (presented later: 403).  The spec gives leases no lifetime, so without a bound a client asking
    #: for leases it never uses would grow the broker without end.
    max_unclaimed_leases: int = 4096


@dataclass
class Output:
    sends: list[tuple[Any, list[bytes]]] = field(default_factory=list)
    closes: list[Any] = field(default_factory=list)

    def send(self, key: Any, command: DataCommand) -> None:
        self.sends.append((key, encode_data(command)))

    def extend(self, other: "Output") -> None:
        self.sends.extend(other.sends)
        self.closes.extend(other.closes)


class Broker:
    def __init__(self, options: BrokerOptions | None = None, data_port: int = 0,
                 credentials: Credentials | None = None) -> None:
        """``credentials``: verifiers already derived for ``options.users`` (deriving takes a PBKDF2 per user)."""
        self.options = options or BrokerOptions()
        self.data_port = data_port
        self.credentials = credentials or Credentials(self.options.users)
        self._control = ControlOptions(self.credentials, tuple(self.options.profiles), self.options.anonymous,
                                       tuple(self.options.mechanisms), self.options.auth_ttl)
        self.leases: dict[str, LeaseGrant] = {}
        self._unclaimed: dict[str, None] = {}  # tokens of leases not yet presented, oldest first
        self.sessions: dict[Any, DataSession] = {}

    # -- control ------------------------------------------------------------------

    def control_session(self) -> ControlSession:
        return ControlSession(self._control, self._grant)

    def _grant(self, kind: str, profile: Profile, resources: tuple[str, ...], confirm: str) -> tuple[int, str]:
        token = secrets.token_hex(12)
        self.leases[token] = LeaseGrant(token, kind, profile, resources, confirm)
        self._unclaimed[token] = None
        while len(self._unclaimed) > self.options.max_unclaimed_leases:
            oldest = next(iter(self._unclaimed))
            del self._unclaimed[oldest], self.leases[oldest]
        return self.data_port, token

    # -- data connections ---------------------------------------------------------------

    def data_open(self, key: Any, now: float) -> None:
        self.sessions[key] = DataSession(key, last_rx=now, last_tx=now)

    def data_close(self, key: Any) -> None:
        session = self.sessions.pop(key, None)
        if session is not None and session.lease is not None:
            # The lease belonged to this connection alone and dies with it (presented anywhere else it is 403
            # either way); kept, its grant would pin the closed connection's key, and all it holds, forever.
            self.leases.pop(session.lease.token, None)

    def data_message(self, key: Any, frames: list[bytes], now: float) -> Output:
        out = Output()
        session = self.sessions.get(key)
        if session is None:
            return out
        session.last_rx = now
        try:
            command = decode_data(frames)
        except CodecError:
            return out  # ill-formed: dropped silently
        self._on_command(session, command, now, out)
        self._stamp(out, now)
        return out

    def _on_command(self, s: DataSession, cmd: DataCommand, now: float, out: Output) -> None:
        if isinstance(cmd, Ping):
            out.send(s.key, Pong())
        elif isinstance(cmd, (Pong, Response)):
            pass
        elif isinstance(cmd, Lease):
            out.send(s.key, Response(cmd.seq, self._take_lease(s, cmd.lease)))
        elif s.lease is None:
            if isinstance(cmd, (Summon, Dismiss, Content)):
                out.send(s.key, Response(cmd.seq, 403))
            # Confirm / Reject before a lease: ignored
        elif isinstance(cmd, Summon):
            out.send(s.key, Response(cmd.seq, self._summon(s, cmd.resource)))
        elif isinstance(cmd, Dismiss):
            out.send(s.key, Response(cmd.seq, self._dismiss(s, cmd.resource)))
        elif isinstance(cmd, Content):
            self._content(s, cmd, now, out)
        elif isinstance(cmd, Confirm):
            if s.lease.kind == "reader" and s.lease.confirm == "full":
                for seq in s.covered(cmd.seq, cmd.multiple):
                    del s.pending[seq]
        elif isinstance(cmd, Reject):
            if s.lease.kind == "reader" and s.lease.confirm == "full":
                covered = [(seq, s.pending.pop(seq)) for seq in s.covered(cmd.seq, cmd.multiple)]
                if cmd.recycle:
                    for _, item in covered:
                        self._deliver_one(s, item.resource, item.properties, item.body, now, out)

    def _take_lease(self, s: DataSession, token: str) -> int:
        grant = self.leases.get(token)
        if grant is None:
            return 403
        if grant.owner is s.key:
            return 200
        if grant.owner is not None or s.lease is not None:
            return 403
        grant.owner = s.key
        s.lease = grant
        self._unclaimed.pop(token, None)
        return 200

    def _summon(self, s: DataSession, resource: str) -> int:
        assert s.lease is not None
        if s.lease.kind != "reader":
            return 403
        if not s.lease.covers(resource) or resource in s.summoned:
            return 400
        s.summoned.add(resource)
        return 200

    def _dismiss(self, s: DataSession, resource: str) -> int:
        assert s.lease is not None
        if s.lease.kind != "reader":
            return 403
        if resource not in s.summoned:
            return 400
        s.summoned.discard(resource)
        for seq in [seq for seq, item in s.pending.items() if item.resource == resource]:
            del s.pending[seq]
        return 200

    def _content(self, s: DataSession, cmd: Content, now: float, out: Output) -> None:
        lease = s.lease
        assert lease is not None
        if lease.kind != "writer":
            out.send(s.key, Response(cmd.seq, 403))
            return
        resource = cmd.resource or self._only_resource(lease)
        if resource is None or not lease.covers(resource):
            out.send(s.key, Response(cmd.seq, 400))
            return
        for reader in list(self.sessions.values()):
            if reader.lease is not None and reader.lease.kind == "reader" \
                    and reader.lease.profile.name == lease.profile.name and resource in reader.summoned:
                self._deliver_one(reader, resource, cmd.properties, cmd.body, now, out)
        if lease.confirm == "full":
            out.send(s.key, Confirm(cmd.seq, False))

    @staticmethod
    def _only_resource(lease: LeaseGrant) -> str | None:
        names = lease.resources or lease.profile.resources
        return names[0] if len(names) == 1 else None

    def _deliver_one(self, reader: DataSession, resource: str, properties: Properties, body: bytes, now: float,
                     out: Output) -> None:
        seq = reader.issue()
        assert reader.lease is not None
        if reader.lease.confirm == "full":
            reader.pending[seq] = Pending(resource, properties, body, now)
        out.send(reader.key, Content(seq, resource, properties, body))

    # -- time -----------------------------------------------------------------------------

    def tick(self, now: float) -> Output:
        out = Output()
        o = self.options
        for s in list(self.sessions.values()):
            if o.heartbeat_timeout is not None and now >= s.last_rx + o.heartbeat_timeout:
                out.closes.append(s.key)
                self.data_close(s.key)
                continue
            due = [seq for seq, item in s.pending.items() if now >= item.sent_at + o.redeliver_after]
            for seq in due:
                item = s.pending.pop(seq)
                if item.resource in s.summoned:
                    self._deliver_one(s, item.resource, item.properties, item.body, now, out)
            if self._ping_due(s, now):
                out.send(s.key, Ping())
                s.last_ping = now
        self._stamp(out, now)
        return out

    def _ping_due(self, s: DataSession, now: float) -> bool:
        interval = self.options.heartbeat_interval
        if interval is None:
            return False
        if now >= s.last_tx + interval:
            return True
        last_heard = max(s.last_rx, s.last_ping if s.last_ping is not None else s.last_rx)
        return now >= last_heard + interval

    def next_deadline(self) -> float | None:
        o = self.options
        deadlines: list[float] = []
        for s in self.sessions.values():
            if o.heartbeat_timeout is not None:
                deadlines.append(s.last_rx + o.heartbeat_timeout)
            if o.heartbeat_interval is not None:
                last_heard = max(s.last_rx, s.last_ping if s.last_ping is not None else s.last_rx)
                deadlines.append(min(s.last_tx, last_heard) + o.heartbeat_interval)
            if s.pending:
                deadlines.append(min(item.sent_at for item in s.pending.values()) + o.redeliver_after)
        return min(deadlines) if deadlines else None

    def _stamp(self, out: Output, now: float) -> None:
        for key, _ in out.sends:
            session = self.sessions.get(key)
            if session is not None:
                session.last_tx = now
