"""11/MTL from the wire: the ZMTP greeting and frames, then MTL messages, through the harness's
ZMTP reader for both roles (the client's control requests decoded by the reference control
codec, everything else by the harness's MTL reader), and what a capture shows of the server:
an ill-formed control request is dropped, not answered (SHOULD); each reply read against the
request it answers (REQ replies come in order): a request before Connection.Open served (200, 201,
202 or 402), a Profile granted after a 401 with no 201 since (after a failed Authorize's 401, an
invalid request owed an error reply; else a challenge not kept), a
SCRAM exchange ended by 201 before the client's empty last response, a malformed SCRAM
server-first, a 202 whose port is not a number, a confirm full lease granted on the spec's "test"
profile; on a data connection: no Content from a resource after a successful Response to its
Dismiss, a second Summon of a summoned resource refused, and nothing sent to a peer silent past
the heartbeat timeout.  Each Lease's Response is a session fact: a lease granted on two data
connections at once is judged across connections (conformance/trace/sessions/mtl.py).  So is
each 202 Data Lease (its lease, port, and the Connection.Reader/Writer's confirm model), keyed
at the data port it names: the Confirms a data connection's server sends for the client's
Contents are judged against the confirm model of the lease the connection holds.  With the test
services on (Rules.services, rules/mtl_services.py): a 400 or 501 to the test service's
Connection.Open of test-env spelled in another letter case, and a close after a ZMTP 3.0
greeting before anything else; and the suite's own Contents (bodies unique to a case run), logged
for the check across the server's connections (rules/mtl_contents.py, sessions/mtl_contents.py).
Not seen on the wire: other case-insensitive names (a 400 to a spelling cannot be told from a 400
to the body or the session's state), which Contents a Confirm covered in other traffic."""

from __future__ import annotations

from collections import deque

from scramp import ScramException

from reference_impl.common.errors import CodecError
from reference_impl.mtl import control
from reference_impl.mtl.sasl import SCRAM_SHA_256, ScramClientExchange, b64decode, canonical_mechanism

from conformance.protocols.base import Frame
from conformance.protocols.mtl import ADAPTER, NAMES, new_reader, to_frame
from conformance.protocols.zmtp_channel import ZmtpReader
from conformance.trace.rules import Rules as Base
from conformance.trace.rules import mtl_services
from conformance.trace.rules.mtl_contents import ContentLog


def _client_frame(parts: list[bytes]) -> Frame:
    """A control request (REQ envelope: an empty first frame), else a data command.  An
    ill-formed message becomes a frame of its own: ZMTP framing still holds after it."""
    try:
        if parts and parts[0] == b"":
            request = control.decode_request(parts[1:])
            return Frame({"kind": "request", "request": request, "body": parts[2]}, f"MTL request {request.command}")
        return to_frame(parts)
    except CodecError as exc:
        control_request = bool(parts) and parts[0] == b""
        return Frame({"kind": "ill-formed", "error": exc, "control": control_request}, f"ill-formed: {exc}")


_DATA = set(NAMES.values())  # the data commands (a control reply, a ZMTP command are not)
#: per connection, at most this many 202 grants, leases presented, Contents and Confirms are kept
_KEPT = 16


