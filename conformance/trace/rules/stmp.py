"""STMP (docs/profiles/stmp.md) seen from the wire: negotiation first, replies by ID, a close
where the profile requires one, heartbeats while open; frames decoded by the reference codec.

On a connection a suite capture names as the target's client (``test_client``), the client runs
one of the profile's client test cases, each of which closes only once it has what it waits for:
its close with a Request still unanswered, the server still open, after the server sent a
Response to an ID the client never used, took that Response for a reason to give up
(stmp-response-fields: such a Response is dropped, the receiver neither fails nor closes).  Each
case makes its first move after the negotiation at once (a Request, its close) but `heartbeat`,
which pings at an interval no longer than the suite's heartbeat_interval_ms: a test client that
sends nothing and stays open for twice that and 3 s more (the wait of the case that grades it,
times --time-scale) breaks stmp-heartbeat-send, judged when a later packet proves the wait.
`request-timeout`'s close, early or never, is judged in stmp_testcases.py.  With the test services
on, the service's close of a negotiated connection within its heartbeat timeout (the run's) of the
client's last message, nothing owing a close, counted only some traffic (_closed_on_live_client)."""

from __future__ import annotations

from collections import Counter

from reference_impl.common.errors import CodecError
from reference_impl.stmp import codec

from conformance.protocols.base import Frame
from conformance.protocols.stmp import ADAPTER, HARNESS_MAX_PAYLOAD
from conformance.trace.rules import Rules as Base, other
from conformance.trace.rules.stmp_services import answer_to_unknown, unknown_action
from conformance.trace.rules.stmp_testcases import RequestTimeoutCase

_OK, _BAD_REQUEST, _NOT_FOUND, _TOO_LARGE, _NOT_IMPLEMENTED, _VERSION_NOT_SUPPORTED = 0x00, 0x20, 0x24, 0x26, 0x31, 0x35
# ACTIONs 0x00..0xFF are the protocol's; 0.1 defines 0x00 (negotiation) alone, so 0x01..0xFF are unknown to every
# 0.1 server and get NotImplemented (docs/profiles/stmp.md, "Test service")
_RESERVED = range(0x01, 0x100)
_RAW = 5
_VERSION = "0.1"  # the one version docs/profiles/stmp.md defines ("The current version is 0.1")
_NOTIFY_ECHO = 0x101  # the test service's one Notify it answers (with a Notify)


def _frame(msg) -> Frame:
    """The fields the rules read; the versions only where negotiation carries them (ID 0, Raw).
    Lighter than the harness's to_frame, which also renders every frame for wire logs (and
    written out per kind: this runs once per message checked)."""
    kind = type(msg)
    if kind is codec.Request:
        fields = {"kind": "request", "encoding": msg.encoding, "id": msg.id, "action": msg.action}
    elif kind is codec.Response:
        fields = {"kind": "response", "encoding": msg.encoding, "id": msg.id, "status": msg.status}
    elif kind is codec.Notify:
        fields = {"kind": "notify", "encoding": msg.encoding, "action": msg.action}
    else:
        fields = {"kind": "ping", "encoding": 0}
    if fields.get("id") == 0 and fields["encoding"] == _RAW and fields.get("action", 0) == 0:
        try:
            fields["versions"] = [f"{a}.{b}" for a, b in codec.decode_versions(msg.payload, text=False)]
        except CodecError:
            fields["versions"] = []
    return Frame(fields, "")


class _StreamReader:
    """The TCP binding: the reference StreamDecoder, frames as _frame fields."""

    def __init__(self) -> None:
        self._decoder = codec.StreamDecoder(max_payload=HARNESS_MAX_PAYLOAD)
        self.joined = False  # the last feed's first frame began in an earlier segment (its bytes' times unknown)

    def feed(self, data: bytes) -> list[Frame]:
        self.joined = self._decoder.buffered > 0
        return [_frame(m) for m in self._decoder.feed(data)]

    @property
    def pending(self) -> int:
        return self._decoder.buffered


