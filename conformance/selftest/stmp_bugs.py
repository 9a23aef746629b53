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
    ("reserved-bits-requests-only", "stmp/error-disconnect/reserved-bit-on-notify"),
    ("reserved-bits-requests-only", "stmp/error-disconnect/reserved-bit-on-response"),
    ("encoding67-requests-only", "stmp/error-disconnect/encoding-6-notify"),
    ("encoding67-requests-only", "stmp/error-disconnect/encoding-7-notify"),
    ("encoding67-requests-only", "stmp/error-disconnect/encoding-6-response"),
    ("reserved-bits-first-only", "stmp/error-disconnect/reserved-bits-second-in-segment"),
    ("notify-action0-negotiates", "stmp/handshake/notify-action-0-before-negotiation"),
    ("negotiation-rejects-json-only", "stmp/handshake/negotiation-protobuf"),
    ("negotiation-rejects-json-only", "stmp/handshake/negotiation-msgpack"),
    ("negotiation-rejects-json-only", "stmp/handshake/negotiation-bson"),
    ("action-low16-dispatch", "stmp/status/unknown-action-high-bits-is-error"),
    ("notify-enc0-writes-ps", "stmp/framing/notify-echo-encoding-none"),
    ("pings-once", "stmp/error-disconnect/server-keeps-sending-heartbeats"),
    ("pings-before-negotiation", "stmp/handshake/no-heartbeats-before-negotiation"),
]
#: SHOULD-level bugs: NON-STRICT
SHOULD_BUG_TO_CASE = [
    ("not-found-as-bad-request", "stmp/status/unknown-action-not-found"),
    ("truncated-as-server-error", "stmp/error-disconnect/truncated-frame"),
    ("reserved-range-0xfff", "stmp/status/unknown-action-0x200-not-found"),
    ("action-signed", "stmp/status/unknown-action-0x80000000-not-found"),
    ("action-signed", "stmp/status/unknown-action-0xffffffff-not-found"),
]
CLIENT_BUG_TO_CASE = {
    "version-nibbles-swapped": "stmp/handshake/client-sends-negotiation",
    "pings-before-negotiating": "stmp/handshake/client-sends-negotiation",
    "id-wraps-to-zero": "stmp/ack-wrap/client-id-wrap",
    "never-times-out": "stmp/ack-wrap/client-request-timeout",
    "times-out-early": "stmp/ack-wrap/client-request-timeout",
    "client-no-heartbeats": "stmp/error-disconnect/client-sends-heartbeats",
    "client-closes-on-unknown-response": "stmp/ack-wrap/client-response-to-unknown-id",
    "client-pings-once": "stmp/error-disconnect/client-keeps-sending-heartbeats",
}


async def _start(bug: str | None) -> BuggyStmpServer:
    return await BuggyStmpServer(bug).start()


SERVERS = servers("stmp", BUG_TO_CASE + SHOULD_BUG_TO_CASE, _start)
CLIENTS = clients("stmp", CLIENT_BUG_TO_CASE, buggy_client)
