"""RSocket's test service (docs/profiles/rsocket.md, "Test service (server role)") judged from the
wire: only for a capture of a conformance run (``Rules.services``), where a server runs that
service; for other traffic what a route answers is the application's, and nothing here runs.

What the service promises and a capture can prove broken (the server's side):

* a request's route is its data, unless the SETUP named composite metadata and the request's
  metadata carries a routing entry (then its tag); a request whose route the capture cannot
  settle (metadata on a connection whose SETUP it lacks, composite metadata that does not parse,
  a routing entry of several tags or several entries, a route that is not UTF-8) is not judged;
* ``echo:<text>`` (request-response) answers ``<text>`` with the request's metadata: a PAYLOAD
  with N carrying anything else breaks it (an ERROR, a CANCEL or a connection that ends are not
  judged; nor the metadata echoed to a request a routing entry routed);
* APPLICATION_ERROR ``unknown route`` is the answer to a route the service does not have: sent
  for ``echo:``, ``last-fnf`` or ``last-metadata-push`` (request-response) or ``range:<n>``
  (request-stream) it breaks it;
* a channel echoes every item the requester sends and completes only after the requester does:
  a responder's completion (C) that comes after the requester's and leaves the item the
  requester's completing frame carried (N|C, or a REQUEST_CHANNEL with C) unechoed breaks it;
  a channel the requester sent past the credit it was granted is not judged;
* ``last-fnf`` returns the text of the last ``fnf:<text>`` the server received: judged across
  the connections to the server (conformance/trace/sessions/rsocket.py, ``service_facts`` here);
* it sends what it owes without delay (the suite waits ``expect_ms`` for it): an item of
  ``range:<n>`` within the credit granted, and a channel's completion once the requester completed
  (every item echoed within the credit the requester granted).  Owed since it became owed (the
  request, the REQUEST_N, the requester's C) or the service's last frame on the stream, whichever
  is later; judged (``stalls``) only when a later packet of the connection, at least the wait
  after, proves the connection was open that long; the server's close, ERROR, C or CANCEL on the
  stream, and the client's CANCEL or ERROR, end what is owed.  A stall is filed only under what
  the owed frame rests on: an item past the request's own request-n rests on a REQUEST_N
  (rsocket-credits-cumulative), one within it on a request joined from fragments
  (rsocket-request-fragments) or re-using a stream id once 2^31-1 was used
  (rsocket-stream-id-reuse), a channel's completion on the requester's completing frame as above;
  a plain request's stall breaks only the service: not filed.

A wrong answer is a finding only under the requirement the request exercised: a request joined
from fragments (rsocket-request-fragments: the server served less than the joined request),
else one routed by a routing entry (rsocket-mime-not-interpreted: the profile's reading of
composite metadata); a channel's completion under rsocket-f-and-c when the requester's
completing PAYLOAD had F and C (F is ignored: it carried an item), else under
rsocket-seq-channel-initial-complete (the C bit on the requester's last frame, which carried
an item).  Wrong answers to plain requests break only the service, no requirement: not filed.
A side cut by a gap judges nothing from then on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from reference_impl.common.errors import CodecError
from reference_impl.rsocket import codec
from reference_impl.rsocket.metadata import COMPOSITE_MIME, ROUTING_MIME, decode_composite, routing_tags

UNKNOWN_ROUTE = b"unknown route"
#: routes whose answer is never "unknown route", by request type
_KNOWN = {"REQUEST_RESPONSE": re.compile(rb"echo:.*|last-fnf|last-metadata-push", re.S),
          "REQUEST_STREAM": re.compile(rb"range:(0|[1-9][0-9]{0,9})")}
_MAX_N = 2 ** 31 - 1
#: the session key of the facts last-fnf is judged by (a resume token's key is hex: no clash)
FNF_KEY = "test-service last-fnf"
#: a connection's fact keeps this many fnfs and last-fnf answers: past it, it is not whole
FACT_ITEMS = 64


@dataclass
class Route:
    """A request's route as the service reads it, and what the request exercised."""

    route: bytes
    routed: bool  # chosen by a routing entry, not the data
    fragments: int

    def requirement(self) -> str | None:
        if self.fragments > 1:
            return "rsocket-request-fragments"
        return "rsocket-mime-not-interpreted" if self.routed else None

    def why(self) -> str:
        how = "its routing entry" if self.routed else "its data"
        joined = f", joined from {self.fragments} fragments" if self.fragments > 1 else ""
        return f"route {_show(self.route)} (from {how}{joined})"


@dataclass
class _Request:
    kind: str
    route: Route
    metadata: bytes | None


