"""The RSocket test service (server role), on a sans-IO Connection.

Routes (docs/profiles/rsocket.md, "Test service"; the route is the request's
data as UTF-8, unless the connection's metadata MIME type is composite metadata and the
request's metadata carries a routing entry, whose first tag is then the route):

request-response  ``echo:<text>``        ``<text>`` with the request's metadata
                  ``error:<text>``       APPLICATION_ERROR ``<text>``
                  ``never``              no answer
                  ``last-fnf``           the last fire-and-forget ``<text>``
                  ``last-metadata-push`` the last METADATA_PUSH metadata, as data
request-stream    ``range:<n>``          ``0`` .. ``n-1`` as text, honouring request-n,
                                         the last with C (n = 0: COMPLETE alone)
                  ``error:<text>``, ``never``: as above
request-channel   any                    echoes the initial payload then each PAYLOAD,
                                         passing the requester's credit straight
                                         back; completes after the requester does
fire-and-forget   ``fnf:<text>``         keeps ``<text>``
anything else                            APPLICATION_ERROR ``unknown route``

The kept fnf and METADATA_PUSH values live in a :class:`SharedState` that
every connection of one server shares (the last one wins).  :meth:`pump`
sends at most ``max_payloads`` PAYLOADs per call, so an unbounded range
cannot starve the transport.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from reference_impl.rsocket.codec import APPLICATION_ERROR
from reference_impl.rsocket.connection import (
    CancelReceived, ConnectionClosed, Connection, CreditReceived, Event, Kind,
    MetadataPushReceived, PayloadReceived, RequestReceived, SetupAccepted, StreamErrorReceived,
)
from reference_impl.rsocket.metadata import COMPOSITE_MIME, route_of


@dataclass
class SharedState:
    last_fnf: bytes = b""
    last_metadata_push: bytes = b""


@dataclass
class _Range:
    next: int
    end: int


@dataclass
class _Channel:
    queue: deque = field(default_factory=deque)  # (metadata, data) waiting for credit
    requester_done: bool = False


class TestService:
    __test__ = False  # not a pytest class

    def __init__(self, conn: Connection, shared: SharedState | None = None, *,
                 max_payloads: int = 64) -> None:
        self.conn = conn
        self.shared = shared if shared is not None else SharedState()
        self.max_payloads = max_payloads
        self._ranges: dict[int, _Range] = {}
        self._channels: dict[int, _Channel] = {}
        self._composite = False  # the SETUP named composite metadata as the metadata MIME type

    def handle(self, events: list[Event]) -> None:
        for event in events:
            if isinstance(event, SetupAccepted):
                self._composite = event.setup.metadata_mime == COMPOSITE_MIME
            elif isinstance(event, RequestReceived):
                self._request(event)
            elif isinstance(event, PayloadReceived):
                self._channel_payload(event)
            elif isinstance(event, CreditReceived):
                channel = self._channels.get(event.stream_id)
                if channel is not None and not channel.requester_done:
                    self.conn.request_n(event.stream_id, event.n)
            elif isinstance(event, MetadataPushReceived):
                self.shared.last_metadata_push = event.metadata
            elif isinstance(event, (CancelReceived, StreamErrorReceived)):
                self._ranges.pop(event.stream_id, None)
                self._channels.pop(event.stream_id, None)
            elif isinstance(event, ConnectionClosed):
                self._ranges.clear()
                self._channels.clear()
        self.pump()

    def _request(self, req: RequestReceived) -> None:
        sid = req.stream_id
        routed = route_of(req.metadata) if self._composite else None
        raw = routed.encode("utf-8") if routed is not None else req.data  # echo and fnf keep bytes as sent
        route = raw.decode("utf-8", "replace")
        if req.kind is Kind.FNF:
            if route.startswith("fnf:"):
                self.shared.last_fnf = raw[len(b"fnf:"):]
            return
        if req.kind is Kind.CHANNEL:
            channel = _Channel(requester_done=req.complete)
            channel.queue.append((req.metadata, req.data))
            self._channels[sid] = channel
            if not req.complete:
                self.conn.request_n(sid, req.initial_n)
            return
        if route.startswith("error:"):
            self.conn.send_error(sid, APPLICATION_ERROR, route[len("error:"):])
        elif route == "never":
            pass
        elif req.kind is Kind.RESPONSE and route.startswith("echo:"):
            self.conn.send_payload(sid, raw[len(b"echo:"):], req.metadata)
        elif req.kind is Kind.RESPONSE and route == "last-fnf":
            self.conn.send_payload(sid, self.shared.last_fnf)
        elif req.kind is Kind.RESPONSE and route == "last-metadata-push":
            self.conn.send_payload(sid, self.shared.last_metadata_push)
        elif req.kind is Kind.STREAM and route.startswith("range:") and route[6:].isdigit():
            self._ranges[sid] = _Range(0, int(route[6:]))
        else:
            self.conn.send_error(sid, APPLICATION_ERROR, "unknown route")

    def _channel_payload(self, event: PayloadReceived) -> None:
        channel = self._channels.get(event.stream_id)
        if channel is None:
            return
        if event.next:
            channel.queue.append((event.metadata, event.data))
        if event.complete:
            channel.requester_done = True

    def pump(self) -> None:
        budget = self.max_payloads
        for sid in list(self._ranges):
            r = self._ranges[sid]
            if r.end == 0:
                self.conn.send_complete(sid)
                del self._ranges[sid]
                continue
            while budget and self.conn.credit(sid):
                last = r.next == r.end - 1
                self.conn.send_payload(sid, str(r.next).encode(), complete=last)
                r.next += 1
                budget -= 1
                if last:
                    del self._ranges[sid]
                    break
        for sid in list(self._channels):
            channel = self._channels[sid]
            while budget and channel.queue and self.conn.credit(sid):
                metadata, data = channel.queue.popleft()
                self.conn.send_payload(sid, data, metadata)
                budget -= 1
            if channel.requester_done and not channel.queue:
                self.conn.send_complete(sid)
                del self._channels[sid]
