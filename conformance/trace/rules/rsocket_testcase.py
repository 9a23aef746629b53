"""RSocket's client-role `stream` test case (docs/profiles/rsocket.md, "Test service (server
role)") as a capture shows it broken, for a capture of a conformance run only (``Rules.services``):
elsewhere a client's application may want two items of five and close.

A client of a conformance run whose SETUP (stream 0) is followed by REQUEST_STREAM `range:5` with
an initial request-n of 2 and no metadata, as its first request, runs `stream`: it sends a
REQUEST_N of 2 each time it has taken the PAYLOADs it asked for, and exits 0 when the stream
completes with `0` to `4` in order; an ERROR answering the request, or a connection that ends
first, makes it exit 1.  So its application is not done while the stream is open: the items the
server sends it in order and within credit (PAYLOAD with N, no C, data `k` for the k-th) are no
reason to end the connection.

Proven, for resumption (conformance/trace/sessions/rsocket.py): the k-th REQUEST_N of 2 comes once
the test case has taken the first 2k items, so the client received the server's frames up to the
end of the 2k-th (the `resume` test case runs the same exchange on a SETUP with R): a RESUME
naming less breaks rsocket-resume-client-first-frame.  Counted on the SETUP connection only, from
items in order whose positions the rules counted.

Judged: a frame the client must ignore (the rules' ``_Ignorable``: a setup ERROR once the
connection is established, a SETUP, an EXT with I, ...) followed by nothing but such items and
then the client's close (FIN) within the rules' reaction time, with the stream still open and
the server's side open: the close answers the frame to ignore.  A client frame in between (its
move went on), any other server frame, a second request, or a gap ends the judging of that frame.

On a connection a suite capture names as the target's client (``Rules.test_client``), the
`request-response` test case (its first request a REQUEST_RESPONSE) exits as soon as its request
is answered, and its exit ends the connection; the suite waits ``reply_ms`` for it.  A later packet
``reply_ms`` or more after the answer, with the client's side still open, proves it did not take
that answer as the end (``ResponseCase``): filed under what the answer exercised, an ERROR
[APPLICATION_ERROR] on the stream (rsocket-application-error-stream) or a PAYLOAD with N and no C
(rsocket-response-payload-complete); a plain answer's stall breaks only the test case.  It waits for
its answer at least ``reply_ms``: its close sooner, the answer begun in fragments and not finished,
took a fragment for the whole answer (filed under what client-joins-fragments tests).  Likewise a
SETUP the server rejects (ERROR[INVALID_SETUP], [UNSUPPORTED_SETUP] or [REJECTED_SETUP] on stream 0)
ends any case: a test client still open ``close_ms`` later breaks rsocket-client-setup-rejected.
And its `stream` case asks for more at once: a test client that has taken the items it asked for,
range:5 not done, silent ``expect_ms`` without a REQUEST_N breaks rsocket-reactive-streams.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from reference_impl.rsocket import codec

#: the `stream` test case's request (the profile): data route `range:5`, initial request-n 2
_RANGE, _ITEMS, _INITIAL_N = b"range:5", 5, 2


@dataclass
class StreamCase:
    """One connection's client against the `stream` test case; ``active`` once its request is seen."""

    __test__ = False  # not a pytest class

    stream: int | None = None
    active: bool = False
    off: bool = False  # not (or no longer) judged: another request, a second one, a gap
    items: int = 0
    credit: int = 0
    kept: object = None  # the rules' _Ignorable the client received, with only ordinary items since
    #: each ordinary item's end as the server's implied position (None: not counted); None: no more proofs
    ends: list | None = field(default_factory=list)
    asked: int = 0  # the client's REQUEST_Ns of 2 so far
    taken: int = 0  # the server position the client proved it received: the end of the items it took
    due: float | None = None  # when the item that used up the credit came: a REQUEST_N of 2 is owed

    def client(self, f: dict, first_request: bool) -> None:
        self.kept = None  # the client moved after it: its close is not its next move
        kind = f["type"]
        if kind.startswith("REQUEST_") and kind != "REQUEST_N":
            if first_request and kind == "REQUEST_STREAM" and f["data"] == _RANGE and f["n"] == _INITIAL_N \
                    and f.get("metadata") is None and not self.off:
                self.stream, self.active, self.credit = f["stream"], True, _INITIAL_N
            else:
                self.stop()  # another request: the client runs another test case, or more than one
        elif kind == "REQUEST_N" and f["stream"] == self.stream:
            self.credit += f["n"]
            self.due = None
            self._took(f["n"])
        elif kind in ("CANCEL", "ERROR") and f["stream"] in (self.stream, 0):
            self.stop()

    def _took(self, n: int) -> None:
        """A REQUEST_N comes once the test case has taken the PAYLOADs it asked for: after the k-th
        (each of 2) it took the first 2k items, so it received the server's frames up to the end of the
        2k-th.  A REQUEST_N of another n is not the test case's: nothing more is proven."""
        if not self.active or self.ends is None:
            return
        self.asked += 1
        taken = 2 * self.asked
        if n != _INITIAL_N or len(self.ends) < taken or self.ends[taken - 1] is None:
            self.ends = None
            return
        self.taken = max(self.taken, self.ends[taken - 1])

    def server(self, f: dict, to_ignore, end: int | None = None, ts: float = 0.0) -> None:
        """``to_ignore``: the _Ignorable this frame gave the client, or None; ``end``: the frame's
        end as the server's implied position, where the rules count it."""
        if not self.active:
            return
        if self._ordinary_item(f):
            self.items += 1
            if self.ends is not None:
                self.ends.append(end)
            if self.items == self.credit:
                self.due = ts
            return
        if f["type"] in ("PAYLOAD", "ERROR") and f["stream"] == self.stream:
            self.stop()  # the stream's end (or an item the test case may stop on): the client may close
            return
        self.kept = to_ignore

    def _ordinary_item(self, f: dict) -> bool:
        return (f["type"] == "PAYLOAD" and f["stream"] == self.stream and f["next"] and not f["complete"]
                and self.items < min(self.credit, _ITEMS - 1) and f.get("metadata") is None
                and bytes(f.get("data") or b"") == str(self.items).encode())

    def stop(self) -> None:
        self.active, self.off, self.kept, self.due = False, True, None, None

    def request_n_stalled(self, ts: float, wait: float) -> tuple[str, str] | None:
        """(requirement, message) when ``ts`` proves a test client silent ``wait`` or longer with the
        credit it asked for used up and items of range:5 still to come (the case asks for more at once)."""
        if not self.active or self.due is None or ts - self.due < wait:
            return None
        due, self.due = self.due, None
        return ("rsocket-reactive-streams", f"the client's `stream` test case sent no REQUEST_N for "
                f"{ts - due:.3f} s after it had all {self.items} items it asked for on stream {self.stream}, with "
                f"{_ITEMS - self.items} of range:5 to come: the case asks for 2 more at once (the suite waits "
                f"{wait:g} s)")

    def closed(self, ts: float, reaction: float, server_ended: bool) -> tuple[str, str] | None:
        """The client closed (FIN) at ts: (requirement, message) if the close answers a frame to ignore."""
        kept, self.kept = self.kept, None
        if not self.active or kept is None or server_ended or ts - kept.ts >= reaction:
            return None
        return (kept.requirement, f"the client closed the connection {1000 * (ts - kept.ts):.0f} ms after "
                f"{kept.what}, which it must ignore, with its `stream` test case's range:5 on stream {self.stream} "
                f"open after {self.items} of 5 items (only items in order came since; the test case takes them and "
                "asks for more)")

    def taken_why(self) -> str:
        return (f"its `stream` test case sent REQUEST_N {self.asked} time(s) on stream {self.stream}, so it had "
                f"taken the first {2 * self.asked} items of range:5, which end at server position {self.taken}")