class Rules(Base):
    protocol = "mtl"
    ERRORS = {"bad-boolean": "mtl-boolean", "bad-short-string": "mtl-short-string", "field-range": "mtl-integer",
              "bad-json": "mtl-json"}
    FRAMING = "mtl-request-format"

    def __init__(self, transport: str, params: dict[str, int]) -> None:
        super().__init__(transport, params)
        self.requests: deque[control.Request] = deque()  # well-formed control requests not yet answered
        self.challenged = False  # the last 401/201 was a 401: the client is not authenticated
        self.failed_exchange = False  # ... a 401 answering a Connection.Authorize
        self.opened = False  # a Connection.Open was answered 201 or 401 (the ZMTP reader saw the connection start)
        self.profile = ""  # the profile the last 200 to Connection.Profile selected
        self.last_client = 0.0  # when the client's last frame ended
        self.dead_after = (params.get("heartbeat_timeout_ms", 15000)
                           + max(params.get("heartbeat_interval_ms", 5000), params.get("prompt_ms", 1000))) / 1000
        self.dead_peer_seen = False
        self.readers: dict[str, ZmtpReader] = {}
        self.ill_formed = 0  # ill-formed control requests since
        self.asked = 0  # control requests (ill-formed ones too) the client sent
        self.first_open: control.Request | None = None  # the first, when the test service's Open in another case
        self.commands: dict[int, tuple[str, str]] = {}  # seq -> (kind, resource) of the client's Summon/Dismiss
        self.summoned: set[str] = set()
        self.dismissed: set[str] = set()
        self.leases: dict[int, tuple[str, float]] = {}  # seq -> (lease, when) of a Lease not yet answered
        self.presented: dict[str, dict] = {}  # lease -> its fact (conformance/trace/sessions/mtl.py)
        self.ends: list[float] = []
        self.reply_ts = 0.0  # when the control reply being read came
        self.grants: list[tuple[str, dict]] = []  # (lease, its fact) of each 202 Data Lease
        self.tokens: set[str] = set()  # the leases the client presented on this (data) connection
        self.held_since: float | None = None  # when the first 2xx Response to a Lease came
        self.contents: set[int] = set()  # sequences of the client's Contents sent after it
        self.confirms: list[dict] = []  # the server's Confirms that cover one of those Contents
        self.zmtp30: float | None = None  # with the test services on: a client's ZMTP 3.0 greeting not yet served
        self.content_log = ContentLog()  # with the test services on: the suite's unique Contents (sessions)
        self.first_ts: float | None = None

    def new_reader(self, side: str):
        self.readers[side] = ZmtpReader(_client_frame) if side == "client" else new_reader(self.transport)
        return self.readers[side]

    def on_error(self, side: str, exc, ts: float):
        if side == "client":
            self.zmtp30 = None  # invalid bytes: the server may close for them
        found = super().on_error(side, exc, ts)
        if side == "server" and exc.code not in self.ERRORS:
            return [(side, "mtl-reply-format", message) for _, _, message in found]
        return found

    def on_frame(self, side: str, frame, ts: float):
        f = frame.fields
        kind = f.get("kind")
        if self.first_ts is None:
            self.first_ts = ts
        if self.services:
            (self.content_log.client if side == "client" else self.content_log.server)(kind, f, ts, self.where)
        if side == "client":
            self.last_client = ts
            if (kind == "greeting" and self.services and (f.get("major"), f.get("minor")) == (3, 0)
                    and f.get("mechanism") == "NULL" and not f.get("as_server")):
                self.zmtp30 = ts  # the mechanism the service speaks, as a client
            elif kind == "command" and f.get("command") == "READY" and f.get("socket_type") not in ("REQ", "DEALER"):
                self.zmtp30 = None  # a socket type the service does not pair with: it may close for that
            return self._client(f, kind)
        if kind != "greeting":
            self.zmtp30 = None  # served
        if kind == "reply":
            self.reply_ts = ts
            if self.requests:
                return self._reply(self.requests.popleft(), f)
            if self.ill_formed:
                self.ill_formed -= 1
                return [("server", "mtl-control-drop-ill-formed",
                         f"the server answered an ill-formed request ({f.get('code')}) instead of dropping it", "client")]
        elif kind == "response" and f.get("seq") in self.leases:
            self._leased(f, ts)
        elif kind == "response" and f.get("seq") in self.commands:
            return self._response(f)
        elif kind == "confirm" and self.contents and len(self.confirms) < _KEPT:
            seq = f.get("seq")
            if isinstance(seq, int) and (seq in self.contents or (f.get("multiple") is True
                                                                  and seq >= min(self.contents))):
                self.confirms.append({"ts": ts, "seq": seq, "at": self.where()})
        out = self._dead_peer(kind, ts)
        if kind == "content" and f.get("resource") in self.dismissed:
            out.append(("server", "mtl-no-content-after-dismiss",
                        f"Content from {f['resource']!r} after the successful Response to its Dismiss", "client"))
        return out

    def _reply(self, request: control.Request, f):
        code, key = f.get("code"), request.key
        if request is self.first_open and self.services and not self.blind:
            refused = mtl_services.open_refused(request.command, code)
            if refused:
                return [refused]
        body_of = request.body if isinstance(request.body, dict) else {}
        if key == control.OPEN and code in (401, 201):
            self.opened = True
        elif key != control.OPEN and not self.opened and code in (200, 201, 202, 402):
            return [("server", "mtl-open-first", f"{request.command} was served ({code}) on a connection whose "
                     "client never opened it: Connection.Open comes first", "client")]
        if code in (401, 201):
            self.challenged = code == 401
            self.failed_exchange = code == 401 and key == control.AUTHORIZE
        if key == control.PROFILE and code == 200:
            if self.challenged and self.failed_exchange:
                return [("server", "mtl-control-error-reply", "Connection.Profile was granted (200) after the "
                         "client's Connection.Authorize failed (401), with no 201 since: a failed exchange leaves the "
                         "client unauthenticated, and its request, invalid then, is owed an error reply", "client")]
            if self.challenged:
                return [("server", "mtl-challenge", "Connection.Profile was granted (200) to a client the server "
                         "challenged (401) and that has not authenticated since (no 201)", "client")]
            self.profile = str(body_of.get("profile", ""))
        if key == control.AUTHORIZE and isinstance(body_of.get("mechanism"), str) \
                and canonical_mechanism(body_of["mechanism"]) == SCRAM_SHA_256:
            return self._scram(body_of.get("response", ""), code, f)
        if key in (control.READER, control.WRITER) and code == 202:
            port = f.get("port")
            if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
                return [("server", "mtl-data-lease",
                         f"the 202 Data Lease carries the port {port!r}, not a JSON number")]
            confirm = body_of.get("confirm")
            self._granted(key, confirm, f)
            if self.profile.casefold() == "test" and isinstance(confirm, str) and confirm.casefold() == "full":
                return [("server", "mtl-501", "a confirm full lease was granted (202) on the test profile, which never "
                         "confirms: 501 Not Implemented is required")]
        return []

    def _granted(self, key: str, confirm, f) -> None:
        """A 202 Data Lease: which lease, at which data port, with which confirm model (for the checks
        across connections).  Only while every frame of both sides was seen: a REQ socket's reply
        answers the request before it."""
        lease, ts = f.get("lease"), self.reply_ts
        if self.blind or not isinstance(lease, str) or len(self.grants) >= _KEPT:
            return
        kind = "writer" if key == control.WRITER else "reader"
        self.grants.append((lease, {"first_ts": ts, "server_port": f["port"], "grant": {
            "kind": kind, "confirm": confirm if isinstance(confirm, str) else None, "ts": ts}}))

    def _scram(self, response, code, f):
        """RFC 5802 via the reference's SCRAM client: the server-first answers the client-first in a
        402; success (201) comes only after the server-final 402, for the client's empty response."""
        try:
            data = b64decode(response) if isinstance(response, str) else b""
        except CodecError:
            return []
        if code == 201 and data:
            return [("server", "mtl-402-cycle", "a SCRAM-SHA-256 Authorize with response data was answered 201 Ready: "
                     "the server-final travels in a last 402, and 201 answers the client's empty response")]
        # a gs2 header: the client-first message, which the server-first answers
        if code == 402 and data.startswith((b"n,", b"y,", b"p=")) and "challenge_text" in f:
            attributes = dict(a.split("=", 1) for a in data.decode("utf-8", "replace").split(",") if "=" in a)
            exchange = ScramClientExchange(attributes.get("n", ""), "", attributes.get("r", ""))
            exchange.client_first()
            try:
                exchange.client_final(f["challenge_text"].encode("utf-8"))
            except (ScramException, UnicodeDecodeError) as exc:
                return [("server", "mtl-402-cycle", f"the SCRAM server-first message in the 402 is malformed: {exc}")]
        return []

    def _dead_peer(self, kind, ts: float):
        """A data peer silent past the heartbeat timeout is disconnected: the server sends it
        nothing more (mtl-dead-peer).  Judged only while the client has no part of a frame
        pending (bytes whose arrival time the rules do not see)."""
        if kind not in _DATA or self.dead_peer_seen or not self.last_client or self.readers["client"].pending:
            return []
        if ts - self.last_client > self.dead_after:
            self.dead_peer_seen = True
            return [("server", "mtl-dead-peer", f"the server sent {kind} {ts - self.last_client:.3f} s after the "
                     "client's last frame, past its heartbeat timeout: a dead peer is sent nothing more")]
        return []

    def _client(self, f, kind):
        if kind == "ill-formed":
            error: CodecError = f["error"]
            if f["control"]:
                self.ill_formed += 1
                self.asked += 1
            return [("client", self.ERRORS.get(error.code, self.FRAMING), f"an ill-formed message: {error}")]
        if kind == "request":
            self.requests.append(f["request"])
            if not self.asked and not self.blind and mtl_services.pinned_open(f["request"].command, f["body"]):
                self.first_open = f["request"]
            self.asked += 1
        elif kind in ("summon", "dismiss"):
            self.commands[f["seq"]] = (kind, f.get("resource", ""))
        elif kind == "lease" and isinstance(f.get("lease"), str):
            self.leases[f["seq"]] = (f["lease"], self.last_client)
            self.tokens.add(f["lease"] if len(self.tokens) < _KEPT else "")  # "": more than were kept
        elif kind == "content" and self.held_since is not None and isinstance(f.get("seq"), int) \
                and len(self.contents) < 16 * _KEPT:
            self.contents.add(f["seq"])
        return []

    def _leased(self, f, ts: float) -> None:
        """A Response to a Lease: whose lease it granted is for the checks across connections."""
        lease, asked = self.leases.pop(f["seq"])
        if self.held_since is None and 200 <= int(f.get("code") or 0) < 300:
            self.held_since = ts
        fact = self.presented.setdefault(lease, {"first_ts": asked, "answers": [], "dead_after": self.dead_after})
        if len(fact["answers"]) < 8:  # the first few say whose lease it is
            fact["answers"].append({"asked": asked, "code": int(f.get("code") or 0), "ts": ts,
                                    "at": self.where()})

    def on_end(self, side: str, ts: float, how: str, pending: int):
        out = mtl_services.zmtp30_refused(self.zmtp30, ts, how) if (
            side == "server" and not self.ends and not self.blind) else []
        self.ends.append(ts)
        return out

    def session_facts(self):
        ended = min(self.ends, default=None)
        held = {"leases": len(self.tokens), "confirms": self.confirms, "complete": "client" not in self.blind}
        facts = [(lease, {**fact, **held, "ended": ended}) for lease, fact in self.presented.items()] + \
            [(lease, {**fact, "ended": ended}) for lease, fact in self.grants]
        contents = self.content_log.fact(self.grants, self.tokens, self.first_ts or 0.0, ended,
                                         self._recycle_within()) if self.services else None
        return facts + ([("contents", contents)] if contents else [])

    def _recycle_within(self) -> float | None:
        """How soon a Content a Reject recycles is owed again: the confirm-test profile sends it "at
        once", and the suite's cases allow the confirm timeout less 200 ms (stretched as the run's
        waits were), which a Content sent again by that timer would miss."""
        redeliver = self.run_or_lenient(ADAPTER, "redeliver_ms", max)
        return (redeliver - 0.2) * self.stretch() if redeliver > 0.2 else None

    def _response(self, f):
        kind, resource = self.commands.pop(f["seq"])
        ok = 200 <= int(f.get("code", 0)) < 300
        if kind == "dismiss" and ok:
            self.dismissed.add(resource)
            self.summoned.discard(resource)
        elif kind == "summon" and ok:
            if resource in self.summoned:
                return [("server", "mtl-summon-response",
                         f"a second Summon of {resource!r}, summoned already, was answered {f.get('code')}, "
                         "not refused", "client")]
            self.summoned.add(resource)
            self.dismissed.discard(resource)
        return []

    def on_gap(self, side: str) -> None:
        super().on_gap(side)  # blind: a reply may not answer the request it follows, a Lease or Content not seen
        self.content_log.blind(max(self.last_data.values(), default=self.first_ts or 0.0))
        self.leases.clear()  # a Response may answer a Lease not seen, or the other way round
        if side == "client":
            self.commands.clear()
            self.dead_peer_seen = True  # the client's traffic is no longer seen: its silence is unknown
