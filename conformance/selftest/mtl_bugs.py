"""MTL's one-bug servers, and the cases meant to catch each (MTL has no client-role cases)."""

from __future__ import annotations

from conformance.selftest.buggy_mtl import BuggyMtlServer
from conformance.selftest.catalog import servers

BUG_TO_CASE = [
    ("content-after-dismiss", "mtl/error-disconnect/content-after-dismiss"),
    ("ignores-multiple", "mtl/ack-wrap/confirm-multiple"),
    ("skips-402", "mtl/handshake/scram-full-cycle"),
    # a server-first the suite cannot answer is the server's fault: FAILED, not an ERROR of the case
    ("server-first-no-iterations", "mtl/handshake/scram-full-cycle"),
    ("server-final-in-201", "mtl/handshake/scram-full-cycle"),
    ("lease-shared", "mtl/handshake/lease-belongs-to-first-connection"),
    ("summon-twice-ok", "mtl/error-disconnect/summon-twice"),
    ("confirm-full-on-test", "mtl/handshake/confirm-model-unsupported"),
    ("port-as-string", "mtl/handshake/writer-lease"),
    ("profile-before-auth", "mtl/handshake/challenge-lists-mechanisms"),
    ("case-sensitive-commands", "mtl/handshake/command-names-case-insensitive"),
    ("redeliver-drops-properties", "mtl/ack-wrap/redelivered-with-properties"),
    ("confirms-none-writer", "mtl/extension-index/test-profile-writer-not-confirmed"),
    ("redeliver-on-none-reader", "mtl/ack-wrap/none-reader-not-redelivered"),
    ("failed-reauth-keeps-auth", "mtl/handshake/failed-reauth-unauthenticates"),
    ("reject-ignores-multiple", "mtl/ack-wrap/reject-multiple-recycle"),
    ("zmtp-3.1-only", "mtl/handshake/zmtp-3-0-client"),
    ("confirm-multiple-exclusive", "mtl/ack-wrap/confirm-multiple"),
    ("authorize-before-open", "mtl/handshake/authorize-before-open"),
    # hunt-mtl additions
    ("long-threshold-off-by-one", "mtl/split-message/content-256"),
    ("fan-out-per-control-session", "mtl/extension-index/fan-out-across-control-connections"),
    ("lease-reclaimable-after-close", "mtl/handshake/lease-not-reused-after-close"),
    ("reject-multiple-lax-boolean", "mtl/error-disconnect/reject-multiple-invalid-boolean"),
    ("confirm-multiple-unbounded", "mtl/ack-wrap/confirm-multiple-beyond-issued"),
    ("accepts-incompatible-socket-type", "mtl/handshake/control-refuses-pub"),
]
#: SHOULD-level bugs: NON-STRICT by default, a failure with --strict
SHOULD_BUG_TO_CASE = [
    ("answers-ill-formed", "mtl/error-disconnect/control-one-frame"),
    ("answers-ill-formed", "mtl/error-disconnect/control-three-frames"),
    ("answers-ill-formed", "mtl/error-disconnect/control-invalid-json"),
    ("no-dead-peer", "mtl/error-disconnect/dead-peer"),
    ("only-ping-pong-is-traffic", "mtl/error-disconnect/non-heartbeat-traffic-keeps-alive"),
    ("pings-once", "mtl/error-disconnect/pings-keep-coming"),
    ("ping-timer-from-rx", "mtl/error-disconnect/pings-while-peer-chats"),
]


async def _start(bug: str | None) -> BuggyMtlServer:
    return await BuggyMtlServer(bug).start()


SERVERS = servers("mtl", BUG_TO_CASE + SHOULD_BUG_TO_CASE, _start, transport="zmtp")
CLIENTS: list = []
