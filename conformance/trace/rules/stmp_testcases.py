"""STMP's `request-timeout` client test case seen from the wire (docs/profiles/stmp.md, "Test cases
(client role)"): the client sends one Request the suite never answers, completes it locally with
RequestTimeout (0x25) no sooner than the run's ``request_timeout_ms`` and within 3 s after it, and
exits, which ends its connection.  The RequestTimeout itself never crosses the wire; its timing
does, through the close that follows it.

Judged only on a connection a suite capture names as the target's client (``test_client``): there a
Request after which the server sent nothing (no Response, Request or Notify; Pings aside) is
request-timeout's, since every other case's Requests are answered at once.  Against the client it
is stmp-request-timeout:

* closing with that Request outstanding sooner than the request timeout (less 250 ms, as the case
  allows), while its heartbeat timeout cannot have run out (the server's last message came less
  than the shortest heartbeat timeout before): its timeout fired early;
* staying open the request timeout and 3 s more (times --time-scale) after it: it never fired.

Unless the run recorded ``request_timeout_ms`` (`--param`), the early bound uses the shorter of the
adapter's default and the reference's, the late one the longer: never stricter than the run.
"""

from __future__ import annotations

from conformance.protocols.stmp import ADAPTER
from conformance.trace.rules import run_or_lenient


class RequestTimeoutCase:
    def __init__(self, params: dict, stretch: float, heartbeat_timeout: float) -> None:
        """``heartbeat_timeout``: the shortest the client's may be (Rules.service_timeout's value)."""
        self.early = run_or_lenient(params, ADAPTER, "request_timeout_ms", min) - 0.25
        self.late = (run_or_lenient(params, ADAPTER, "request_timeout_ms", max) + 3) * stretch
        self.heartbeat_timeout = heartbeat_timeout
        self.waiting: tuple[float, int] | None = None  # (when, ID) of the Request the server left unanswered
        self.server_spoke = 0.0  # when the server last sent a message
        self.judged = False

    def client_request(self, ts: float, request_id: int) -> None:
        if self.waiting is None:
            self.waiting = (ts, request_id)

    def server_message(self, ts: float, kind: str) -> None:
        self.server_spoke = ts
        if kind != "ping":
            self.waiting = None

    def still_open(self, ts: float, then: str):
        """Any later packet while the client is open: past the late bound, its timeout never fired."""
        if self.waiting is None or self.judged or ts - self.waiting[0] < self.late:
            return []
        self.judged = True
        since, request_id = self.waiting
        return [("client", "stmp-request-timeout",
                 f"the client kept its Request ID {request_id:#x} waiting {ts - since:.3f} s, the server silent: "
                 f"past its request timeout and 3 s ({self.late:g} s), it never completed it locally with "
                 f"RequestTimeout (0x25) and closed, as the request-timeout case does; {then}")]

    def client_closed(self, ts: float, how: str, outstanding: bool):
        """The client's close with the Request outstanding: sooner than its request timeout, it fired early."""
        if self.waiting is None or self.judged or not outstanding:
            return []
        since, request_id = self.waiting
        if ts - since >= self.early or ts - self.server_spoke >= self.heartbeat_timeout:
            return []
        self.judged = True
        return [("client", "stmp-request-timeout",
                 f"the client closed ({how}) {ts - since:.3f} s after its Request ID {request_id:#x}, which the "
                 f"server never answered: before its request timeout ({self.early + 0.25:g} s), so it completed "
                 "the request with RequestTimeout (0x25) too early")]
