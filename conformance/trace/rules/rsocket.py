"""RSocket from the wire: every frame of both roles through the harness's reader (the reference
codec, fragments joined; TCP length-prefixed or one frame per WebSocket message) and, frame by
frame, through the reference wire monitor (reference_impl/rsocket/monitor.py: credit per stream,
saturating at 2^31-1, ended by CANCEL; requests on a stream in use grant nothing; request-n > 0).

A frame that does not decode but whose length is known is reported and skipped, not the end of
that side: the spec tells its receiver what to do with it (drop it when ignorable, answer
ERROR[CONNECTION_ERROR] when its metadata length overruns), and that answer is checked too.

Checked at once: the client's first frame is SETUP 1.x or RESUME on stream 0, with timers above 0,
and its first request (after SETUP) is on stream 1; each side opens streams of its own parity; an
ERROR's code sits on the stream its kind needs and its data is UTF-8; a KEEPALIVE answer echoes
the data of the one that asked for it.

Answers a side owes (``_Owed``): a refused SETUP (another major version, a zero timer) or a first
frame that is not SETUP/RESUME gets ERROR[...] on stream 0 as the server's first frame; a SETUP
with L gets a LEASE (or a refusal); a REQUEST_N of 0 on a live stream (the profile's
pinned reading), a REQUEST_CHANNEL with initial n 0 and a frame whose metadata length overruns get
their ERROR.  A side that completed a request-stream sends no PAYLOAD on it after its COMPLETE
(until a new request re-uses the id).  An answer never
sent is judged only when a side ended the connection and it was watched ``silence_ms`` past
what asked for it: a capture that stops first may just have missed it.

Frames a receiver must ignore (a CANCEL of a stream it does not have, a PAYLOAD or an ERROR on a
stream id above 0 no frame had used in a connection the capture holds from its SETUP, an EXT or a bad frame with I set,
a second SETUP, a SETUP sent to a client, a setup ERROR sent to an established client): the
receiver breaks the rule that says so when its very next move is ERROR[CONNECTION_ERROR] on
stream 0, or a close while a stream it requested is still open, within ``silence_ms`` (and the
SETUP's max lifetime, past which either may be a keepalive timeout), with nothing from the sender
in between and no PAYLOAD it received in that window before: an item or answer handed to its
application may be what made it end the connection (a requester may take two items of five and
close; ERROR[CONNECTION_ERROR] may just say that the connection ends), before or after the frame
to ignore came.  In a conformance run's capture a client running the profile's `stream` test case
wants all five items: the items of its stream in order do not excuse its close (rsocket_testcase.py).

What a frame's content should have been (routing, echoes, reassembled requests, a channel's
echo of its last item, last-fnf) is the test service's promise: judged by rsocket_service.py, and
only for a capture of a conformance run (``services``).  Not checked here (see
tests/trace/test_bug_traces.py, UNSEEN): a side that stays silent where it should have sent (a
stalled credit, a request never answered).  Resumption spans connections: a connection
of a resumable session (SETUP with R, or RESUME) counts each side's implied position and hands
over its part as a session fact (``session_facts``), checked across connections by
conformance/trace/sessions/rsocket.py.
"""

from __future__ import annotations

import hashlib
from collections import deque
from dataclasses import dataclass
from typing import Callable

from reference_impl.rsocket import codec
from reference_impl.rsocket.monitor import Side, WireMonitor
from reference_impl.rsocket.resume import POSITIONED

from conformance.protocols.base import Frame
from conformance.protocols.rsocket import ADAPTER, ERROR_NAMES, RSocketReader
from conformance.trace.rules import Rules as Base, other
from conformance.trace.rules.rsocket_service import FNF_KEY, TestService
from conformance.trace.rules.rsocket_testcase import ResponseCase, StreamCase

_REQUESTS = frozenset({"REQUEST_RESPONSE", "REQUEST_FNF", "REQUEST_STREAM", "REQUEST_CHANNEL"})
_PARITY = {"client": "odd", "server": "even"}
_SETUP_CODES = frozenset({codec.INVALID_SETUP, codec.UNSUPPORTED_SETUP, codec.REJECTED_SETUP, codec.REJECTED_RESUME})
# ERROR codes (Protocol.md, Error Codes) -> the requirement naming the stream they belong on
_ON_ZERO = {0x001: "rsocket-setup-error-stream-zero", 0x002: "rsocket-unsupported-setup-stream-zero",
            0x003: "rsocket-setup-error-stream-zero", 0x004: "rsocket-rejected-resume-stream-zero",
            0x101: "rsocket-connection-error-stream-zero", 0x102: "rsocket-connection-error-stream-zero"}
