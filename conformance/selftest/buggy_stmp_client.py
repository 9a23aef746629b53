"""The reference STMP client with one switchable bug, for proving the client-role cases can fail.

Each bug patches one rule of the reference client or its connection while that client runs; the
suite acting as server uses the codec only, so the patches never reach the side doing the grading.
"""

from __future__ import annotations

import contextlib
import math
from unittest import mock

from reference_impl.stmp import client as stmp_client
from reference_impl.stmp import connection as stmp_connection
from reference_impl.stmp.codec import Ping, Response

MAX_ID = 0xFFFF


def _swapped_versions(versions, *, text):
    return bytes(minor << 4 | major for major, minor in versions)  # 0.1 goes out as 0x10 (1.0)


def _start_with_a_ping(self, now):
    self._send(Ping())
    _start(self, now)


def _wrap_to_zero(self, action, encoding, payload, now):
    request_id = _send_request(self, action, encoding, payload, now)
    self._next_id = (request_id + 1) % (MAX_ID + 1)  # 0xFFFF -> 0, the negotiation's ID
    return request_id


def _init_without_heartbeats(self, *args, **kwargs):
    kwargs["heartbeat_interval"] = None  # the client never pings
    _init(self, *args, **kwargs)


def _dispatch_closing_on_unknown(self, message):
    if isinstance(message, Response) and message.id not in self._outstanding:
        self._close("protocol-error", "unknown-response-id")  # must be dropped, the connection going on
        return
    _dispatch(self, message)


def _tick_pinging_once(self, now):
    before = self._next_ping
    _tick(self, now)
    if getattr(self, "_pinged_once", False):
        self._next_ping = math.inf  # the ping timer is never re-armed
    elif self._next_ping != before and self._state == stmp_connection._State.OPEN:
        self._pinged_once = True  # the first heartbeat has just gone out
        self._next_ping = math.inf


_init = stmp_connection.Connection.__init__
_tick = stmp_connection.Connection.tick
_dispatch = stmp_connection.Connection._dispatch
_start = stmp_connection.Connection.start
_send_request = stmp_connection.Connection.send_request

BUGS = {
    "version-nibbles-swapped": lambda: mock.patch.object(stmp_connection, "encode_versions", _swapped_versions),
    "pings-before-negotiating": lambda: mock.patch.object(stmp_connection.Connection, "start", _start_with_a_ping),
    "id-wraps-to-zero": lambda: mock.patch.object(stmp_connection.Connection, "send_request", _wrap_to_zero),
    "never-times-out": lambda: mock.patch.object(stmp_client, "CASE_REQUEST_TIMEOUT", 3600.0),
    "times-out-early": lambda: mock.patch.object(stmp_client, "CASE_REQUEST_TIMEOUT", 0.3),
    "client-no-heartbeats": lambda: mock.patch.object(stmp_connection.Connection, "__init__", _init_without_heartbeats),
    "client-closes-on-unknown-response": lambda: mock.patch.object(
        stmp_connection.Connection, "_dispatch", _dispatch_closing_on_unknown),
    "client-pings-once": lambda: mock.patch.object(stmp_connection.Connection, "tick", _tick_pinging_once),
}


def buggy_client(bug: str | None):
    """launch(testcase, url) -> exit code: the reference client, with ``bug`` (None: none)."""

    async def launch(testcase: str, url: str) -> int:
        with BUGS[bug]() if bug else contextlib.nullcontext():
            return await stmp_client.run_client_testcase(url, testcase)
    return launch