@dataclass
class _Channel:
    items: int = 1  # the REQUEST_CHANNEL's payload is the first item
    echoes: int = 0
    granted: int = 0  # credit the responder granted the requester (REQUEST_N)
    done: str | None = None  # the requirement the requester's completing frame makes: None while open
    judged: bool = True  # False: the requester went past its credit
    credit: int = 0  # credit the requester granted the responder (initial request-n and REQUEST_Ns)
    since: float = 0.0  # when its completion became owed, or the responder's last frame on it
    stopped: bool = False  # the responder sent CANCEL, or a frame on it did not decode: no completion owed

    def owed(self) -> str | None:
        """The requirement the responder's completion rests on, when it is owed (all items echoable)."""
        if not self.done or not self.judged or self.stopped or self.items > self.credit:
            return None
        return self.done


@dataclass
class _Range:
    """A ``range:<n>`` stream: its items owed within the credit the requester granted."""

    count: int  # n: the items the route emits
    initial: int  # the request's request-n
    why: str | None  # the requirement an item within ``initial`` rests on (None: not filed)
    since: float  # when the next item became owed, or the service's last frame on the stream
    credit: int = 0
    sent: int = 0

    def owed(self) -> str | None:
        """The requirement the next item rests on, when one is owed."""
        if self.sent >= min(self.count, self.credit):
            return None
        return "rsocket-credits-cumulative" if self.sent >= self.initial else self.why


@dataclass
class _Fnf:
    ts: float
    kept: bool | None  # its route is fnf:<text> (None: the capture cannot tell)
    text: bytes
    route: Route | None
    where: dict
    refused: bool = False  # the server sent a frame on its stream (e.g. REJECTED): maybe not kept
    settled: float | None = None  # when a server frame proved it had read past this fnf