_ON_STREAM = {0x201: "rsocket-application-error-stream", 0x202: "rsocket-rejected-canceled-stream",
              0x203: "rsocket-rejected-canceled-stream", 0x204: "rsocket-invalid-stream"}
# the wire monitor's rules this module does not already check -> requirement
_MONITOR = {"payload-beyond-credit": "rsocket-reactive-streams", "payload-after-cancel": "rsocket-cancel",
            "payload-for-ignored-request": "rsocket-request-in-use", "request-n-zero": "rsocket-request-n-positive"}
_SIDE = {"client": Side.CLIENT, "server": Side.SERVER}
# a frame its receiver must drop: on a stream its type does not take (by type), else (I set, or a
# PAYLOAD without N or C) the spec's "not accounted for"; rsocket-ignore-flag itself is the MAY of
# closing on a frame without I, so an EXT of unknown type with I set falls here too
_STREAM_CODES = frozenset({"stream-id-zero", "stream-id-nonzero"})
_MISPLACED = {codec.CANCEL: "rsocket-cancel-unknown", codec.PAYLOAD: "rsocket-payload-unknown",
              codec.ERROR: "rsocket-error-unknown", codec.METADATA_PUSH: "rsocket-metadata-push-nonzero"}
_UNACCOUNTED = "rsocket-unaccounted-ignored"
_STOPPERS = frozenset({"frame-too-large", "frame-too-short"})  # a bad length: no frame boundary after it
#: a session fact keeps the server's last positioned frames (what a RESUME may ask again) and its
#: first ones after RESUME_OK (the replay): past this many, a resume is not judged by them
SESSION_FRAMES = 64


class _Reader(RSocketReader):
    """The harness reader, also handing every codec frame to the connection's wire monitor, and
    turning a frame that does not decode (its length known) into an ``INVALID`` frame.

    On a connection of a resumable session (``session["resumable"]``: a SETUP with a token, or a
    RESUME) it counts this side's implied position ("Implied Position": the lengths of its
    positioned frames) and marks each positioned frame it returns with ``pos`` (``_position``),
    a joined message spanning its fragments."""

    def __init__(self, transport: str, monitor: WireMonitor, side: Side, session: dict, mentioned: set) -> None:
        super().__init__(transport)
        self.monitor, self.side, self.session = monitor, side, session
        self.mentioned = mentioned  # stream ids of fragments and of frames that do not decode (None: one unknown)
        self.seen: list = []  # the monitor's violations, handed on with the next frame returned
        self.position = 0  # the implied position of what this side sent
        self.ok_at: int | None = None  # the position when RESUME_OK came (the server's count starts there)
        self._spans: dict[int, tuple] = {}  # stream -> (start, first fragment's end, hash) of a message begun
        self.partial: set[int] = set()  # streams with a message of this side begun in fragments, not finished

    def feed(self, data: bytes | str) -> list[Frame]:
        if self.transport != "tcp":
            return self._decoded(lambda: codec.decode_websocket(data),
                                 lambda: len(data.encode() if isinstance(data, str) else data),
                                 lambda: int.from_bytes(data[4:6], "big"))
        self._decoder.feed(data.encode() if isinstance(data, str) else data)
        out: list[Frame] = []
        while True:
            frames = self._decoded(self._decoder.next_frame, lambda: self._decoder.last_length,
                                   lambda: self._decoder.last_word)
            if frames is None:
                return out
            out += frames

    def _decoded(self, next_frame: Callable, length: Callable[[], int], word: Callable[[], int]) -> list[Frame] | None:
        """The frame ``next_frame`` decodes, as harness frames; ``length`` and ``word``: its length and its
        type-and-flags word (the codec reports F|C as C alone, "Handling the Unexpected"; the test service's
        rules name the F)."""
        try:
            frame = next_frame()
        except codec.FrameError as exc:
            if exc.code in _STOPPERS and self.transport == "tcp":
                raise  # no frame boundary after a bad length; a WebSocket message still ends where it ends
            if exc.stream_id:
                self.monitor.forget(exc.stream_id)
            self.mentioned.add(exc.stream_id)
            fields = {"type": "INVALID", "stream": exc.stream_id, "frame_type": exc.frame_type,
                      "ignore": exc.ignorable, "error": exc}
            return [Frame(fields, f"rsocket frame that does not decode ({exc.code})")]
        if frame is None:
            return None
        if getattr(frame, "follows", False):
            self.mentioned.add(frame.stream_id)  # a message begun: its stream is no longer one never used
            self.partial.add(frame.stream_id)
        else:
            self.partial.discard(getattr(frame, "stream_id", 0))
        self.seen += self.monitor.observe(self.side, frame)
        if isinstance(frame, codec.Resume) or isinstance(frame, codec.Setup) and frame.resume_token is not None:
            self.session["resumable"] = True
        elif isinstance(frame, codec.ResumeOk):
            self.ok_at = self.position
        span = self._position(frame, length()) if self.session["resumable"] else None
        out = self._frames(frame)
        if out and self.seen:
            out[-1].fields["monitor"], self.seen = self.seen, []
        if out and span:
            out[-1].fields["pos"] = span
        if out and getattr(frame, "complete", False) and word() & codec.FLAG_F:
            out[-1].fields["f_and_c"] = True  # the message's last frame had F and C
        return out

    def _position(self, frame, length: int) -> tuple[int, int, str, int] | None:
        """(start, end, digest, end of its first fragment) of a positioned frame or joined message:
        what a side proves it received by answering it is its first fragment.  Only the server's
        frames get a digest (a replay is compared by it)."""
        kind = codec.FRAME_TYPES[type(frame)]
        if kind not in POSITIONED:
            return None
        start = self.position
        self.position += length
        digest = hashlib.blake2b(digest_size=8)
        if self.side is Side.SERVER:
            try:
                digest.update(codec.encode_frame(frame))
            except codec.CodecError:
                digest.update(b"%d" % length)
        sid = frame.stream_id
        if kind in (codec.REQUEST_N, codec.CANCEL, codec.ERROR):  # never fragments; CANCEL and ERROR end one
            if kind != codec.REQUEST_N:
                self._spans.pop(sid, None)
            return start, self.position, digest.hexdigest(), self.position
        begun = self._spans.pop(sid, None)
        if begun is not None:
            begun[2].update(digest.digest())
            first, first_end, digest = begun
        else:
            first, first_end = start, self.position
        if getattr(frame, "follows", False):
            self._spans[sid] = first, first_end, digest
            return None
        return first, self.position, digest.hexdigest(), first_end


