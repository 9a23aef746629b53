"""rsio's client-role test cases (docs/profiles/rsio.md, "Test cases (client role)") as a capture
shows them broken: only on a connection a suite capture names as the target's client
(``Rules.test_client``, with the test services on), where the client runs a test case against the
suite; elsewhere a client's application may end a session as it likes.

A test client whose first subscribe is `fixed`'s (test/fixed/8/4, initialDemand 8), `large`'s
(test/large/100000, initialDemand 1) or `error`'s (test/error, initialDemand 0) ends its case with
goodbye once the server has served that stream as the test service does: subscribed (elementSize 4
for test/fixed), then test/fixed's 8 elements of 4 bytes (byte i of element k is (k+i) mod 256) or
test/large's one element of 100,000 bytes (byte i is i mod 256, however split), then onComplete;
for test/error, onError.  The suite waits ``expect_ms`` for that goodbye.  Judged: the client
closing without it, or a packet of the connection ``expect_ms`` or more after the stream's end with
no goodbye yet (the suite gave up and closed), filed under what the stream exercised: an element
joined from parts (rsio-split-support), fixed-size elements (rsio-fixed-size), onError
(rsio-on-error).  Not judged: a client that subscribes again, a server goodbye, a stream the
server did not serve in full as promised, a gap in either side's bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

from conformance.trace.rules.rsio_services import Promise, broken_by, promise_of

#: the first subscribe of each judged test case: (publisher, initialDemand) -> its name
_CASES = {("test/fixed/8/4", 8): "fixed", ("test/large/100000", 1): "large", ("test/error", 0): "error"}


@dataclass
class TestCase:
    """One connection's test client, once its first subscribe names a judged case."""

    __test__ = False  # not a pytest class

    name: str = ""
    subscriber: int | None = None
    promise: Promise | None = None  # what the stream must carry (None for test/error)
    off: bool = False  # not (or no longer) judged
    subscribed: bool = False
    parts: bool = False  # an element came joined from parts
    served: float | None = None  # when the stream ended as the test service ends it
    said_goodbye: bool = False
    subscribed_any: bool = False  # the client subscribed (to anything)

    def client(self, f: dict, kind: str) -> None:
        if kind == "goodbye":
            self.said_goodbye = True
        elif kind == "subscribe":
            self.subscribed_any = True
            case = _CASES.get((f["publisher"], f["initialDemand"]))
            if self.name or case is None:
                self.off = True  # a second subscribe, or a case not judged here
            else:
                self.name, self.subscriber = case, f["subscriber"]
                self.promise = promise_of(f["publisher"])

    def server(self, f: dict, kind: str, ts: float) -> None:
        if kind == "goodbye":
            self.off = True  # the server ended the session first: the client answers, not ends its case
        if self.off or not self.name or self.served is not None or f.get("subscriber") != self.subscriber:
            return
        promise = self.promise
        if kind == "subscribed":
            wanted = promise.size if promise is not None and promise.kind == "fixed" else 0
            # a second subscribed, or one of another element size, is not the test service's stream
            self.off = self.subscribed or f["elementSize"] != wanted
            self.subscribed = True
        elif not self.subscribed:
            self.off = True
        elif kind == "onError":
            self.served, self.off = ts, promise is not None
        elif kind == "onComplete":
            done = promise is not None and promise.elements == promise.count
            self.served, self.off = ts, not done
        elif "value" in f and promise is not None:
            self.parts |= kind == "onNextLastPart"
            promise.elements += 1
            self.off = broken_by(promise, f["value"]) is not None
        elif kind != "onNextPart":
            self.off = True

    def owed(self) -> bool:
        """The goodbye is owed: the stream was served as promised and the client has not said it."""
        return not self.off and self.served is not None and not self.said_goodbye

    def ends_in_order(self) -> bool:
        """The client's goodbye ends its case as the profile says (``hello``: no subscribe; or its judged
        stream served as promised), not a goodbye for something the server sent wrong."""
        return not self.subscribed_any or self.served is not None and not self.off

    def requirement(self) -> str | None:
        """What the stream exercised; None for a plain element (the case's promise alone is broken)."""
        if self.name == "error":
            return "rsio-on-error"
        return "rsio-split-support" if self.parts else "rsio-fixed-size" if self.name == "fixed" else None

    def what(self) -> str:
        joined = ", joined from its parts," if self.parts else ""
        how = {"fixed": "test/fixed/8/4's 8 elements and onComplete", "error": "test/error's onError",
               "large": f"test/large/100000's element{joined} and onComplete"}[self.name]
        return f"the server served the `{self.name}` test case's stream as the test service does ({how})"