class Rules(Base):
    protocol = "stmp"
    ERRORS = {
        "reserved-bits": "stmp-reserved-bits",
        "encoding-invalid": "stmp-encodings",
        "ping-encoding": "stmp-ping-encoding-zero",
        "first-byte": "stmp-first-byte",
        "empty-payload": "stmp-encoding-none",
        "unexpected-payload": "stmp-encoding-none",
        "text-syntax": "stmp-text-fields",
        "field-range": "stmp-text-fields",
        "split-header": "stmp-split-encoding",
        "trailing-bytes": "stmp-heartbeat-fields",
        "version-syntax": "stmp-negotiation-request",
    }
    FRAMING = "stmp-field-order"

    def new_reader(self, side: str):
        if self.transport != "tcp":
            return super().new_reader(side)
        self.readers[side] = _StreamReader()
        return self.readers[side]

    def __init__(self, transport: str, params: dict[str, int]) -> None:
        super().__init__(transport, params)
        self.first = {"client": True, "server": True}  # before the side's first message that is not a ping
        self.negotiation = "none"  # none -> asked (a negotiation request) / refused-first -> open
        self.outstanding = {"client": Counter(), "server": Counter()}  # request IDs a side awaits replies to
        self.responses_sent = {"client": set(), "server": set()}  # IDs of Responses a side sent
        self.offered: list[str] = []
        self.negotiation_encoding = _RAW  # the negotiation request's ENCODING (1..4: owed BadRequest and a close)
        self.version = ""  # the version the negotiation's Ok chose
        # request ID -> the ACTION the server lacks (a reserved one, or with the test services one the
        # service lacks) of the client's one outstanding request with that ID (None: two outstanding
        # requests share the ID, so which one a Response answers is unknown)
        self.unknown_actions: dict[int, int | None] = {}
        # when the client's first message, not the negotiation, arrived, while the server owes it BadRequest and a close
        self.refusal_owed: float | None = None
        self.refused_id = 0  # the ID an error reply to a first message that is not the negotiation carries
        # the server must close: (requirement, why, when); it may still send one error reply
        self.must_close: tuple[str, str, float] | None = None
        self.error_reply_allowed = False
        self.closed: dict[str, float] = {}
        self.last_sent = {"client": 0.0, "server": 0.0}
        self.interval = params.get("heartbeat_interval_ms", 5000) / 1000
        self.prompt = self.suite_wait("prompt_ms")
        self.timeout = params.get("heartbeat_timeout_ms", 15000) / 1000
        # with the test services on: the service's timeout is the run's, else at least the shorter of the
        # adapter's default and the reference's (a run against the reference uses its ref_params)
        self.service_timeout = self.run_or_lenient(ADAPTER, "heartbeat_timeout_ms", min)
        # a server acts on its heartbeat timeout within a heartbeat interval (its timer's tick) and the prompt
        self.timeout_slack = max(self.interval, self.prompt)
        self.timed_out = False
        self.cut_short = False  # the client ended its stream inside a message
        self.readers: dict[str, _StreamReader] = {}
        self.stray: tuple[float, int] | None = None  # (when, ID) of a server Response to an ID the client never used
        # a test client silent since the negotiation's Ok (when), until it moves; judged once
        self.quiet_since: float | None = None
        self.first_ping_window = (2 * self.interval + 3) * self.stretch()
        self.request_case = RequestTimeoutCase(params, self.stretch(), self.service_timeout)  # judged when ``test_client``
        self.oversized = False  # the client sent a message over the harness reader's limit
        self.client_last: tuple[str, int | None] = ("", None)  # the kind and ACTION of the client's last message

    # -- frames ------------------------------------------------------------------------------

    def on_frame(self, side: str, frame, ts: float):
        f = frame.fields
        if self.quiet_since is None:
            return self._frame(side, f, ts)
        late = self._test_client_silent(ts, f"then the {side} sent a {f['kind']}")
        if side == "client":
            self.quiet_since = None  # it moved
        return late + self._frame(side, f, ts)

    def _frame(self, side: str, f: dict, ts: float):
        last = self.last_sent
        # the timers only when one may have run out (this runs once per message checked)
        if ts - last["server"] > 2 * self.interval or ts - last["client"] > self.timeout + self.timeout_slack:
            out = self._heartbeat(side, ts) + self._silent_client(ts, side == "client")
        else:
            out = []
        last[side] = ts
        if side == "client" and f["kind"] != "ping":
            self.client_last = (f["kind"], f.get("action"))
        if self.test_client and not self.blind and "client" not in self.closed:
            out += self._request_case(side, f, ts)
        if side == "server" and f["kind"] != "ping":
            self.refusal_owed = None  # the server answered (whatever it sent is judged as its reply)
        if side == "server" and self.must_close is not None:
            return out + self._after_must_close(f)
        if f["kind"] != "ping" and self.first[side]:
            self.first[side] = False
            out += self._first_client(f, ts) if side == "client" else self._first_server(f, ts)
        elif f["kind"] == "ping" and side == "client" and self.first["client"] and self.negotiation == "none":
            out.append(("client", "stmp-negotiation-request",
                        "the client sent a ping before its negotiation request"))
            self.first["client"] = False
            self.negotiation, self.refused_id = "refused-first", 0  # a ping is "any other message" too
            self.refusal_owed = ts
        elif f["kind"] == "ping" and side == "server" and self.negotiation in ("none", "asked") and not self.blind:
            out.append(("server", "stmp-negotiation-request",
                        "the server sent a ping before the negotiation completed: heartbeats start once it completes"))
        elif f["kind"] == "request":
            if side == "client" and self.negotiation == "open":
                self._note_unknown_action(f)
            self.outstanding[side][f["id"]] += 1
            if f["id"] == 0:
                out.append((side, "stmp-request-fields", f"{_show(f)} after the negotiation: "
                            "request IDs are 1..0xFFFF, wrapping 0xFFFF -> 1 (0 is the negotiation's)"))
        elif f["kind"] == "response":
            unsolicited = self.outstanding[other(side)][f["id"]] <= 0
            out += self._response(side, f)
            if unsolicited:
                self.responses_sent[side].add(f["id"])  # only a Response nobody asked for can be answered wrongly
                if side == "server" and self.test_client and self.negotiation == "open":
                    self.stray = (ts, f["id"])
        return out

    def _request_case(self, side: str, f: dict, ts: float):
        case = self.request_case
        late = case.still_open(ts, f"then the {side} sent a {f['kind']}")
        if side == "server":
            case.server_message(ts, f["kind"])
        elif f["kind"] == "request" and self.negotiation == "open":
            case.client_request(ts, f["id"])
        return late

    def _first_client(self, f, ts: float):
        if f["kind"] == "request" and f["id"] == 0 and f["action"] == 0:
            self.negotiation = "asked"
            self.offered = list(f.get("versions") or [])
            self.negotiation_encoding = f["encoding"]
            self.outstanding["client"][0] += 1
            if f["encoding"] != _RAW:
                return [("client", "stmp-negotiation-request",
                         f"the negotiation request has ENCODING {f['encoding']}, not Raw")]
            if "versions" in f and _VERSION not in self.offered:
                return [("client", "stmp-negotiation-request",
                         f"the negotiation request offers {self.offered}, not the profile's version {_VERSION}")]
            return []
        self.negotiation, self.refused_id = "refused-first", f.get("id", 0)
        self.refusal_owed = ts
        if f["kind"] == "request":
            self.outstanding["client"][f["id"]] += 1
        return [("client", "stmp-negotiation-request", f"the client's first message is {_show(f)}, not the negotiation request")]

    def _first_server(self, f, ts: float):
        if "client" in self.blind and self.negotiation == "none":
            return []  # the client's first message was not seen
        if self.negotiation == "asked":
            if f["kind"] != "response" or f.get("id") != 0:
                return [("server", "stmp-negotiation-ok", f"the server's first message is {_show(f)}, not the reply to the negotiation (ID 0)")]
            self._answered("client", 0)
            if f["status"] == _OK:
                self.negotiation = "open"
                self.quiet_since = ts if self.test_client else None
                if 1 <= self.negotiation_encoding <= 4:
                    return [("server", "stmp-negotiation-request", f"the negotiation's Ok answers a negotiation request "
                             f"with ENCODING {self.negotiation_encoding}, not Raw: BadRequest and a close were owed")]
                chosen = f.get("versions") or []
                self.version = chosen[0] if len(chosen) == 1 else ""
                if self.services and self.offered and _VERSION not in self.offered:
                    return [("server", "stmp-negotiation-refused", f"the negotiation's Ok carries {chosen} to an "
                             f"offer of {self.offered}, without {_VERSION}, the one version the test service speaks: "
                             "VersionNotSupported was owed")]
                if len(chosen) != 1 or self.offered and chosen[0] not in self.offered:
                    return [("server", "stmp-negotiation-ok", f"the negotiation's Ok carries the versions {chosen}, "
                             f"not one of those the client offered ({self.offered})")]
                return []
            requirement = "stmp-negotiation-refused" if f["status"] == _VERSION_NOT_SUPPORTED else "stmp-negotiation-request"
            self._close_required(requirement, f"it refused the negotiation ({_show(f)})", ts)
            return []
        if self.negotiation == "refused-first":
            if f["kind"] != "response" or f["status"] == _OK:
                return [("server", "stmp-negotiation-request",
                         f"the client's first message was not the negotiation request, and the server answered {_show(f)}, not an error")]
            self._answered("client", f["id"])
            self._close_required("stmp-negotiation-request", "it answered a first message that was not the negotiation", ts)
            if f["id"] != self.refused_id:
                return [("server", "stmp-negotiation-request", f"the server answered the client's first message, "
                         f"not the negotiation, with {_show(f)}: an error reply carries the offending message's "
                         f"ID ({self.refused_id:#x})")]
            return []
        return [("server", "stmp-negotiation-ok", f"the server sent {_show(f)} before the client negotiated")]

    def _note_unknown_action(self, f) -> None:
        """Remember a Request with a reserved ACTION the server must answer NotImplemented, or with the
        test services one the service answers NotFound (judged in _response), unless another request
        with its ID is outstanding (which it answers is then unknown)."""
        request_id = f["id"]
        if request_id in self.unknown_actions or self.outstanding["client"][request_id] > 0:
            self.unknown_actions[request_id] = None
        elif f["action"] in _RESERVED or self.services and unknown_action(f["action"]):
            self.unknown_actions[request_id] = f["action"]

    def _unknown_action_answer(self, f):
        """A NotFound to a Request with a reserved ACTION (0x01..0xFF, once 0.1 is negotiated): the server
        says it knows no such ACTION, and an unknown reserved ACTION gets NotImplemented (0x31), not the
        NotFound of an unknown application ACTION.  Ok, BadRequest or another status is not judged: they
        do not show the server took the ACTION for an unknown one.  With the test services on, the answer
        to an application ACTION the service lacks is judged by stmp_services (NotFound owed)."""
        action = self.unknown_actions.pop(f["id"], None) if self.outstanding["client"][f["id"]] <= 1 else None
        if action is None or self.version != _VERSION or "client" in self.blind:
            return []
        if action not in _RESERVED:  # noted only with the test services on
            found = answer_to_unknown(action, f["id"], f["status"])
            return [found] if found else []
        if f["status"] != _NOT_FOUND:
            return []
        return [("server", "stmp-action-dispatch",
                 f"{_show(f)} answers Request ACTION {action:#x}: ACTIONs 0x00..0xFF are reserved for the protocol "
                 f"(0.1 uses 0x00 alone), and an unknown reserved ACTION gets NotImplemented "
                 f"({_NOT_IMPLEMENTED:#x}), not NotFound")]

    def _response(self, side: str, f):
        peer = other(side)
        if self.outstanding[peer][f["id"]] > 0:
            out = self._unknown_action_answer(f) if side == "server" and f["id"] in self.unknown_actions else []
            self._answered(peer, f["id"])
            return out
        if side == "server" and self.cut_short:
            # a stream that ends inside a message is closed, a BadRequest first allowed (the profile's
            # answer to every malformed message); not a server error
            return [] if f["status"] == _BAD_REQUEST else [
                ("server", "stmp-payload-length", f"the server answered a stream that ended inside a message with "
                 f"{_show(f)}, not BadRequest (0x20) or just a close")]
        if peer in self.blind:
            return []  # the request may be in what the rules could not see
        if side == "client" and self.negotiation != "open":
            return []
        if f["id"] in self.responses_sent[peer]:
            return [(side, "stmp-response-fields", f"{_show(f)} replies to a Response the {peer} sent (ID {f['id']:#x}): "
                     "a Response is not answered", peer)]
        if self.services and side == "server" and self.client_last[0] == "notify" \
                and self.client_last[1] != _NOTIFY_ECHO:
            return [(side, "stmp-notify-no-reply", f"{_show(f)} answers no Request of the client's: it came after the "
                     f"client's Notify ACTION {self.client_last[1]:#x}, which the test service never answers", peer)]
        return [(side, "stmp-reply-id", f"{_show(f)} answers no outstanding request of the {peer} with ID {f['id']:#x}",
                 peer)]

    def _answered(self, side: str, request_id: int) -> None:
        waiting = self.outstanding[side]
        waiting[request_id] -= 1
        if waiting[request_id] <= 0:
            del waiting[request_id]  # a long connection holds only what is outstanding

    def _after_must_close(self, f):
        if f["kind"] == "ping":
            return []
        if f["kind"] == "response" and self.outstanding["client"][f["id"]] > 0:
            self.unknown_actions.pop(f["id"], None)
            self._answered("client", f["id"])  # a reply to a request before the bad bytes
            return []
        if f["kind"] == "response" and self.error_reply_allowed and f["status"] != _OK:
            self.error_reply_allowed = False
            return []
        requirement, why, _ = self.must_close
        return [("server", requirement, f"the server sent {_show(f)} after {why}: it must close the connection")]

    def _close_required(self, requirement: str, why: str, ts: float) -> None:
        if self.must_close is None:
            self.must_close = (requirement, why, ts)

    # -- the client's bad bytes, ends, heartbeats -----------------------------------------------

    def on_error(self, side: str, exc, ts: float):
        if exc.code == "too-large":
            # over our reader's limit, not the spec's: the peer may answer it 0x26 with its ID (or 0)
            self.outstanding[side][getattr(exc, "message_id", None) or 0] += 1
            self.oversized = self.oversized or side == "client"  # ... and may close for it: not judged
            return []
        out = super().on_error(side, exc, ts)
        if side == "client" and out and self.closed.get("server") is None and "client" not in self.blind:
            self._close_required(out[0][1], f"the client sent invalid bytes ({exc.code})", ts)
            self.error_reply_allowed = True
        return out

    def on_end(self, side: str, ts: float, how: str, pending: int):
        out = self._silent_client(ts, False)
        if self.quiet_since is not None:
            out += self._test_client_silent(ts, f"then the {side} closed ({how})")
            self.quiet_since = None
        if side == "client" and self.stray is not None and "server" not in self.closed:
            out += self._closed_on_a_stray(ts, how)
        if self.test_client and not self.blind and "client" not in self.closed:
            case = self.request_case
            out += case.still_open(ts, f"then the {side} closed ({how})")
            if side == "client" and case.waiting is not None:
                outstanding = self.outstanding["client"].get(case.waiting[1], 0) > 0
                out += case.client_closed(ts, how, outstanding and "server" not in self.closed
                                          and self.must_close is None)
        if side == "server" and "server" not in self.closed:
            out += self._refusal_never_sent(ts, how) + self._closed_on_live_client(ts, how)
        self.closed.setdefault(side, ts)
        self.cut_short = self.cut_short or side == "client" and pending > 0
        out += self._heartbeat(side, ts) if side == "client" else []
        if side == "client" and self.must_close is not None and "server" not in self.closed:
            requirement, why, since = self.must_close
            if ts - since >= self.prompt:  # sooner, the client may just not have waited for the close
                out.append(("server", requirement,
                            f"the server kept the connection open {ts - since:.3f} s after {why}; the client closed it ({how})"))
        return out

    def _test_client_silent(self, ts: float, then: str):
        """A test client silent since the negotiation's Ok for the first-ping window, the connection open."""
        since = self.quiet_since
        if ts - since < self.first_ping_window or self.blind or self.closed or self.must_close is not None:
            return []
        self.quiet_since = None
        return [("client", "stmp-heartbeat-send",
                 f"the client sent nothing for {ts - since:.3f} s after the negotiation's Ok while the connection was "
                 f"open; a test case moves at once, or (heartbeat) pings at an interval no longer than the suite's "
                 f"{self.interval:g} s; {then}")]

    def _closed_on_a_stray(self, ts: float, how: str):
        """A test client closing with a Request unanswered after a Response to an ID it never used."""
        waiting = sorted(i for i, n in self.outstanding["client"].items() if n > 0)
        if not waiting or self.blind or self.must_close is not None:
            return []
        when, stray = self.stray
        return [("client", "stmp-response-fields",
                 f"the client closed ({how}) with its Request ID {waiting[0]:#x} unanswered, {ts - when:.3f} s after "
                 f"the server's Response to ID {stray:#x}, which it never used: a Response to an unknown ID is "
                 "dropped and the receiver neither fails nor closes, and a test case closes only once it has its "
                 "answers")]

    def _refusal_never_sent(self, ts: float, how: str):
        """The server ends its stream, the client's first message (not the negotiation) still unanswered a
        prompt after it arrived: that message is owed BadRequest (0x20) and a close, and after its own end
        the server can send no BadRequest ('later' is over).  Sooner, the server may have closed for its own
        reasons (its pre-negotiation timeout, any close) before it read the message."""
        since = self.refusal_owed
        if since is None or self.blind or ts - since < self.prompt:
            return []
        return [("server", "stmp-negotiation-request",
                 f"the server ended the connection ({how}) {ts - since:.3f} s after the client's first message, "
                 "which was not the negotiation, without answering it: a message before negotiation gets "
                 "BadRequest (0x20), then the close")]

    def _closed_on_live_client(self, ts: float, how: str):
        """With the test services on: the service closes a negotiated connection only for a reason the
        profile names (an error it must close for, or its heartbeat timeout, the run's), and any message
        received restarts that timeout.  Its close less than that timeout after the client's last whole
        message, nothing owed a close, breaks stmp-heartbeat-timeout (it counted only some traffic)."""
        if (not self.services or self.negotiation != "open" or self.must_close is not None or self.closed
                or self.oversized or self.blind or "client" not in self.readers or self.readers["client"].pending):
            return []
        last = self.last_sent["client"]
        if not last or ts - last >= self.service_timeout:
            return []
        return [("server", "stmp-heartbeat-timeout",
                 f"the server closed ({how}) {ts - last:.3f} s after the client's last message, within the test "
                 f"service's heartbeat timeout ({self.service_timeout:g} s): any message received, not only a Ping, "
                 "restarts it, and the service closes a negotiated connection for no other reason unless an "
                 "error required it")]

    def _heartbeat(self, side: str, ts: float):
        """A server silent for two heartbeat intervals while the connection is open breaks
        stmp-heartbeat-send (checked when its peer next shows up, so capture ends do not count)."""
        if self.negotiation != "open" or self.must_close is not None or "server" in self.closed or "server" in self.blind:
            return []
        last = self.last_sent["server"]
        if last and ts - last > 2 * self.interval:
            self.last_sent["server"] = ts  # once per silence
            return [("server", "stmp-heartbeat-send",
                     f"the server sent nothing for {ts - last:.3f} s while the connection was open "
                     f"(heartbeat interval {self.interval:g} s)")]
        return []

    def _silent_client(self, ts: float, joined_frame: bool):
        """A server still there (it sends, or the client closes first) longer than its heartbeat
        timeout after the client's last bytes breaks stmp-heartbeat-timeout.  Judged only where
        the client sent nothing since its last whole message (TCP: part of a message, its
        arrival time unseen, is traffic) and never before negotiation (a MAY then)."""
        if (self.timed_out or self.negotiation != "open" or self.must_close is not None or self.closed
                or self.blind or "client" not in self.readers):
            return []
        reader = self.readers["client"]
        if reader.pending or joined_frame and reader.joined:
            return []
        last = self.last_sent["client"]
        if last and ts - last > self.timeout + self.timeout_slack:
            self.timed_out = True
            return [("server", "stmp-heartbeat-timeout",
                     f"the server kept the connection {ts - last:.3f} s after the client's last bytes "
                     f"(heartbeat timeout {self.timeout:g} s)")]
        return []


def _show(f) -> str:
    parts = [f["kind"].capitalize()]
    for name in ("id", "action", "status"):
        if name in f:
            parts.append(f"{name.upper()} {f[name]:#x}")
    return " ".join(parts)