@dataclass
class _Owed:
    """An answer the server owes: ``ok`` says whether a server frame is it; ``first``: nothing else may come before."""

    requirement: str
    message: str
    ts: float
    ok: Callable[[dict], bool]
    first: bool = False
    stream: int = 0  # the stream it concerns: the owed answer lapses when the server ends that stream


@dataclass
class _Ignorable:
    """A frame the receiver must ignore, and when it came."""

    requirement: str
    what: str
    ts: float


#: the setup ERROR codes that reject a SETUP (Protocol.md, Error Codes; REJECTED_RESUME answers a RESUME)
_SETUP_REJECTIONS = _SETUP_CODES - {codec.REJECTED_RESUME}


def _error_on_zero(codes) -> Callable[[dict], bool]:
    return lambda f: f["type"] == "ERROR" and f["stream"] == 0 and f["code"] in codes


class Rules(Base):
    protocol = "rsocket"
    ERRORS = {"frame-too-short": "rsocket-frame-length-prefix", "truncated": "rsocket-frame-length-prefix",
              "trailing-bytes": "rsocket-frame-length-prefix", "frame-too-large": "rsocket-max-frame-size",
              "mime-not-ascii": "rsocket-mime-ascii", "mime-null-terminated": "rsocket-mime-not-null-terminated",
              "extended-type-zero": "rsocket-ext-type-positive",
              "metadata-length-overrun": "rsocket-metadata-length-invalid",
              # METADATA_PUSH is drawn with M set: "This frame only supports Metadata" (the profile pins M clear
              # as malformed), so its layout requirement, not the frame length's
              "metadata-push-without-m": "rsocket-metadata-push-no-length"}
    FRAMING = "rsocket-frame-length-prefix"

    def __init__(self, transport: str, params: dict[str, int]) -> None:
        super().__init__(transport, params)
        self.window = params.get("silence_ms", 500) / 1000  # how long a watched side may take to answer
        self.reaction = self.window  # how soon after a frame to ignore an ERROR or close counts as its answer
        # how long the suite waits for what the test service owes (docs/profiles/rsocket.md, "Test service")
        self.expect = self.suite_wait("expect_ms")
        self.leased = False  # the client's SETUP has L
        self.monitor = WireMonitor()
        self.first: str | None = None  # the client's first frame type
        self.set_up = False  # the client's first frame is a SETUP on stream 0 no server may refuse for its fields
        self.refused = False  # the server sent an ERROR on stream 0
        self.served = False  # the server sent a frame that only an established connection carries
        self.client_requested = False
        self.opened: dict[str, set[int]] = {"client": set(), "server": set()}
        self.live: dict[str, dict[int, str]] = {"client": {}, "server": {}}  # streams each side requested, not ended
        self.completed: dict[str, set[int]] = {"client": set(), "server": set()}  # request-streams each side completed
        self.keepalive_asked: dict[str, list[bytes]] = {"client": [], "server": []}  # data each side asked back
        self.owed: list[_Owed] = []
        self.ignorable: dict[str, _Ignorable | None] = {"client": None, "server": None}  # what each must ignore
        self.ended: dict[str, float | None] = {"client": None, "server": None}
        self.delivered: dict[str, float | None] = {"client": None, "server": None}  # each side's last PAYLOAD received
        self.last_ts = 0.0
        self.session = {"resumable": False}  # shared with the readers: they count implied positions
        self.readers: dict[str, _Reader] = {}
        self.fact: dict | None = None  # this connection's part of a resumable session (session_facts)
        self.cut = {"client": False, "server": False}  # a side some of whose frames were not counted
        self.requested: dict[int, int] = {}  # client stream -> where its request ends (implied position)
        self.mentioned: set = set()  # every stream id any frame (or fragment) of either side carried so far
        self.service = TestService()  # judged only when ``services`` is on (read per frame: set after __init__)
        self.stream_case = StreamCase()  # the client's `stream` test case, likewise
        self.response_case = ResponseCase()  # a test client's `request-response` case (``test_client``)
        # the suite's wait for a test client's exit
        self.reply = self.adapter_wait("reply_ms", ADAPTER.params["reply_ms"])
        self.close_wait = self.suite_wait("close_ms")  # ... and for its close once its SETUP is rejected
        self.rejected: tuple[float, str] | None = None  # (when, what) the server rejected the client's SETUP

    def new_reader(self, side: str):
        self.readers[side] = _Reader(self.transport, self.monitor, _SIDE[side], self.session, self.mentioned)
        return self.readers[side]

    # -- frames ------------------------------------------------------------------------------

    def on_frame(self, side: str, frame, ts: float):
        f = frame.fields
        stalled = self._stalls(ts) + self._case_stalled(ts)  # this packet proves the connection open until now
        self.last_ts = max(self.last_ts, ts)
        if self.session["resumable"]:
            self._resumption(side, f, ts)
        peer = other(side)
        out = stalled + [(side, _MONITOR[v.rule], f"{v.rule}: {v.detail}")
                         for v in f.get("monitor", ()) if v.rule in _MONITOR]
        out += self._reaction(side, f, ts)
        self.ignorable[peer] = None  # the peer's next move may answer this frame, not the one to ignore
        if side == "server":
            out += self._answers(f, ts)
        first = side == "client" and self.first is None
        first_request = side == "client" and not self.client_requested
        if first:
            out += self._first(f, ts)
        if f["type"] == "INVALID":
            self.service.forget(f["stream"])
            out += self._invalid(side, f, ts, first)
            self._testcase(side, f, first_request, ts)
            return out
        out += self._stream(side, f, ts)
        if f["type"] == "ERROR":
            out += self._error(side, f, ts)
        elif f["type"] == "KEEPALIVE":
            out += self._keepalive(side, f)
        elif f["type"] == "SETUP" and side == "client" and not first and self.first == "SETUP" and not self.refused:
            self.ignorable["server"] = _Ignorable("rsocket-second-setup", "a second SETUP", ts)
        elif f["type"] == "SETUP" and side == "server":
            self.ignorable["client"] = _Ignorable("rsocket-client-ignores-setup", "a SETUP", ts)
        elif f["type"] == "EXT" and f["ignore"]:
            self.ignorable[peer] = _Ignorable(_UNACCOUNTED, "an EXT with I set", ts)
        if self.services:
            out += self.service.on_frame(side, f, ts, self.where(), self.cut)
        self._testcase(side, f, first_request, ts)
        return out

    def _stalls(self, ts: float) -> list:
        """What the test service owed ``expect`` or longer before ``ts`` and did not send: only for a
        conformance run's capture holding both sides whole from a SETUP the server accepted, with no
        lease (a request may wait for one) and not resumable (the suite drops resumable transports)."""
        if (not self.services or any(self.cut.values()) or not self.set_up or self.first != "SETUP"
                or self.refused or self.leased or self.session["resumable"] or self.ended["server"] is not None):
            return []  # each of these holds for the rest of the connection once it holds
        return self.service.stalls(ts, self.expect)

    def _case_stalled(self, ts: float) -> list:
        """A test client still open ``reply`` after its `request-response` case was answered, ``expect``
        without the REQUEST_N its `stream` case owes, or ``close_wait`` after its SETUP was rejected
        (rsocket_testcase.py)."""
        if not self.test_client or any(self.cut.values()) or self.ended["client"] is not None:
            return []
        found = self.response_case.stalled(ts, self.reply) or self.stream_case.request_n_stalled(ts, self.expect)
        if found is None and self.rejected is not None and ts - self.rejected[0] >= self.close_wait:
            since, what = self.rejected
            self.rejected = None
            found = ("rsocket-client-setup-rejected", f"the client kept the connection open {ts - since:.3f} s after "
                     f"the server rejected its SETUP with {what}: a test case whose SETUP is rejected exits at once "
                     f"(the suite waits {self.close_wait:g} s for the close)")
        return [("client", *found)] if found else []

    def _testcase(self, side: str, f, first_request: bool, ts: float) -> None:
        """The client role's `stream` test case (rsocket_testcase.py): only for a conformance run's capture;
        `request-response` only for a test client."""
        if not self.services:
            return
        if self.test_client:
            if side == "client":
                self.response_case.client(f, first_request and self.set_up, ts)
            else:
                self.response_case.server(f, ts)
        if side == "client":
            self.stream_case.client(f, first_request and self.set_up)
            if self.fact is not None and self.fact["kind"] == "SETUP" and self.stream_case.taken > self.fact["taken"]:
                self.fact["taken"], self.fact["taken_why"] = self.stream_case.taken, self.stream_case.taken_why()
        else:
            pos = f.get("pos")
            end = pos[1] if pos is not None and not self.cut["server"] else None
            self.stream_case.server(f, self.ignorable["client"], end, ts)

    def _first(self, f, ts: float):
        self.first = f["type"]
        self.leased = f["type"] == "SETUP" and bool(f["lease"])
        if f["type"] == "SETUP":
            self.reaction = min(self.reaction, f["lifetime"] / 1000)  # past it, a close may be a keepalive timeout
        if f["type"] == "INVALID" and not (f["frame_type"] in (codec.SETUP, codec.RESUME) and f["stream"]):
            return []  # a first frame that does not decode: the server may call it a CONNECTION_ERROR
        if f["type"] not in ("SETUP", "RESUME") or f["stream"] != 0:
            name = codec.FRAME_NAMES[f["frame_type"]] if f["type"] == "INVALID" else f["type"]
            self.owed.append(_Owed("rsocket-first-frame-invalid-setup", f"the client's first frame is {name}: "
                                   "the server's answer is ERROR[INVALID_SETUP] on stream 0 and a close", ts,
                                   _error_on_zero({codec.INVALID_SETUP}), first=True))
            return [("client", "rsocket-first-frame-setup",
                     f"the client's first frame is {name} on stream {f['stream']}, not SETUP or RESUME on 0")]
        if f["type"] != "SETUP":
            return []
        out, refused = [], []
        if not f["version"].startswith("1."):
            out.append(("client", "rsocket-first-frame-setup", f"a SETUP of version {f['version']}, not 1.x"))
            refused.append(f"version {f['version']}")
        for name, requirement in (("keepalive", "rsocket-keepalive-interval-positive"),
                                  ("lifetime", "rsocket-lifetime-positive")):
            if f[name] == 0:
                out.append(("client", requirement, f"a SETUP with a {name} of 0: it must be above 0"))
                refused.append(f"{name} 0")
        self.set_up = not refused and f["stream"] == 0
        if refused:
            self.owed.append(_Owed("rsocket-setup-refused", f"a SETUP with {', '.join(refused)}: the server's answer "
                                   "is ERROR[INVALID_SETUP|UNSUPPORTED_SETUP] on stream 0", ts,
                                   _error_on_zero({codec.INVALID_SETUP, codec.UNSUPPORTED_SETUP}), first=True))
        elif f["lease"]:
            self.owed.append(_Owed("rsocket-lease-on-setup", "a SETUP with L: an accepting server sends a LEASE",
                                   ts, lambda g: g["type"] == "LEASE" or _error_on_zero(_SETUP_CODES)(g)))
        return out

    def _stream(self, side: str, f, ts: float):
        out, peer, sid = [], other(side), f["stream"]
        if f["type"] in _REQUESTS and sid not in self.opened[peer]:
            self.opened[side].add(sid)
            self.completed["client"].discard(sid)  # a new stream on the id (re-used once 2^31-1 was)
            self.completed["server"].discard(sid)
            if f["type"] != "REQUEST_FNF":
                self.live[side][sid] = f["type"]
            if f["type"] == "REQUEST_CHANNEL" and f["n"] == 0 and side == "client":
                self.owed.append(_Owed("rsocket-request-channel-n-positive", f"a REQUEST_CHANNEL with initial n 0 on "
                                       f"stream {sid}: the server's answer is ERROR[INVALID] on it or "
                                       "ERROR[CONNECTION_ERROR] on 0", ts,
                                       lambda g, s=sid: g["type"] == "ERROR" and g["stream"] in (0, s), stream=sid))
            if f["parity"] != _PARITY[side]:
                out.append((side, "rsocket-stream-id-parity",
                            f"the {side} opened stream {sid} with {f['type']}: {_PARITY[side]} IDs are its own"))
            if side == "client" and not self.client_requested and self.first == "SETUP" and sid != 1:
                out.append(("client", "rsocket-stream-id-client-start",
                            f"the client's first request after SETUP is on stream {sid}, not 1"))
            if side == "client":
                self.client_requested = True
        elif f["type"] == "CANCEL" and sid not in self.live[side] and sid not in self.live[peer]:
            self.ignorable[peer] = _Ignorable("rsocket-cancel-unknown", f"a CANCEL of stream {sid}, not open", ts)
        elif f["type"] == "PAYLOAD" and self._never_used(sid):
            self.ignorable[peer] = _Ignorable("rsocket-payload-unknown",
                                              f"a PAYLOAD on stream {sid}, which no frame had used", ts)
        elif f["type"] == "ERROR" and sid != 0 and self._never_used(sid):
            self.ignorable[peer] = _Ignorable("rsocket-error-unknown", f"an ERROR on stream {sid}, which no frame "
                                              "had used", ts)
        elif f["type"] == "PAYLOAD":
            self.delivered[peer] = ts
        elif f["type"] == "REQUEST_N" and f["n"] == 0 and side == "client" and sid in self.live["client"]:
            self.owed.append(_Owed("rsocket-invalid-stream", f"a REQUEST_N of 0 on stream {sid}: the server's answer is"
                                   f" ERROR[INVALID] on it or ERROR[CONNECTION_ERROR] on 0", ts,
                                   lambda g, s=sid: g["type"] == "ERROR" and g["stream"] in (0, s), stream=sid))
        if f["type"] == "PAYLOAD" and sid in self.completed[side]:
            self.completed[side].discard(sid)  # one finding per stream
            out.append((side, "rsocket-seq-stream-complete", f"a PAYLOAD on stream {sid} after the {side} completed "
                        "that request-stream: its COMPLETE is the stream's last frame (RS -> RQ: COMPLETE)"))
        if f["type"] in ("CANCEL", "ERROR"):
            self.live[side].pop(sid, None)
            self.live[peer].pop(sid, None)
        elif f["type"] == "PAYLOAD" and (f["complete"] or self.live[peer].get(sid) == "REQUEST_RESPONSE"):
            if f["complete"] and self.live[peer].get(sid) == "REQUEST_STREAM":
                self.completed[side].add(sid)
            self.live[peer].pop(sid, None)  # the responder's last PAYLOAD (a response is always the last)
        self.mentioned.add(sid)
        return out

    def _never_used(self, sid: int) -> bool:
        """The capture proves no frame of this connection used ``sid`` before: it holds the connection
        from its SETUP (not a RESUME, which goes on with streams of an earlier connection) with no
        gap, and no frame of either side (a fragment, one that did not decode) carried that id.  Not
        after a SETUP the server may refuse, nor once the server sent an ERROR on stream 0: its
        connection ends, and an ERROR[CONNECTION_ERROR] may say so."""
        return (self.set_up and not self.refused and not any(self.cut.values())
                and sid not in self.mentioned and None not in self.mentioned)

    def _invalid(self, side: str, f, ts: float, first: bool):
        exc, peer = f["error"], other(side)
        if f["ignore"]:
            if not first:
                misplaced = exc.code in _STREAM_CODES
                requirement = _MISPLACED.get(f["frame_type"], _UNACCOUNTED) if misplaced else _UNACCOUNTED
                self.ignorable[peer] = _Ignorable(requirement, f"a frame to ignore ({exc.code})", ts)
            if f["frame_type"] == codec.METADATA_PUSH and exc.code == "stream-id-nonzero":
                return [(side, "rsocket-metadata-push-stream-zero", f"METADATA_PUSH on stream {exc.stream_id}")]
            return []
        self.ignorable[peer] = None  # the peer's answer may be to this frame
        if exc.code == "metadata-length-overrun" and side == "client":
            self.owed.append(_Owed("rsocket-metadata-length-invalid", "a frame whose metadata length overruns it: the "
                                   "server's answer is ERROR[CONNECTION_ERROR] on stream 0", ts,
                                   _error_on_zero({codec.CONNECTION_ERROR})))
        return super().on_error(side, exc, ts)

    # -- what a side owes, and what it must ignore -------------------------------------------

    def _answers(self, f, ts: float):
        out = []
        for owed in list(self.owed):
            if owed.ok(f):
                self.owed.remove(owed)
            elif owed.first and f["type"] != "KEEPALIVE":  # a KEEPALIVE answer may come first
                self.owed.remove(owed)
                out.append(("server", owed.requirement, f"{owed.message}; its first frame after it is {f['type']}"))
            elif owed.stream and f["stream"] == owed.stream and (f["type"] == "ERROR" or f.get("complete")):
                self.owed.remove(owed)  # it ended the stream first (the REQUEST_N may have crossed it)
        if f["type"] in ("LEASE", "PAYLOAD") or f["type"] in _REQUESTS:
            self.served = True
        elif f["type"] == "ERROR" and f["stream"] == 0:
            self.refused = True
        return out

    def _reaction(self, side: str, f, ts: float):
        pending = self.ignorable[side]
        if pending is None:
            return []
        self.ignorable[side] = None
        if f["type"] == "ERROR" and f["stream"] == 0 and f["code"] == codec.CONNECTION_ERROR \
                and ts - pending.ts < self.reaction and not self._prompted(side, ts):
            return [(side, pending.requirement, f"ERROR[CONNECTION_ERROR] on stream 0 answering {pending.what}, "
                     "which the receiver must ignore")]
        return []

    def on_end(self, side: str, ts: float, how: str, pending: int):
        stalled = self._stalls(ts) + self._case_stalled(ts)  # the close proves the connection open until now
        self.ended[side] = ts
        self.last_ts = max(self.last_ts, ts)
        ignored = self.ignorable[side]
        self.ignorable[side] = None
        if ignored and how == "FIN" and ts - ignored.ts < self.reaction and self.live[side] \
                and not self._prompted(side, ts):
            return stalled + [(side, ignored.requirement, f"the {side} closed the connection "
                               f"{1000 * (ts - ignored.ts):.0f} ms after {ignored.what}, which it must ignore, "
                               f"with stream {min(self.live[side])} still open")]
        if self.services and side == "client" and how == "FIN" and not any(self.cut.values()):
            found = self.stream_case.closed(ts, self.reaction, self.ended["server"] is not None)
            if found is None and self.test_client and self.ended["server"] is None and "server" in self.readers:
                found = self.response_case.left_mid_answer(ts, self.readers["server"].partial, self.reply)
            if found is not None:
                return stalled + [("client", *found)]
        return stalled

    def _prompted(self, side: str, ts: float) -> bool:
        """A PAYLOAD the side received shortly before ``ts`` may be what its move answers."""
        return self.delivered[side] is not None and ts - self.delivered[side] < self.reaction

    def on_gap(self, side: str) -> None:
        self.cut[side] = True
        self.stream_case.stop()
        self.owed = []  # the client may have asked, or the server answered, in the bytes not seen
        self.ignorable[other(side)] = None

    def on_finish(self):
        if self.ended == {"client": None, "server": None}:
            return []  # the capture stopped with the connection open: an answer may still be coming
        return [("server", o.requirement, f"{o.message}; it never came") for o in self.owed
                if self.last_ts - o.ts >= self.window]

    # -- resumption: this connection's part of a session (conformance/trace/sessions/rsocket.py) --

    def _resumption(self, side: str, f, ts: float) -> None:
        fact, kind = self.fact, f["type"]
        if fact is None:
            if side == "client" and kind in ("SETUP", "RESUME") and f["stream"] == 0 and self.first is None:
                self.fact = {"first_ts": ts, "kind": kind, "key": bytes(f["resume_token"] or b"").hex(),
                             "lease": bool(f.get("lease")), "window": self.window, "refused": False,
                             "resume": None, "resume_ok": None, "lease_after_ok": False, "rejected_resume": None,
                             "keepalive": {"client": 0, "server": 0}, "answered": 0, "taken": 0, "taken_why": "",
                             "frames": deque(maxlen=SESSION_FRAMES), "after_ok": []}
                if kind == "RESUME":
                    self.fact["resume"] = {"server_position": f["server_position"], "at": self.where(), "ts": ts}
            return
        resumed = fact["kind"] == "RESUME"
        if kind == "INVALID":
            self.cut[side] = True  # a frame that does not decode: its length may or may not count
        elif kind == "KEEPALIVE":
            fact["keepalive"][side] = max(fact["keepalive"][side], f["position"])
        elif side == "server" and kind == "ERROR" and f["stream"] == 0:
            fact["refused"] = fact["refused"] or fact["resume_ok"] is None and f["code"] in _SETUP_CODES
            if (resumed and f["code"] == codec.REJECTED_RESUME and fact["resume_ok"] is None
                    and fact["rejected_resume"] is None and self.ended["client"] is None):
                fact["rejected_resume"] = ts  # before the client ended its side: it was still listening
        elif side == "server" and kind == "RESUME_OK" and resumed and fact["resume_ok"] is None:
            fact["resume_ok"] = {"position": f["position"], "ts": ts, "at": self.where(),
                                 "client_base": self.readers["client"].position}
        elif side == "server" and kind == "LEASE" and fact["resume_ok"] is not None:
            fact["lease_after_ok"] = True
        pos = f.get("pos")
        if pos is None or resumed and fact["resume_ok"] is None:
            return  # not positioned, or before the session's count goes on
        if side == "client" and kind in _REQUESTS and f["stream"] % 2:
            self.requested.setdefault(f["stream"], pos[3])
        elif side == "server":
            if f["stream"] in self.requested:  # an answer proves the server received the request
                fact["answered"] = max(fact["answered"], self.requested.pop(f["stream"]))
            base = self.readers["server"].ok_at or 0 if resumed else 0
            entry = (pos[0] - base, pos[1] - base, pos[2], self.where())  # (start, end, digest, where)
            fact["frames"].append(entry)
            if resumed and len(fact["after_ok"]) < SESSION_FRAMES:
                fact["after_ok"].append(entry)

    def session_facts(self):
        service = []
        if self.services:  # whole: the client's side from its SETUP (or nothing), no gap, not resumable
            whole = self.first in ("SETUP", None) and not self.cut["client"] and not self.session["resumable"]
            service = [(FNF_KEY, self.service.fact(whole, self.last_ts, self.window))]
        return self._resumable_fact() + service

    def _resumable_fact(self):
        fact = self.fact
        if fact is None:
            return []
        base = {"client": 0, "server": 0}
        if fact["resume_ok"] is not None:
            base = {"client": fact["resume_ok"].pop("client_base"), "server": self.readers["server"].ok_at or 0}
        fact.update(frames=list(fact["frames"]), last_ts=self.last_ts, services=self.services,
                    test_client=self.test_client, reply=self.reply,
                    ended=self.ended != {"client": None, "server": None},
                    complete={side: not self.cut[side] for side in self.cut},
                    sent={side: self.readers[side].position - base[side] for side in base},
                    answered=max(0, fact["answered"] - base["client"]))
        return [(fact.pop("key"), fact)]

    # -- single frames -----------------------------------------------------------------------

    def _error(self, side: str, f, ts: float):
        code, stream = f["code"], f["stream"]
        out = []
        if code in _ON_ZERO and stream != 0:
            out.append((side, _ON_ZERO[code], f"ERROR {code:#x} on stream {stream}: its stream is 0"))
        elif code in _ON_STREAM and stream == 0:
            out.append((side, _ON_STREAM[code], f"ERROR {code:#x} on stream 0: it belongs to a stream above 0"))
        try:
            bytes(f.get("data") or b"").decode("utf-8")
        except UnicodeDecodeError:
            out.append((side, "rsocket-error-data-utf8", "ERROR data that is not UTF-8"))
        if side == "server" and stream == 0 and code in _SETUP_CODES and self.served:
            self.ignorable["client"] = _Ignorable("rsocket-client-ignores-setup-errors",
                                                  f"ERROR {code:#x} after the connection was established", ts)
        elif side == "server" and stream == 0 and code in _SETUP_REJECTIONS and self.set_up and self.test_client:
            self.rejected = (ts, f"ERROR[{ERROR_NAMES[code]}]")  # the test client's case ends (_case_stalled)
        return out

    def _keepalive(self, side: str, f):
        peer = other(side)
        if f["respond"]:
            self.keepalive_asked[side].append(bytes(f.get("data") or b""))
            return []
        asked = self.keepalive_asked[peer]
        if not asked:
            return []  # an unasked KEEPALIVE (or one answering what the capture did not show)
        wanted = asked.pop(0)
        if bytes(f.get("data") or b"") != wanted:
            return [(side, "rsocket-keepalive-echo", f"the KEEPALIVE answering the {peer}'s carries "
                     f"{len(f.get('data') or b'')} bytes of data, not the {len(wanted)} it was sent", peer)]
        return []
