"""The STMP conformance test service (docs/profiles/stmp.md "Test service (server role)").

- Request ACTION 0x100: echo, Ok with the same encoding and payload.
- Notify ACTION 0x101: one Notify ACTION 0x101 back with the same encoding and payload.
- Request ACTION 0x102, payload a u32 BE count of milliseconds (any ENCODING
  != 0): Ok without payload after that delay.  Any other payload: BadRequest.
  At most ``max_delayed`` replies wait at once; beyond that: TooManyRequests.
- Other Request ACTIONs: 0x01..0xFF (reserved, unknown) NotImplemented, the rest
  NotFound.  Other Notifies are ignored: a notify needs no reply.
ACTION 0 (negotiation) is the connection's own business and never gets here.
"""

from __future__ import annotations

import heapq

from reference_impl.stmp.codec import Encoding, Request, Status
from reference_impl.stmp.connection import Connection, Event, NotifyReceived, RequestReceived

ACTION_ECHO = 0x100
ACTION_NOTIFY_ECHO = 0x101
ACTION_DELAY = 0x102
RESERVED_ACTIONS = range(0x00, 0x100)


class ConformanceService:
    def __init__(self, connection: Connection, *, max_delayed: int = 1024) -> None:
        self._connection = connection
        self._max_delayed = max_delayed
        self._delayed: list[tuple[float, int]] = []  # heap of (due time, request ID)

    def handle(self, event: Event, now: float) -> None:
        if not self._connection.is_open:
            return  # events decoded just before a close get no reply
        if isinstance(event, RequestReceived):
            self._request(event.request, now)
        elif isinstance(event, NotifyReceived) and event.notify.action == ACTION_NOTIFY_ECHO:
            notify = event.notify
            self._connection.send_notify(ACTION_NOTIFY_ECHO, notify.encoding, notify.payload or b"")

    def tick(self, now: float) -> None:
        if not self._connection.is_open:
            self._delayed.clear()
            return
        while self._delayed and self._delayed[0][0] <= now:
            _, request_id = heapq.heappop(self._delayed)
            self._reply(request_id, Status.OK)

    def _request(self, request: Request, now: float) -> None:
        if request.action == ACTION_ECHO:
            self._connection.send_response(request.id, Status.OK, request.encoding, request.payload or b"")
        elif request.action == ACTION_DELAY:
            self._delay(request, now)
        elif request.action in RESERVED_ACTIONS:
            self._reply(request.id, Status.NOT_IMPLEMENTED)
        else:
            self._reply(request.id, Status.NOT_FOUND)

    def _delay(self, request: Request, now: float) -> None:
        payload = request.payload or b""
        if len(payload) != 4:
            self._reply(request.id, Status.BAD_REQUEST)
        elif len(self._delayed) >= self._max_delayed:
            self._reply(request.id, Status.TOO_MANY_REQUESTS)
        else:
            heapq.heappush(self._delayed, (now + int.from_bytes(payload, "big") / 1000, request.id))

    def _reply(self, request_id: int, status: int) -> None:
        self._connection.send_response(request_id, status, Encoding.NONE, b"")
