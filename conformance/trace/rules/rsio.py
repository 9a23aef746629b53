"""rsio from the wire: every message of both roles through the harness's reader (the reference
codec; split parts shown one by one as well), then the draft's rules a capture shows:

* hellos: version 0; a side that receives another version sends goodbye and closes;
* invalid bytes: the receiver sends goodbye and closes (docs/profiles/rsio.md);
* goodbye: acknowledged by the peer's goodbye, then the close; nothing for a stream after a
  side's own goodbye (it closed them all);
* the client's streams (counted with the reference connection's own Demand): no element beyond
  demand, none after cancel beyond what the client had granted, request(0) never sent and a
  stream it reaches ends (3.9), no request after cancel, a subscribe on an Id in use answered
  by onError rather than a new subscribed, and no onComplete with a split element unfinished;
* for traffic of a conformance run (``services``), what the test publishers promise
  (rsio_services.py: test/fixed's count and bytes, test/large's one element, test/never's no end),
  and the elements owed at once: on the client's close a wait (reply_ms) after a stream's last
  request or element, a split element left unfinished, or a stream stopped after requests past
  2^63-1 (_stalled);
* in a conformance run's capture (``services``), the test service says goodbye only where the profile
  owes one: its goodbye within prompt_ms of a valid clientHello listing 128 extensions or more (a
  count varint of two bytes), nothing on the connection owing one, misread it (refusal.Refusal);
* on a connection a suite capture names as the target's client (``test_client``): its goodbye (or
  close) within prompt_ms of the server's subscribed with an elementSize, only fixed-size elements
  between and the stream not ended, took valid elements for an error (a case ends only once its
  stream has; refusal.Refusal); the goodbye
  that ends a `fixed`, `large` or `error` test case once its stream was served
  (rsio_testcases.py), and a test client's wait after the goodbye that ends its case in order
  (`hello`, or a judged case's stream served) for the server's (at least silence_ms, as
  client-waits-for-goodbye gives it): a goodbye for something the server sent wrong may close at once.

A side that must answer is judged by what it sends next only where nothing it sent earlier can
still be in flight; else by the close: it closed without the goodbye, or the peer closed a
prompt interval later without seeing one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from conformance.protocols.base import Frame
from conformance.protocols.rsio import ADAPTER, RsioReader
from conformance.trace.rules import Rules as Base, other
from conformance.trace.rules.refusal import Refusal
from conformance.trace.rules.rsio_services import ServicePromises
from conformance.trace.rules.rsio_testcases import TestCase
from reference_impl.rsio import codec
from reference_impl.rsio.connection import LONG_MAX, Demand

_DELIVERIES = frozenset({"onNext", "onNextPacked", "onNextLastPart"})
#: the harness reader's own bounds (a joined element over 64 MiB, over 1024 split elements open at
#: once): the profile bounds neither, so a peer past them breaks nothing
_READER_LIMITS = frozenset({"too-large", "element-too-large", "too-many-partial-elements"})
#: codec errors after which the receiver must say goodbye and close: not our reader's limits, not a
#: type an extension may define (its layout is unknown here), not an overlong varint (a SHOULD)
_NOT_FATAL = _READER_LIMITS | {"unknown-extension-type", "varint-overlong"}


class _Reader(RsioReader):
    """The harness reader, with each onNextPart shown as a frame of its own (the rules count the
    split elements a stream has open)."""

    def _frames(self, message):
        frames = super()._frames(message)
        if isinstance(message, codec.OnNextPart):
            return [Frame({"type": "onNextPart", "subscriber": message.subscriber, "element": message.element}, "")]
        return frames


@dataclass
class _Stream:
    """One subscription of the client, as the wire shows it."""

    demand: Demand
    parts: set[int] = field(default_factory=set)  # split elements begun, not finished
    cancelled: bool = False  # the client sent cancel: its demand is frozen
    zero: float | None = None  # when the client sent request(0): the stream must end with onError, demand frozen
    subscribed: bool = False  # the server answered the subscribe
    duplicate: bool = False  # the client subscribed again on this Id once answered: the server owes onError
    reported: bool = False
    since: float = 0.0  # the latest of its subscribe, subscribed, a request, a whole element: what is owed is owed since
    overflowed: bool = False  # the client's requests added up past 2^63-1: its demand is unbounded (3.17)


#: a test/large element of this many bytes or more is a transfer: the suite waits transfer_ms for it
_TRANSFER = 1 << 20


class Rules(Base):
    protocol = "rsio"
    ERRORS = {
        "unknown-type": "rsio-serialization-format",
        "unknown-extension-type": "rsio-extension-type-before-hello",
        "not-extension-type": "rsio-extension-type-before-hello",
        "not-fixed-size": "rsio-fixed-size",
        "element-size-mismatch": "rsio-fixed-size",
    }
    FRAMING = "rsio-message-framing"
    NOT_VIOLATIONS = _READER_LIMITS

    def __init__(self, transport: str, params: dict[str, int]) -> None:
        super().__init__(transport, params)
        self.hello: dict[str, int] = {}  # side -> the version its hello carried
        self.goodbye: dict[str, float] = {}  # side -> when it sent goodbye
        # side -> (requirement, why, since, judged by its next frame): the side must send goodbye and close
        self.must_close: dict[str, tuple[str, str, float, bool]] = {}
        self.streams: dict[int, _Stream] = {}  # the client's subscriber Id -> its stream
        self.prompt = self.suite_wait("prompt_ms")
        # with the test services on: the service says goodbye only where the profile owes one
        self.refused = Refusal("server", "goodbye", self.prompt)
        # ... and a test client only once its case has ended, or where the profile owes one (test_client)
        self.gave_up = Refusal("client", "goodbye", self.prompt)
        self.reported: set[tuple[str, str]] = set()
        self.ended: dict[str, float] = {}
        self.promises = ServicePromises()  # the test services' promises, judged when self.services
        # the suite's waits for an answer it provoked, and for a megabyte or more (the profile's timing)
        self.reply = self.adapter_wait("reply_ms", ADAPTER.params["reply_ms"])
        self.transfer = self.suite_wait("transfer_ms")
        self.testcase = TestCase()  # the test client's case, judged when self.test_client
        self.expect = self.suite_wait("expect_ms")
        # the least a test client waits for the answer to its goodbye: the run's silence_ms (the case
        # client-waits-for-goodbye answers after it), else the shorter of the adapter's (a run against the
        # reference uses its ref_params): never a wait the run did not give
        self.goodbye_wait = self.run_or_lenient(ADAPTER, "silence_ms", min)

    def new_reader(self, side: str):
        return _Reader()

    # -- frames --------------------------------------------------------------------------------

    def on_frame(self, side: str, frame, ts: float):
        f = frame.fields
        kind = f["type"]
        out = self._test_case(side, f, kind, ts) if self.test_client else []
        out += self._frame(side, f, kind, ts)
        if self.test_client:
            out += self._client_gave_up(side, f, kind, ts, out)
        return out + self._refusal(side, f, kind, ts, out) if self.services else out

    def _client_gave_up(self, side: str, f: dict, kind: str, ts: float, out):
        """A test client's goodbye right after the server's subscribed with an elementSize and the
        fixed-size elements after it, before the stream ended, nothing wrong from the server: the
        case ends only once its stream has."""
        self.gave_up.spoil_if(out, "server" in self.goodbye or f.get("version", 0) != 0)
        if side == "client":
            return self.gave_up.refused(ts) if kind == "goodbye" else []
        if kind == "subscribed" and f.get("elementSize"):
            self.gave_up.sent(ts, ("rsio-fixed-size", f"the server's subscribed with elementSize {f['elementSize']} "
                                   "and the fixed-size elements after it"))
        elif kind not in ("onNext", "onNextPacked"):
            self.gave_up.sent(ts, None)  # the stream ended (or something else came): a goodbye may be due
        return []

    def _refusal(self, side: str, f: dict, kind: str, ts: float, out):
        """The test service's goodbye right after a clientHello whose extension count takes a varint of
        two bytes or more, the client's later messages valid and nothing owing a goodbye."""
        self.refused.spoil_if(out, "server" in self.must_close or "client" in self.goodbye or f.get("version", 0) != 0)
        if side == "server":
            return self.refused.refused(ts) if kind == "goodbye" else []
        extensions = f.get("extensions") or ()
        if kind == "clientHello" and len(extensions) >= 128:
            self.refused.sent(ts, ("rsio-message-framing", f"the client's clientHello listing {len(extensions)} "
                                   "extensions (its Array[Id] count a varint of two bytes)"))
        return []  # the client's other valid messages the service takes: a goodbye still answers the hello

    def _frame(self, side: str, f: dict, kind: str, ts: float):
        if kind in ("clientHello", "serverHello"):
            return self._hello(side, f["version"], ts)
        if kind == "goodbye":
            self.goodbye.setdefault(side, ts)
            self.streams.clear()  # a goodbye closes every stream
            self.promises.clear()
            return []
        if side in self.goodbye and "subscriber" in f:
            # its own goodbye closed every stream, and nothing it sends can pass its goodbye on the way
            return self._once(side, "rsio-goodbye-closes-streams", f"the {side} sent {kind} for subscriber "
                              f"{f['subscriber']} after its own goodbye, which closed every stream")
        out = []
        duty = self.must_close.get(side)
        if duty and duty[3] and side not in self.goodbye:
            out += self._once(side, duty[0], f"the {side} sent {kind} after {duty[1]}, not goodbye")
        if side == "client":
            if self.services:
                self.promises.client(f, kind)
            return out + self._client(f, kind, ts)
        if self.services:
            out += self.promises.server(f, kind, "client" in self.ended)
        return out + self._server(f, kind, ts)

    def _hello(self, side: str, version: int, ts: float):
        self.hello[side] = version
        out = [] if version == 0 else [(side, "rsio-version-0", f"the {side}'s hello carries version {version}, not 0")]
        peer = other(side)
        if version != 0 and self.hello.get(peer) == 0:
            # the peer speaks version 0 only as far as the wire shows: it must say goodbye and close; a
            # server answers the client's hello in order, a client may have sent optimistically before
            why = f"the {side}'s hello of version {version}"
            self.must_close.setdefault(peer, ("rsio-wrong-version-goodbye", why, ts, peer == "server"))
        elif version == 0 and self.hello.get(peer, 0) != 0:
            why = f"the {peer}'s hello of version {self.hello[peer]}"
            self.must_close.setdefault(side, ("rsio-wrong-version-goodbye", why, ts, side == "server"))
        return out

    def _client(self, f, kind: str, ts: float):
        sid = f.get("subscriber")
        stream = self.streams.get(sid)
        if kind == "subscribe":
            if stream and not stream.cancelled and stream.zero is None:
                # the old stream keeps its demand (its elements may be in flight); before its subscribed
                # the next subscribed may be that one's
                stream.duplicate = stream.subscribed
            else:  # a new stream; what was granted before a cancel may still be in flight
                carried = stream.demand.outstanding if stream else 0
                self.streams[sid] = _Stream(Demand(f["initialDemand"] + carried), since=ts)
        elif kind == "request":
            out = []
            if f["demand"] == 0:
                out.append(("client", "rsio-reactive-streams-demand",
                            f"the client sent request(0) for subscriber {sid} (rule 3.9: demand is positive)"))
            if stream and stream.cancelled:
                out.append(("client", "rsio-cancel", f"the client sent request({f['demand']}) for subscriber {sid} "
                            "after it cancelled that stream"))
            elif stream and f["demand"] == 0:
                stream.zero = ts if stream.zero is None else stream.zero
            elif stream and stream.zero is None:
                stream.overflowed |= stream.demand.outstanding + f["demand"] > LONG_MAX
                stream.demand.add(f["demand"])
                stream.since = ts
            return out
        elif kind == "cancel" and stream:
            stream.cancelled = True
        return []

    def _server(self, f, kind: str, ts: float):
        sid = f.get("subscriber")
        stream = self.streams.get(sid)
        if stream is None:
            return []
        if kind in _DELIVERIES:
            stream.since = ts  # the next element is owed from here
        if kind == "subscribed" and not stream.duplicate:
            stream.subscribed = True
            stream.since = ts
        elif kind == "subscribed":
            stream.duplicate = False
            return [("server", "rsio-id-reuse-guarantee", f"the server answered a subscribe on Id {sid}, still in use, "
                     "with subscribed, not onError", "client")]
        if kind in ("onComplete", "onError"):
            del self.streams[sid]
            if kind == "onComplete" and stream.parts and not stream.cancelled:
                return [("server", "rsio-split-joined", f"onComplete for subscriber {sid} with split element(s) "
                         f"{sorted(stream.parts)} never finished by onNextLastPart", "client")]
            return []
        if kind == "onNextPart":
            if f["element"] in stream.parts:
                return []
            stream.parts.add(f["element"])
            return self._beyond(stream, sid, kind, len(stream.parts), take=False)
        if kind in _DELIVERIES:
            if kind == "onNextLastPart":
                stream.parts.discard(f["element"])
            return self._beyond(stream, sid, kind, 1, take=True)
        return []

    def _beyond(self, stream: _Stream, sid: int, kind: str, count: int, *, take: bool):
        """An element (or a split element begun) against the stream's demand."""
        if stream.demand.allows(count):
            if take:
                stream.demand.take(count)
            return []
        if stream.reported:
            return []
        stream.reported = True
        if stream.cancelled:
            return [("server", "rsio-cancel", f"{kind} to subscriber {sid} after the client cancelled, beyond the "
                     "demand it had granted before", "client")]
        requirement = "rsio-packed-demand" if kind == "onNextPacked" else "rsio-reactive-streams-demand"
        after = " (its request(0) must end the stream)" if stream.zero is not None else ""
        return [("server", requirement, f"{kind} to subscriber {sid} beyond the demand the client signalled{after}",
                 "client")]

    # -- invalid bytes, ends -------------------------------------------------------------------

    def on_error(self, side: str, exc, ts: float):
        (self.refused if side == "client" else self.gave_up).spoil()  # invalid bytes: a goodbye is owed
        out = super().on_error(side, exc, ts)
        peer = other(side)
        if exc.code not in _NOT_FATAL and peer not in self.blind:
            # judged by the close only: what the peer sent before reading the bytes may follow them
            self.must_close.setdefault(peer, ("rsio-message-framing", f"invalid bytes from the {side} ({exc.code})",
                                              ts, False))
        return out

    def on_end(self, side: str, ts: float, how: str, pending: int):
        if side == "client":
            self.refused.spoil()  # a goodbye may answer the client's end
        peer = other(side)
        out = []
        if self.test_client and peer not in self.ended:
            if side == "client":
                out += self.gave_up.refused(ts, f"closed ({how})")
            if side == "client" and self.testcase.owed() and not self.blind:
                out += self._case_broken(f"{self.testcase.what()}, and the client closed ({how}) without the goodbye "
                                         "that ends the case")
            if side == "client":
                out += self._goodbye_unwaited(ts, how)
            out += self._goodbye_overdue(ts, f"then the {side} closed ({how})")
        self.ended.setdefault(side, ts)
        if side not in self.goodbye and peer not in self.ended:
            # the side closed first without its goodbye: one it owed for a wrong hello or invalid bytes,
            # or the acknowledgement of the peer's goodbye
            if side in self.must_close:
                requirement, why, _, _ = self.must_close[side]
                out += self._once(side, requirement, f"the {side} closed ({how}) after {why} without a goodbye")
            elif peer in self.goodbye:
                out += self._once(side, "rsio-goodbye-orderly", f"the {side} closed ({how}) without acknowledging "
                                  f"the {peer}'s goodbye with its own")
        if peer in self.ended or peer in self.blind:
            return out
        # the peer is still open: did it owe a goodbye (and a close) for a prompt interval?
        if peer in self.must_close:
            requirement, why, since, _ = self.must_close[peer]
            if ts - since >= self.prompt:
                done = "sent goodbye but kept the connection open" if peer in self.goodbye else "sent no goodbye"
                out += self._once(peer, requirement, f"the {peer} {done} for {ts - since:.3f} s after {why}; the "
                                  f"{side} closed it ({how})")
        if side == "client":
            for sid, stream in self.streams.items():
                if stream.zero is not None and not stream.cancelled and ts - stream.zero >= self.prompt:
                    out += self._once("server", "rsio-reactive-streams-demand", f"no onError for subscriber {sid} "
                                      f"{ts - stream.zero:.3f} s after the client's request(0) (rule 3.9); the "
                                      f"client closed ({how})")
        if side == "client" and self.services and not self.blind and not self.goodbye:
            out += self._stalled(ts, how)
        since = self.goodbye.get(side)
        if since is not None and peer not in self.goodbye and ts - since >= self.prompt:
            out += self._once(peer, "rsio-goodbye-orderly", f"no goodbye from the {peer} {ts - since:.3f} s after the "
                              f"{side}'s; the {side} closed ({how})")
        return out

    def _test_case(self, side: str, f: dict, kind: str, ts: float):
        """The test client's case (rsio_testcases.py): a frame a wait after its stream was served
        with no goodbye yet proves the wait (judged before the frame, which may be that goodbye)."""
        out = self._goodbye_overdue(ts, f"then the {side} sent {kind}")
        if side == "client":
            self.testcase.client(f, kind)
        else:
            self.testcase.server(f, kind, ts)
        return out

    def _goodbye_overdue(self, ts: float, then: str):
        case = self.testcase
        if not case.owed() or self.blind or ts - case.served < self.expect:
            return []
        return self._case_broken(f"{case.what()}, and the client sent no goodbye in {ts - case.served:.3f} s "
                                 f"(the suite waits {self.expect:g} s for it); {then}")

    def _goodbye_unwaited(self, ts: float, how: str):
        """A test client closing sooner than ``goodbye_wait`` after the goodbye that ends its case, unanswered."""
        since = self.goodbye.get("client")
        if since is None or "server" in self.goodbye or self.blind or "client" in self.must_close \
                or not self.testcase.ends_in_order() or ts - since >= self.goodbye_wait:
            return []
        return self._once("client", "rsio-goodbye-orderly", f"the client closed ({how}) {1000 * (ts - since):.0f} ms "
                          "after its goodbye, before the server's goodbye answered it: a test case waits for that "
                          f"answer (at least {1000 * self.goodbye_wait:.0f} ms, the run's silence_ms)")

    def _case_broken(self, message: str):
        self.testcase.off = True  # judged once
        requirement = self.testcase.requirement()
        return self._once("client", requirement, message) if requirement else []

    def _stalled(self, ts: float, how: str):
        """With the test services on, the client closing while the server has sat on an element of a
        test publisher it owes (demand for it, the stream open) the suite's wait or longer: judged
        where the catalogue names what the silence shows (rsio_services.py)."""
        out = []
        for sid, stream in self.streams.items():
            promise = self.promises.owes(sid)
            if promise is None or not stream.subscribed or stream.cancelled or stream.zero is not None \
                    or stream.duplicate or not stream.demand.allows(1):
                continue
            wait = self.transfer if promise.size >= _TRANSFER else self.reply
            if ts - stream.since < wait:
                continue
            silent = f"the server sent nothing more for subscriber {sid} in {ts - stream.since:.3f} s"
            if stream.parts:
                out += self._once("server", "rsio-split-joined", f"{silent}, split element(s) {sorted(stream.parts)} "
                                  "begun and not finished though the demand that let them begin covers them whole "
                                  f"(parts count as one element); the client closed ({how})")
            elif stream.overflowed:
                owed = promise.count - promise.elements
                out += self._once("server", "rsio-reactive-streams-demand", f"{silent}, {owed} "
                                  "element(s) still owed after the client's requests added up "
                                  f"past 2^63-1 (unbounded demand, rule 3.17); the client closed ({how})")
        return out

    def _once(self, side: str, requirement: str, message: str):
        if (side, requirement) in self.reported:
            return []
        self.reported.add((side, requirement))
        return [(side, requirement, message)]

    def on_gap(self, side: str) -> None:
        super().on_gap(side)
        self.testcase.off = True  # a goodbye, or frames that change what was served, may be in what is not seen
        if side == "client":
            self.streams.clear()  # requests may be in what is not seen
            self.promises.clear()  # and so may a subscribe reusing an Id, or a cancel
