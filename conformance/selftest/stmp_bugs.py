"""STMP's one-bug servers and clients, and the cases meant to catch each."""

from __future__ import annotations

from conformance.selftest.buggy_stmp import BuggyStmpServer
from conformance.selftest.buggy_stmp_client import buggy_client
from conformance.selftest.catalog import clients, servers

BUG_TO_CASE = [
    ("no-close-after-0x35", "stmp/handshake/version-unsupported"),
    ("wrong-id-after-wrap", "stmp/ack-wrap/id-wrap-to-one"),
    ("wrong-id-after-wrap", "stmp/ack-wrap/id-max"),
    ("ps-missing", "stmp/encoding/raw"),
    ("kind-bits-swapped", "stmp/handshake/one-version"),
    ("no-heartbeat-timeout", "stmp/error-disconnect/heartbeat-timeout"),
    ("accepts-before-negotiation", "stmp/handshake/request-before-negotiation"),
    ("no-heartbeats", "stmp/error-disconnect/server-sends-heartbeats"),
    ("answers-unknown-response", "stmp/ack-wrap/response-to-unknown-id"),
    ("reserved-bits-ignored", "stmp/error-disconnect/reserved-bits-set"),
    ("ping-before-negotiation-ignored", "stmp/handshake/ping-before-negotiation"),
    ("response-before-negotiation-id-zero", "stmp/handshake/response-before-negotiation"),
    ("negotiation-id-unchecked", "stmp/handshake/negotiation-nonzero-id"),
    ("reserved-bit-0-ignored", "stmp/error-disconnect/reserved-bit-0-set"),
    ("reserved-action-off-by-one", "stmp/status/reserved-action-last"),
    ("unknown-notify-answered", "stmp/framing/unknown-notify-no-reply"),
    ("version-minor-ignored", "stmp/handshake/version-other-minor"),
    ("only-pings-keep-alive", "stmp/error-disconnect/other-traffic-keeps-alive"),
    ("text-guessed-on-tcp", "stmp/error-disconnect/text-on-tcp"),
]
#: SHOULD-level bugs: NON-STRICT
SHOULD_BUG_TO_CASE = [
    ("not-found-as-bad-request", "stmp/status/unknown-action-not-found"),
    ("truncated-as-server-error", "stmp/error-disconnect/truncated-frame"),
]
CLIENT_BUG_TO_CASE = {
    "version-nibbles-swapped": "stmp/handshake/client-sends-negotiation",
    "pings-before-negotiating": "stmp/handshake/client-sends-negotiation",
    "id-wraps-to-zero": "stmp/ack-wrap/client-id-wrap",
    "never-times-out": "stmp/ack-wrap/client-request-timeout",
    "times-out-early": "stmp/ack-wrap/client-request-timeout",
    "client-no-heartbeats": "stmp/error-disconnect/client-sends-heartbeats",
    "client-closes-on-unknown-response": "stmp/ack-wrap/client-response-to-unknown-id",
}


async def _start(bug: str | None) -> BuggyStmpServer:
    return await BuggyStmpServer(bug).start()


SERVERS = servers("stmp", BUG_TO_CASE + SHOULD_BUG_TO_CASE, _start)
CLIENTS = clients("stmp", CLIENT_BUG_TO_CASE, buggy_client)