#: what an answer to the `request-response` test case exercised, by kind
_ANSWERED = {"error": "rsocket-application-error-stream", "without C": "rsocket-response-payload-complete"}


@dataclass
class ResponseCase:
    """One connection's test client against the `request-response` test case."""

    __test__ = False  # not a pytest class

    stream: int | None = None
    off: bool = False
    answered: float | None = None  # when the server answered the request
    answer: str = ""  # "error", "without C" or "complete"
    asked: float = 0.0  # when the client sent its request

    def client(self, f: dict, first_request: bool, ts: float = 0.0) -> None:
        kind = f["type"]
        if kind.startswith("REQUEST_") and kind != "REQUEST_N":
            if first_request and kind == "REQUEST_RESPONSE" and self.stream is None:
                self.stream, self.asked = f["stream"], ts
            else:
                self.off = True  # another case, or more than one request
        elif kind in ("CANCEL", "ERROR") and f["stream"] in (self.stream, 0):
            self.off = True

    def server(self, f: dict, ts: float) -> None:
        if self.off or self.stream is None or self.answered is not None or f.get("stream") != self.stream:
            return
        if f["type"] == "ERROR":
            self.answered, self.answer = ts, "error" if f["code"] == codec.APPLICATION_ERROR else "other error"
        elif f["type"] == "PAYLOAD" and f["next"]:
            self.answered, self.answer = ts, "complete" if f["complete"] else "without C"
        else:
            self.off = True

    def left_mid_answer(self, ts: float, partial: set[int], wait: float) -> tuple[str, str] | None:
        """(requirement, message) when the client ends the connection within ``wait`` of its request, its
        answer begun in fragments and not finished: the case exits only once answered, and waits that long."""
        if self.off or self.stream is None or self.answered is not None or self.stream not in partial \
                or ts - self.asked >= wait:
            return None
        self.off = True
        return ("rsocket-fragment-metadata-first",
                f"the client's `request-response` test case ended the connection {ts - self.asked:.3f} s after its "
                f"request, its answer on stream {self.stream} begun in fragments (F) and not finished: the case exits "
                f"only once answered and waits at least {wait:g} s for it, so it took a fragment for the whole answer")

    def stalled(self, ts: float, wait: float) -> tuple[str, str] | None:
        """(requirement, message) when ``ts`` proves the client open ``wait`` or longer after its answer."""
        if self.off or self.answered is None or ts - self.answered < wait:
            return None
        self.off = True  # judged once
        requirement = _ANSWERED.get(self.answer)
        if requirement is None:
            return None
        what = ("ERROR[APPLICATION_ERROR] on its stream" if self.answer == "error"
                else "a PAYLOAD with N and no C (the answer: C is implied)")
        return (requirement, f"the client's `request-response` test case still had the connection open "
                f"{ts - self.answered:.3f} s after its request on stream {self.stream} was answered with {what}: the "
                f"case exits once answered (the suite waits {wait:g} s), so it did not take that answer as the end")