@dataclass
class TestService:
    """One connection's frames against the test service; ``cut`` is the rules' gapped sides."""

    __test__ = False  # not a pytest class

    composite: bool | None = None  # the SETUP's metadata MIME type is composite (None: no SETUP seen)
    requests: dict[int, _Request] = field(default_factory=dict)  # client stream -> request owed an answer
    channels: dict[int, _Channel] = field(default_factory=dict)
    fnfs: list[_Fnf] = field(default_factory=list)
    fnf_streams: dict[int, int] = field(default_factory=dict)  # stream -> index of the fnf sent on it
    asks: dict[int, dict] = field(default_factory=dict)  # stream -> a last-fnf not yet answered
    answered: list[dict] = field(default_factory=list)  # last-fnf asks with their answer
    settling: dict[int, int] = field(default_factory=dict)  # client stream -> fnfs sent before its request
    first_ts: float | None = None
    overflow: bool = False  # more fnfs or last-fnf answers than a fact keeps
    ranges: dict[int, _Range] = field(default_factory=dict)  # client stream -> a range:<n> stream
    used: set[int] = field(default_factory=set)  # client stream ids its requests used
    top: int = 0  # the highest of them

    def on_frame(self, side: str, f: dict, ts: float, where: dict, cut: dict[str, bool]) -> list:
        if self.first_ts is None:
            self.first_ts = ts
        kind, sid = f["type"], f.get("stream", 0)
        if any(cut.values()):  # what the cut side said may be lost: nothing more is judged here,
            self.requests, self.channels, self.asks, self.ranges = {}, {}, {}, {}
            if side == "server":
                return []  # but the client's fnfs are still its fnfs (the fact's other connections need them)
        if side == "client":
            self._client(f, kind, sid, ts, where)
            return []
        return self._server(f, kind, sid, ts, where)

    # -- the requester ------------------------------------------------------------------------

    def _client(self, f: dict, kind: str, sid: int, ts: float, where: dict) -> None:
        if kind == "SETUP" and self.composite is None and sid == 0:
            self.composite = f["metadata_mime"] == COMPOSITE_MIME
        elif kind in ("CANCEL", "ERROR"):
            self._end(sid)
        elif kind == "REQUEST_N":
            self._grant(sid, f["n"], ts)
        elif kind.startswith("REQUEST_") and (sid in self.requests or sid in self.channels or sid in self.asks
                                              or sid in self.ranges):
            self._end(sid)  # a request on a stream in use: the server ignores it, or breaks another rule
        elif kind in ("REQUEST_RESPONSE", "REQUEST_STREAM", "REQUEST_FNF"):
            self._request(f, kind, sid, ts, where)
        elif kind == "REQUEST_CHANNEL":
            self.settling[sid] = len(self.fnfs)
            self.channels[sid] = _Channel(done=self._carrier(f) if f["complete"] else None,
                                          credit=f["n"], since=ts)
        elif kind == "PAYLOAD" and sid in self.channels:
            channel = self.channels[sid]
            owed = channel.owed()
            self._channel_item(channel, f)
            if owed is None:
                channel.since = ts
        if kind.startswith("REQUEST_") and sid % 2:
            self.used.add(sid)
            self.top = max(self.top, sid)

    def _grant(self, sid: int, n: int, ts: float) -> None:
        """A REQUEST_N of the requester's: credit for a range or channel stream."""
        held = self.ranges.get(sid) or self.channels.get(sid)
        if held is None:
            return
        if held.owed() is None:
            held.since = ts  # what it makes owed is owed from now
        held.credit = min(_MAX_N, held.credit + max(n, 0))

    def _request(self, f: dict, kind: str, sid: int, ts: float, where: dict) -> None:
        route = route_of(f, self.composite)
        if kind == "REQUEST_FNF":
            if len(self.fnfs) >= FACT_ITEMS:
                self.overflow = True
                return
            kept = None if route is None else route.route.startswith(b"fnf:")
            text = route.route[4:] if kept else b""
            self.fnf_streams[sid] = len(self.fnfs)
            self.fnfs.append(_Fnf(ts, kept, text, route, where))
            return
        self.settling[sid] = len(self.fnfs)
        if route is None:
            return
        self.requests[sid] = _Request(kind, route, f.get("metadata"))
        if kind == "REQUEST_STREAM" and _KNOWN[kind].fullmatch(route.route) and _in_range(route.route):
            reused = sid in self.used and self.top >= _MAX_N
            why = ("rsocket-request-fragments" if route.fragments > 1 else
                   "rsocket-stream-id-reuse" if reused else None)
            self.ranges[sid] = _Range(int(route.route[6:]), f["n"], why, ts, credit=f["n"])
        if kind == "REQUEST_RESPONSE" and route.route == b"last-fnf":
            self.asks[sid] = {"ts": ts, "before": len(self.fnfs)}

    @staticmethod
    def _carrier(f: dict) -> str:
        return "rsocket-f-and-c" if f.get("f_and_c") else "rsocket-seq-channel-initial-complete"

    def _channel_item(self, channel: _Channel, f: dict) -> None:
        if channel.done is not None:
            return  # after the requester's C: to be ignored
        if f["next"]:
            channel.items += 1
            channel.judged = channel.judged and channel.items - 1 <= channel.granted
        if f["complete"]:
            channel.done = self._carrier(f) if f["next"] else ""  # "": C alone carried no item

    # -- the responder ------------------------------------------------------------------------

    def _server(self, f: dict, kind: str, sid: int, ts: float, where: dict) -> list:
        if sid in self.settling:  # it read the request on this stream, so every fnf sent before it
            for fnf in self.fnfs[:self.settling.pop(sid)]:
                fnf.settled = ts if fnf.settled is None else fnf.settled
        if sid in self.fnf_streams:
            self.fnfs[self.fnf_streams.pop(sid)].refused = True
        out = []
        if sid in self.ranges:
            self.ranges[sid].since = ts
            self.ranges[sid].sent += kind == "PAYLOAD" and bool(f["next"])
        if sid in self.channels:
            self.channels[sid].since = ts
            out = self._channel_answer(sid, self.channels[sid], f, kind)
        elif sid in self.requests:
            out = self._answer(sid, self.requests.pop(sid), f, kind)
        if sid in self.asks:
            ask = self.asks.pop(sid)
            self.overflow = self.overflow or len(self.answered) >= FACT_ITEMS
            if kind == "PAYLOAD" and f["next"] and not self.overflow:
                self.answered.append({**ask, "answer": bytes(f["data"]), "answer_ts": ts, "at": where})
        if kind == "PAYLOAD" and f["complete"] or kind == "ERROR":
            self._end(sid)
        elif kind == "CANCEL":  # the responder stopped taking the channel's items: owed nothing more
            self.forget(sid)
        return out

    def _answer(self, sid: int, request: _Request, f: dict, kind: str) -> list:
        route, requirement = request.route, request.route.requirement()
        if requirement is None:
            return []
        if kind == "ERROR" and f["code"] == codec.APPLICATION_ERROR and bytes(f["data"] or b"") == UNKNOWN_ROUTE:
            known = _KNOWN.get(request.kind)
            if known and known.fullmatch(route.route) and _in_range(route.route):
                return [("server", requirement, f"APPLICATION_ERROR 'unknown route' on stream {sid} answering a "
                         f"{request.kind} of {route.why()}, a route the test service has", "client")]
            return []
        if kind == "PAYLOAD" and f["next"] and request.kind == "REQUEST_RESPONSE" and route.route.startswith(b"echo:"):
            text, metadata = route.route[5:], request.metadata or b""
            got, got_metadata = bytes(f["data"]), bytes(f.get("metadata") or b"")
            if route.routed:  # whether its echoed metadata keeps the routing entry is not settled: data only
                got_metadata = metadata
            if (got, got_metadata) != (text, metadata):
                return [("server", requirement, f"the answer on stream {sid} to a REQUEST_RESPONSE of {route.why()} "
                         f"carries {_show(got)} with {len(got_metadata)} bytes of metadata, not {_show(text)} with "
                         f"the request's {len(metadata)}", "client")]
        return []

    def _channel_answer(self, sid: int, channel: _Channel, f: dict, kind: str) -> list:
        if kind == "REQUEST_N":
            channel.granted = min(_MAX_N, channel.granted + f["n"])
            return []
        if kind != "PAYLOAD":
            return []
        channel.echoes += bool(f["next"])
        if not f["complete"] or not channel.done or not channel.judged or channel.echoes >= channel.items:
            return []
        return [("server", channel.done, f"the channel on stream {sid} completed after the requester's completing "
                 f"frame, which carried its item {channel.items}, with {channel.echoes} of its {channel.items} items "
                 "echoed (the test service echoes every item)", "client")]

    def _end(self, sid: int) -> None:
        self.requests.pop(sid, None)
        self.channels.pop(sid, None)
        self.asks.pop(sid, None)
        self.ranges.pop(sid, None)

    # -- what the service owes and did not send ---------------------------------------------------

    def stalls(self, ts: float, wait: float) -> list:
        """A frame the service owes, owed ``wait`` or longer before ``ts`` (a later packet of the
        connection, so the connection was open that long) and not sent: one finding per stream."""
        out = []
        for sid, held in sorted([*self.ranges.items(), *self.channels.items()], key=lambda pair: pair[0]):
            requirement = held.owed()
            if requirement is None or ts - held.since < wait:
                continue
            if isinstance(held, _Range):
                what = (f"item {held.sent} of range:{held.count} on stream {sid}, within the credit of "
                        f"{held.credit} the requester granted" + (" (past its request's request-n of "
                                                                   f"{held.initial}: a REQUEST_N's)"
                                                                   if held.sent >= held.initial else ""))
            else:
                what = (f"the completion of the channel on stream {sid} the requester completed, its "
                        f"{held.items} items within the credit of {held.credit} the requester granted")
            out.append(("server", requirement, f"{what}: not sent {1000 * (ts - held.since):.0f} ms later, "
                        f"past the {1000 * wait:.0f} ms the suite waits for it (the test service sends what "
                        "it owes without delay)", "client"))
            self._end(sid)
        return out

    def forget(self, sid: int | None) -> None:
        """Nothing more is owed on this stream (the responder's CANCEL, a frame on it that did not
        decode: what it meant is unknown); its echoes are still judged."""
        self.ranges.pop(sid, None)
        if sid in self.channels:
            self.channels[sid].stopped = True

    # -- across connections -------------------------------------------------------------------

    def fact(self, complete: bool, last_ts: float, window: float) -> dict:
        """This connection's fnfs and answered last-fnf asks (sessions/rsocket.py ``check_last_fnf``):
        ``complete`` when the capture holds all the client sent on it."""
        return {"kind": "test-service", "first_ts": self.first_ts or 0.0, "last_ts": last_ts, "window": window,
                "complete": complete and not self.overflow,
                "fnfs": [{"ts": x.ts, "kept": x.kept, "text": x.text, "settled": x.settled, "refused": x.refused,
                          "requirement": x.route.requirement() if x.route else None,
                          "why": x.route.why() if x.route else "", "at": x.where} for x in self.fnfs],
                "asks": self.answered}


def route_of(f: dict, composite: bool | None) -> Route | None:
    """The route the test service reads from a request (docs/profiles/rsocket.md, "Test service"),
    or None where the capture cannot settle it."""
    metadata, data, fragments = f.get("metadata"), bytes(f.get("data") or b""), f.get("fragments", 1)
    route, routed = data, False
    if metadata:
        if composite is None:
            return None  # the connection's SETUP is not in the capture
        if composite:
            try:
                entries = [entry for mime, entry in decode_composite(bytes(metadata)) if mime == ROUTING_MIME]
                tags = routing_tags(entries[0]) if len(entries) == 1 else None
            except CodecError:
                return None
            if len(entries) > 1 or tags is not None and len(tags) != 1:
                return None
            if tags:
                route, routed = tags[0], True
    try:
        route.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return Route(route, routed, fragments)


def _in_range(route: bytes) -> bool:
    return not route.startswith(b"range:") or int(route[6:]) <= _MAX_N


def _show(data: bytes) -> str:
    text = data.decode("utf-8", "replace")
    return repr(text if len(text) <= 40 else text[:40] + "...")
