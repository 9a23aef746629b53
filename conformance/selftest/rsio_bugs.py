"""rsio's one-bug servers and clients, and the cases meant to catch each."""

from __future__ import annotations

from conformance.selftest.buggy_rsio import BuggyRsioServer
from conformance.selftest.buggy_rsio_client import buggy_client
from conformance.selftest.catalog import clients, servers

BUG_TO_CASE = [
    ("past-demand", "rsio/ack-wrap/initial-demand-exact"),
    ("past-demand", "rsio/ack-wrap/zero-initial-demand"),
    ("past-demand", "rsio/split-message/packing-within-demand"),
    ("ignores-cancel", "rsio/ack-wrap/cancel-stops-stream"),
    ("accepts-request-zero", "rsio/ack-wrap/request-zero-is-error"),
    ("parts-as-onnext", "rsio/split-message/large-element-joined"),
    ("parts-as-onnext", "rsio/split-message/two-streams-interleaved"),
    ("mislabels-parts", "rsio/split-message/large-element-joined"),
    ("mislabels-parts", "rsio/split-message/large-element-1mib"),
    ("parts-use-demand", "rsio/split-message/parts-count-once"),
    ("wrong-version-no-goodbye", "rsio/handshake/wrong-version"),
    ("wrong-version-no-goodbye", "rsio/handshake/wrong-version-multibyte"),
    ("no-close-after-goodbye", "rsio/handshake/wrong-version"),
    ("demand-wraps", "rsio/ack-wrap/demand-overflow-saturates"),
    ("no-goodbye-reply", "rsio/error-disconnect/goodbye-answered"),
    ("id-in-use-replaced", "rsio/error-disconnect/subscribe-on-id-in-use"),
    ("fixed-single-prefixed", "rsio/split-message/fixed-size-one-at-a-time"),
    ("onnext-length-u8", "rsio/split-message/element-300-bytes"),
    ("goodbye-keeps-streams", "rsio/error-disconnect/no-element-after-goodbye"),
    ("fixed-past-count", "rsio/split-message/fixed-size-more-demand-than-elements"),
    ("packed-count-u8", "rsio/split-message/fixed-size-more-demand-than-elements"),
    ("hello-count-u8", "rsio/handshake/many-extensions-listed"),
    ("demand-u64-wrap", "rsio/ack-wrap/demand-sum-past-2-64"),
    ("demand-per-connection", "rsio/ack-wrap/demand-per-stream"),
    ("parts-offset-shared", "rsio/split-message/two-streams-one-write"),
    ("error-goodbye-keeps-streams", "rsio/error-disconnect/no-element-after-error-goodbye"),
    ("subscribed-size-u8", "rsio/split-message/fixed-size-300"),
    ("id-u64-accepted", "rsio/error-disconnect/subscriber-id-too-large"),
    ("initial-demand-u64-clamped", "rsio/error-disconnect/initial-demand-too-large"),
    ("request-zero-before-lookup", "rsio/ack-wrap/request-zero-after-end"),
    ("goodbye-finishes-split-element", "rsio/error-disconnect/no-part-after-goodbye"),
]
#: SHOULD-level bugs: NON-STRICT
SHOULD_BUG_TO_CASE = [
    ("completes-on-eof", "rsio/error-disconnect/transport-close-releases-streams"),
    ("overlong-only-on-ids", "rsio/error-disconnect/varint-overlong-demand"),
]
CLIENT_BUG_TO_CASE = {
    "hello-version-1": "rsio/handshake/client-hello",
    "accepts-any-version": "rsio/handshake/client-wrong-version",
    "uses-unlisted-extension": "rsio/extension-index/client-sends-no-extension-type",
    "ignores-unknown-type": "rsio/error-disconnect/client-unknown-type",
    "goodbye-unanswered": "rsio/error-disconnect/client-answers-goodbye",
    "requests-zero": "rsio/ack-wrap/client-demand",
    "requests-after-cancel": "rsio/ack-wrap/client-cancel",
    "on-error-ignored": "rsio/error-disconnect/client-on-error",
    "parts-not-joined": "rsio/split-message/client-joins-parts",
    "fixed-size-read-as-prefixed": "rsio/split-message/client-fixed-and-packed",
    "goodbye-no-wait": "rsio/error-disconnect/client-waits-for-goodbye",
    "empty-last-part-skipped": "rsio/split-message/client-empty-last-part",
    "version-u8": "rsio/handshake/client-wrong-version-256",
    "type-0-skipped": "rsio/error-disconnect/client-unknown-type-0",
    "lenient-utf8": "rsio/error-disconnect/client-invalid-utf8-error",
}


async def _start(bug: str | None) -> BuggyRsioServer:
    return await BuggyRsioServer(bug).start()


SERVERS = servers("rsio", BUG_TO_CASE + SHOULD_BUG_TO_CASE, _start)
CLIENTS = clients("rsio", CLIENT_BUG_TO_CASE, buggy_client)
