"""Per-connection MTL state machines, sans-IO: time is passed in, nothing is sent here.

:class:`ControlSession` is one control peer (one REQ connection to the
server's ROUTER): ``handle(request, now)`` returns the one reply, or the
caller drops an ill-formed request before it gets here.

    new --Open--> open (unauthenticated; 401 + mechanisms) --Authorize...--> ready (201 + profiles)
                   ^   (anonymous servers go straight to ready)          |
                   +------ failed Authorize / expired authentication ----+

- Command names are case-insensitive, profile names too.
- Before Open every other known command gets 403; an unknown command gets 400
  at any time.
- Authorize is accepted at any time after Open (re-authentication); a failed
  exchange ends in 401 and the peer is unauthenticated until it succeeds.
  Profile/Reader/Writer while unauthenticated, or once ``auth_ttl`` has passed
  since the last success, get 401 with the mechanisms (the spec's "The server
  MAY issue a 401 response at any time").
- Reader/Writer before a profile is selected: 403; a body that is not as the
  spec shows (resources a list of names of the profile, confirm "none" or
  "full"): 400; a confirm model the profile lacks: 501; else 202 with the data
  port (a JSON number) and a fresh lease.

:class:`DataSession` is one data connection's state: its lease, summoned
resources, the sequence of Content it sends, Content awaiting confirmation
and its heartbeat clocks.  The broker (:mod:`reference_impl.mtl.service`)
drives it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from reference_impl.common.errors import CodecError
from reference_impl.mtl import control
from reference_impl.mtl.codec import MAX_INTEGER, Properties
from reference_impl.mtl.control import Reply, Request, error_reply
from reference_impl.mtl.sasl import MECHANISMS, Credentials, SaslServer, b64decode, b64encode, canonical_mechanism

PROTOCOL_NAME = "MTL"
PROTOCOL_VERSION = 1
CONFIRM_MODELS = ("none", "full")


@dataclass(frozen=True)
class Profile:
    """A profile: its resources and the confirmation models it supports."""

    name: str
    resources: tuple[str, ...] = ("resource",)
    confirm_models: frozenset[str] = frozenset({"none"})


@dataclass
class LeaseGrant:
    token: str
    kind: str  # "reader" | "writer"
    profile: Profile
    resources: tuple[str, ...]  # () means every resource of the profile
    confirm: str  # "none" | "full"
    owner: Any = None  # the data connection that presented it first

    def covers(self, resource: str) -> bool:
        return resource in self.profile.resources and (not self.resources or resource in self.resources)


@dataclass
class ControlOptions:
    credentials: Credentials
    profiles: tuple[Profile, ...]
    anonymous: bool = False
    mechanisms: tuple[str, ...] = MECHANISMS
    auth_ttl: float | None = None


Granter = Callable[[str, Profile, tuple[str, ...], str], tuple[int, str]]


class ControlSession:
    def __init__(self, options: ControlOptions, grant: Granter) -> None:
        self.options = options
        self.grant = grant
        self.state = "new"
        self.user: str | None = None
        self.profile: Profile | None = None
        self._sasl: SaslServer | None = None
        self._authenticated_at: float | None = None

    # -- the one entry point ----------------------------------------------------

    def handle(self, request: Request, now: float) -> Reply:
        key = request.key
        handler = {
            control.OPEN: self._open, control.AUTHORIZE: self._authorize, control.PROFILE: self._profile,
            control.READER: self._lease, control.WRITER: self._lease,
        }.get(key)
        if handler is None:
            return error_reply(400, reason=f"unknown command {request.command!r}")
        if key != control.OPEN and self.state == "new":
            return error_reply(403, reason="Connection.Open first")
        return handler(request, now)

    # -- commands -----------------------------------------------------------------

    def _open(self, request: Request, now: float) -> Reply:
        body = request.body
        proto = body.get("protocol") if isinstance(body, dict) else None
        if not isinstance(proto, dict) or not isinstance(proto.get("name"), str) \
                or proto["name"].casefold() != PROTOCOL_NAME.casefold():
            return error_reply(400, reason='"protocol" must be {"name": "MTL", "version": 1}')
        version = proto.get("version")
        if isinstance(version, bool) or not isinstance(version, int) or version != PROTOCOL_VERSION:
            return error_reply(400, reason=f"protocol version {version!r} is not supported (1 is)")
        if "virtual-host" in body and not isinstance(body["virtual-host"], str):
            return error_reply(400, reason='"virtual-host" must be a string')
        self.profile = None
        self._sasl = None
        if self.options.anonymous:
            self._succeed(None, now)
            return self._ready()
        self._fail()
        return self._unauthorized()

    def _authorize(self, request: Request, now: float) -> Reply:
        body = request.body
        if not isinstance(body, dict) or not isinstance(body.get("mechanism"), str) \
                or not isinstance(body.get("response", ""), str):
            return error_reply(400, reason='Authorize needs "mechanism" and a base64 "response"')
        try:
            response = b64decode(body.get("response", ""))
        except CodecError:
            return error_reply(400, reason='"response" is not base64')
        mechanism = canonical_mechanism(body["mechanism"], self.options.mechanisms)
        if mechanism is None:
            self._fail()
            return self._unauthorized()
        if self._sasl is None or self._sasl.mechanism != mechanism:
            self._sasl = SaslServer(mechanism, self.options.credentials)
        step = self._sasl.step(response)
        if not step.done:
            return Reply(402, {"status": "Challenged", "mechanism": mechanism,
                               "challenge": b64encode(step.challenge or b"")})
        self._sasl = None
        if step.user is None:
            self._fail()
            return self._unauthorized()
        self._succeed(step.user, now)
        return self._ready()

    def _profile(self, request: Request, now: float) -> Reply:
        refused = self._needs_authentication(now)
        if refused:
            return refused
        name = request.body.get("profile") if isinstance(request.body, dict) else None
        if not isinstance(name, str):
            return error_reply(400, reason='Profile needs "profile"')
        for profile in self.options.profiles:
            if profile.name.casefold() == name.casefold():
                self.profile = profile
                return Reply(200, {"status": "OK"})
        return error_reply(400, reason=f"no profile {name!r}")

    def _lease(self, request: Request, now: float) -> Reply:
        refused = self._needs_authentication(now)
        if refused:
            return refused
        if self.profile is None:
            return error_reply(403, reason="select a profile first (Connection.Profile)")
        body = request.body
        resources = body.get("resources") if isinstance(body, dict) else None
        confirm = body.get("confirm") if isinstance(body, dict) else None
        if not isinstance(resources, list) or not all(isinstance(r, str) for r in resources):
            return error_reply(400, reason='"resources" must be a list of resource names')
        if not isinstance(confirm, str) or confirm.casefold() not in CONFIRM_MODELS:
            return error_reply(400, reason='"confirm" must be "none" or "full"')
        unknown = [r for r in resources if r not in self.profile.resources]
        if unknown:
            return error_reply(400, reason=f"no resource {unknown[0]!r} in profile {self.profile.name}")
        confirm = confirm.casefold()
        if confirm not in self.profile.confirm_models:
            return error_reply(501)
        kind = "reader" if request.key == control.READER else "writer"
        port, lease = self.grant(kind, self.profile, tuple(dict.fromkeys(resources)), confirm)
        return Reply(202, {"status": "Data Lease", "port": port, "lease": lease})

    # -- helpers ------------------------------------------------------------------

    def _needs_authentication(self, now: float) -> Reply | None:
        ttl = self.options.auth_ttl
        if self.state == "ready" and ttl is not None and self._authenticated_at is not None \
                and now >= self._authenticated_at + ttl and not self.options.anonymous:
            self._fail()
        return self._unauthorized() if self.state != "ready" else None

    def _succeed(self, user: str | None, now: float) -> None:
        self.state, self.user, self._authenticated_at = "ready", user, now

    def _fail(self) -> None:
        self.state, self.user = "open", None

    def _ready(self) -> Reply:
        return Reply(201, {"status": "Ready", "profiles": [p.name for p in self.options.profiles]})

    def _unauthorized(self) -> Reply:
        return Reply(401, {"status": "Unauthorized", "mechanisms": list(self.options.mechanisms)})


# -- the data side ----------------------------------------------------------------

@dataclass
class Pending:
    """A Content sent on a ``confirm: full`` reader lease and not yet confirmed."""

    resource: str
    properties: Properties
    body: bytes
    sent_at: float


@dataclass
class DataSession:
    key: Any
    last_rx: float
    last_tx: float
    lease: LeaseGrant | None = None
    summoned: set[str] = field(default_factory=set)
    next_seq: int = 1
    last_issued: int = 0
    pending: OrderedDict[int, Pending] = field(default_factory=OrderedDict)
    last_ping: float | None = None

    def issue(self) -> int:
        """The next content sequence this side sends (1, 2, ...; after 2^64-1 comes 1)."""
        seq = self.next_seq
        self.next_seq = seq + 1 if seq < MAX_INTEGER else 1
        self.last_issued = seq
        return seq

    def covered(self, seq: int, multiple: bool) -> list[int]:
        """The pending sequences a Confirm/Reject covers; unknown sequences cover nothing."""
        if not multiple:
            return [seq] if seq in self.pending else []
        if not 1 <= seq <= self.last_issued:
            return []
        return [s for s in self.pending if s <= seq]
