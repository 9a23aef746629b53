"""rsio's test services (docs/profiles/rsio.md, "Test service (server role)") as a capture shows
them broken, for traffic of a conformance run only (Rules.services): in other traffic a
publisher named test/... promises nothing.

* test/fixed/N/SIZE: N elements, byte i of element k being (k+i) mod 256: an element past the
  N-th, or element k with other bytes, breaks rsio-fixed-size;
* test/large/SIZE: one element of SIZE bytes, byte i being i mod 256, however split: an element of
  another length or other bytes, or a second element, breaks rsio-split-joined (a server that
  sends the parts as elements of their own, or labels them as several elements, gives those);
* elements owed without delay (the profile's timing; the suite waits `reply_ms` for an answer,
  `transfer_ms` for a megabyte or more): a stream of test/range/N, test/fixed/N/SIZE or
  test/large/SIZE with demand for its next element, silent that long, is judged only where the
  catalogue names what the silence shows (rules/rsio.py, on the client's close): a split element
  begun and not finished (its parts count as one element against demand: rsio-split-joined), or
  requests adding up past 2^63-1 (unbounded demand, not a wrapped sum: rsio-reactive-streams-demand);
* test/never: no elements and no end: an onComplete after the client shut its side of the
  transport breaks rsio-transport-closed-release (SHOULD; as the case that closes on a
  test/never stream judges it), unless the client had cancelled or sent request(0) first.  An
  onError may end it: a subscribe on the Id in use, request(0) and a release on the close all
  end a stream with onError.

Only a stream whose every element the capture shows is judged: its subscribe is the first on its
Id in the connection (a reused Id's earlier stream may still have elements in flight), the
server's subscribed for it was seen, elements are counted from there, and a goodbye of either
side (it closes every stream) or a gap in the client's bytes (a subscribe may be in it) ends
the judging.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from reference_impl.rsio.service import pattern  # the profile's bytes: byte i is (start + i) mod 256

_NUMBER = "(0|[1-9][0-9]*)"  # the profile's N and SIZE: decimal, no sign, no leading zero
_RANGE = re.compile(f"test/range/{_NUMBER}")
_FIXED = re.compile(f"test/fixed/{_NUMBER}/{_NUMBER}")
_LARGE = re.compile(f"test/large/{_NUMBER}")


@dataclass
class Promise:
    kind: str  # "range", "fixed", "large" or "never"
    count: int = 0  # elements promised (range, fixed: N, large: 1)
    size: int = 0  # bytes per element
    open: bool = False  # the server's subscribed was seen: elements count from here
    elements: int = 0
    excused: bool = False  # the client cancelled or sent request(0): the stream may end early
    reported: bool = False


def promise_of(publisher: str) -> Promise | None:
    if publisher == "test/never":
        return Promise("never")
    if m := _RANGE.fullmatch(publisher):
        return Promise("range", int(m[1]), 8)
    if m := _FIXED.fullmatch(publisher):
        return Promise("fixed", int(m[1]), int(m[2]))
    if m := _LARGE.fullmatch(publisher):
        return Promise("large", 1, int(m[1]))
    return None


class ServicePromises:
    """The promises of the client's streams on one connection, and the server's frames against them."""

    def __init__(self) -> None:
        self.promises: dict[int, Promise] = {}
        self.used: set[int] = set()  # Ids the client subscribed on

    def clear(self) -> None:
        self.promises.clear()

    def owes(self, sid: int) -> Promise | None:
        """The promise of subscriber ``sid``'s stream while it still owes elements: answered with
        subscribed, not excused (cancel, request(0)), fewer elements than promised seen."""
        promise = self.promises.get(sid)
        if promise is None or promise.kind == "never" or not promise.open or promise.excused:
            return None
        return promise if promise.elements < promise.count else None

    def client(self, f: dict, kind: str) -> None:
        sid = f.get("subscriber")
        if kind == "subscribe":
            if sid in self.used:  # a reused Id: which stream a later frame belongs to is not certain
                self.promises.pop(sid, None)
                return
            self.used.add(sid)
            promise = promise_of(f["publisher"])
            if promise is not None:
                self.promises[sid] = promise
        elif kind == "cancel" or kind == "request" and f["demand"] == 0:
            if sid in self.promises:
                self.promises[sid].excused = True

    def server(self, f: dict, kind: str, client_ended: bool):
        sid = f.get("subscriber")
        promise = self.promises.get(sid)
        if promise is None:
            return []
        if kind == "subscribed":
            promise.open = True
            return []
        if kind in ("onComplete", "onError"):
            del self.promises[sid]
            if kind == "onComplete" and promise.kind == "never" and promise.open and client_ended \
                    and not promise.excused:
                return [("server", "rsio-transport-closed-release", f"onComplete for subscriber {sid}, a test/never "
                         "stream (no elements and no end), after the client shut its side of the transport: the "
                         "server ended the stream as completed instead of releasing it", "client")]
            return []
        if "value" not in f or not promise.open:
            return []
        promise.elements += 1
        if promise.reported:
            return []
        why = broken_by(promise, f["value"])
        if why is None:
            return []
        promise.reported = True
        requirement = "rsio-fixed-size" if promise.kind == "fixed" else "rsio-split-joined"
        return [("server", requirement, f"{kind} to subscriber {sid}: {why}", "client")]


def broken_by(promise: Promise, value: bytes) -> str | None:
    """Why the element just delivered (counted in ``promise.elements``) breaks the promise, or None."""
    k = promise.elements - 1  # this element's index in the stream
    if promise.kind in ("never", "range"):  # never: wrong too, but no requirement of the catalogue names it
        return None  # range: counted for what is owed (below), its elements' values not judged
    if promise.kind == "fixed":
        name = f"test/fixed/{promise.count}/{promise.size}"
        if k >= promise.count:
            return f"element {k} (0-based) where {name} has {promise.count} elements"
        start, what = k, f"element {k} of {name}"
    else:
        name = f"test/large/{promise.size}"
        if k >= 1:
            return f"a second element where {name} has one element of {promise.size} bytes (however split)"
        start, what = 0, f"the one element of {name}"
    if len(value) != promise.size:
        return f"{what} has {len(value)} bytes, not {promise.size}"
    expected = pattern(start, promise.size)
    if value != expected:
        at = next(i for i in range(len(value)) if value[i] != expected[i])
        return f"{what} has byte {at} = {value[at]}, not ({start} + {at}) mod 256 = {expected[at]}"
    return None
