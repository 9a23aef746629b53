"""A passive, sans-IO check of one RSocket connection seen from the middle (TCP framing).

    monitor = WireMonitor()
    monitor.feed(Side.CLIENT, chunk)     # bytes the client sent, in any pieces
    monitor.feed(Side.SERVER, chunk)     # bytes the server sent
    monitor.violations                   # who broke which rule, on which frame

Every frame of both directions is decoded by the codec (a frame that does not decode is its
sender's fault: no conforming sender writes one, including the frames the spec tells a receiver
to ignore), then checked against the rules a sender must keep, which the interop matrix
(`conformance interop rsocket`) uses to name the side of a pair that broke the spec:

* the client's first frame is SETUP (or RESUME);
* each side opens streams with its own parity (client odd, server even), ids increasing;
* every request-n (REQUEST_STREAM, REQUEST_CHANNEL, REQUEST_N) is greater than 0;
* a side sends no more PAYLOADs with N than the other side's credit (initial request-n plus
  REQUEST_Ns, saturating at 2^31-1; a fragmented PAYLOAD counts once), a request-response
  responder at most one; nothing after its own COMPLETE, ERROR or CANCEL on that stream;
* a CANCEL ends the credit: REQUEST_Ns its sender sends after it add none, so a responder that
  goes on past what it had been granted before the CANCEL ignored it (payload-after-cancel);
* a requester skips the IDs still in use (stream-id-in-use); a request on one is dropped by its
  receiver: it opens nothing and grants no credit, so PAYLOADs answering it are past the first
  request's credit (payload-for-ignored-request);
* no PAYLOAD on a stream that was never opened or that both sides have ended;
* nothing from a side after it sent ERROR on stream 0;
* a KEEPALIVE answer carries back the data of the KEEPALIVE(R) it answers.

A PAYLOAD racing a CANCEL or an ERROR that the other side sent is not a fault (it may have
left before the CANCEL arrived). The spec's text for each rule is in docs/profiles/rsocket.md.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from reference_impl.common.wire_monitor import Side, Violation
from reference_impl.rsocket.codec import (
    MAX_U31, Cancel, Error, FrameError, Keepalive, Payload, RequestChannel, RequestFnf, RequestN,
    RequestResponse, RequestStream, Resume, Setup, TcpDecoder,
)


@dataclass
class _Stream:
    kind: type
    requester: Side
    # PAYLOADs with N each side may still send; None: unbounded for this side (no credit applies)
    credit: dict[Side, int | None] = field(default_factory=dict)
    done: set[Side] = field(default_factory=set)  # sides that completed, errored or cancelled
    released: set[Side] = field(default_factory=set)  # sides told to stop (CANCEL or ERROR received)
    fragmenting: set[Side] = field(default_factory=set)  # sides in the middle of a fragmented message
    cancelled: bool = False  # the requester sent CANCEL: its later REQUEST_Ns grant nothing
    duplicate: bool = False  # a request on this id arrived while it was in use (and was dropped)


_REQUESTS = (RequestResponse, RequestFnf, RequestStream, RequestChannel)
_UNFRAMEABLE = frozenset({"frame-too-large", "frame-too-short"})


class WireMonitor:
    def __init__(self) -> None:
        self.violations: list[Violation] = []
        self.frames = 0
        self._decoders = {Side.CLIENT: TcpDecoder(), Side.SERVER: TcpDecoder()}
        self._failed: set[Side] = set()
        self._streams: dict[int, _Stream] = {}
        self._forgotten: set[int] = set()  # streams not judged until a request opens the id again
        self._last_id = {Side.CLIENT: 0, Side.SERVER: 0}
        self._ended: set[Side] = set()  # sent ERROR on stream 0
        self._keepalives: dict[Side, deque[bytes]] = {Side.CLIENT: deque(), Side.SERVER: deque()}
        self._client_started = False

    def feed(self, side: Side, data: bytes) -> list[Violation]:
        """Checks what SIDE sent; returns the violations found in these bytes."""
        before = len(self.violations)
        if side in self._failed:
            return []
        decoder = self._decoders[side]
        decoder.feed(data)
        while True:
            try:
                frame = decoder.next_frame()
            except FrameError as exc:
                self._undecoded(side, exc)
                if exc.code in _UNFRAMEABLE:  # the length itself is bad: nothing after it can be framed
                    self._failed.add(side)
                    break
                continue  # the decoder consumed the bad frame: the next one starts after it
            if frame is None:
                break
            self._check(side, frame)
            self.frames += 1
        return self.violations[before:]

    def _undecoded(self, side: Side, exc: FrameError) -> None:
        self._violate(side, f"malformed-frame:{exc.code}", exc.detail)
        self.frames += 1

    def forget(self, stream_id: int) -> None:
        """A frame on this stream did not decode: what it meant to its receiver (credit, an end) is
        unknown, so the stream is no longer judged."""
        self._streams.pop(stream_id, None)
        self._forgotten.add(stream_id)

    def _violate(self, side: Side, rule: str, detail: str = "") -> None:
        self.violations.append(Violation(side, rule, self.frames, detail))

    def observe(self, side: Side, frame) -> list[Violation]:
        """Checks one decoded frame SIDE sent (a caller with its own decoder); returns its violations."""
        before = len(self.violations)
        self._check(side, frame)
        self.frames += 1
        return self.violations[before:]

    def _check(self, side: Side, frame) -> None:
        if side in self._ended:
            self._violate(side, "frame-after-connection-error", type(frame).__name__)
            return
        if side is Side.CLIENT and not self._client_started:
            self._client_started = True
            if not isinstance(frame, (Setup, Resume)):
                self._violate(side, "first-frame-not-setup", type(frame).__name__)
        if isinstance(frame, Error) and frame.stream_id == 0:
            self._ended.add(side)
        elif isinstance(frame, Keepalive):
            self._keepalive(side, frame)
        elif isinstance(frame, _REQUESTS):
            self._request(side, frame)
        elif isinstance(frame, (RequestN, Cancel, Payload, Error)):
            self._stream_frame(side, frame)

    def _keepalive(self, side: Side, frame: Keepalive) -> None:
        if frame.respond:
            self._keepalives[side].append(frame.data)
            return
        pending = self._keepalives[side.other]
        if pending:  # an answer; KEEPALIVE without R and nothing pending is a plain notification
            expected = pending.popleft()
            if frame.data != expected:
                self._violate(side, "keepalive-echo-differs", f"{frame.data[:32]!r} for {expected[:32]!r}")

    def _request(self, side: Side, frame) -> None:
        sid = frame.stream_id
        self._forgotten.discard(sid)
        stream = self._streams.get(sid)
        if stream is not None and stream.requester is side and side in stream.fragmenting:
            self._violate(side, "request-inside-fragmented-request", f"stream {sid}")
            return
        wrong_parity = sid % 2 != (1 if side is Side.CLIENT else 0)
        if stream is not None and not stream.cancelled and not stream.released and len(stream.done) < 2:
            stream.duplicate = True  # in use: the receiver must ignore this request
            if wrong_parity:  # ignored or not, the other side's IDs are not this side's to use
                self._violate(side, "stream-id-parity", f"stream {sid}")
            else:  # "The Requester MUST skip IDs still in use"
                self._violate(side, "stream-id-in-use", f"stream {sid}")
            return
        if wrong_parity:
            self._violate(side, "stream-id-parity", f"stream {sid}")
        elif sid <= self._last_id[side]:
            self._violate(side, "stream-id-not-increasing", f"stream {sid} after {self._last_id[side]}")
        self._last_id[side] = max(self._last_id[side], sid)
        n = getattr(frame, "initial_n", None)
        if n is not None and n <= 0:
            self._violate(side, "request-n-zero", f"stream {sid}")
        responder = side.other
        credit: dict[Side, int | None] = {side: 0, responder: None}
        if isinstance(frame, RequestResponse):
            credit[responder] = 1
        elif isinstance(frame, (RequestStream, RequestChannel)):
            credit[responder] = max(n or 0, 0)
        stream = _Stream(type(frame), side, credit)
        if isinstance(frame, RequestFnf):
            self._streams.pop(sid, None)
            return  # nothing more on this stream, from either side
        elif not isinstance(frame, RequestChannel) or frame.complete:
            stream.done.add(side)  # the requester sends nothing more (but fragments of this request)
        if frame.follows:
            stream.fragmenting.add(side)
        self._streams[sid] = stream

    def _stream_frame(self, side: Side, frame) -> None:
        sid = frame.stream_id
        stream = self._streams.get(sid)
        if sid in self._forgotten:
            return
        if stream is None:
            if isinstance(frame, Payload):
                self._violate(side, "payload-on-unknown-stream", f"stream {sid}")
            return  # REQUEST_N, CANCEL, ERROR on a stream that ended: may cross in flight
        if isinstance(frame, RequestN):
            if frame.n <= 0:
                self._violate(side, "request-n-zero", f"stream {sid}")
            other = side.other
            if stream.credit.get(other) is not None and not (stream.cancelled and side is stream.requester):
                stream.credit[other] = min(MAX_U31, stream.credit[other] + frame.n)
        elif isinstance(frame, Cancel):
            stream.done.add(side)
            stream.released.add(side.other)
            stream.cancelled = stream.cancelled or side is stream.requester
        elif isinstance(frame, Error):
            stream.done.add(side)
            stream.released.add(side.other)
        else:
            self._payload(side, stream, frame)
        if len(stream.done) == 2:
            del self._streams[sid]

    def _payload(self, side: Side, stream: _Stream, frame: Payload) -> None:
        sid = frame.stream_id
        continuing = side in stream.fragmenting
        if side in stream.done and not continuing:
            if side not in stream.released:
                self._violate(side, "payload-after-complete", f"stream {sid}")
            return
        if frame.follows:
            stream.fragmenting.add(side)
        else:
            stream.fragmenting.discard(side)
        if frame.next and not continuing:
            credit = stream.credit.get(side)
            if credit is not None:
                if credit <= 0 and stream.cancelled and side is not stream.requester:
                    self._violate(side, "payload-after-cancel", f"stream {sid}: past the credit granted before CANCEL")
                elif credit <= 0 and stream.duplicate:
                    self._violate(side, "payload-for-ignored-request", f"stream {sid}: past the first request's credit")
                elif credit <= 0 and side not in stream.released:
                    self._violate(side, "payload-beyond-credit", f"stream {sid}")
                stream.credit[side] = credit - 1
        if frame.complete and not frame.follows:
            stream.done.add(side)
        if stream.kind is RequestResponse and side is not stream.requester and not frame.follows:
            stream.done.add(side)  # a response is always the last PAYLOAD
