"""Micromessage2's one-bug servers and clients, and the cases meant to catch each."""

from __future__ import annotations

from conformance.selftest.buggy_mm2 import BuggyMm2Server
from conformance.selftest.buggy_mm2_client import buggy_client
from conformance.selftest.catalog import clients, servers

BUG_TO_CASE = [
    ("zero-based-ids", "micromessage2/extension-index/seed-example"),
    ("zero-based-ids", "micromessage2/extension-index/server-acks-on-its-id"),
    ("zero-based-ids", "micromessage2/extension-index/required-before-optional"),
    ("no-error-missing-required", "micromessage2/handshake/required-missing-vendor"),
    ("no-error-missing-required", "micromessage2/handshake/required-missing-unknown"),
    ("window-overrun", "micromessage2/ack-wrap/ack-window-one"),
    ("window-overrun", "micromessage2/ack-wrap/batch-ack-window-3"),
    ("window-overrun", "micromessage2/ack-wrap/batch-ack-default-10"),
    ("large-threshold-512", "micromessage2/split-message/payload-256"),
    ("large-threshold-512", "micromessage2/split-message/payload-300-and-512"),
    ("fan-out-to-one", "micromessage2/pubsub/fan-out-to-every-subscriber"),
    ("hello-before-check", "micromessage2/error-disconnect/error-instead-of-hello"),
    ("ignores-error", "micromessage2/error-disconnect/error-received-close"),
    ("ignores-error", "micromessage2/error-disconnect/error-with-large-flag"),
    ("open-after-eof-mid-frame", "micromessage2/error-disconnect/truncated-frame-then-eof"),
    ("ack-not-cumulative-across-wrap", "micromessage2/ack-wrap/cumulative-across-wrap"),
    ("command-ignores-large", "micromessage2/split-message/large-flag-short-command"),
    ("extension-large-unset", "micromessage2/split-message/dotnet-type-over-255"),
    ("unsubscribe-removes-everyone", "micromessage2/pubsub/unsubscribe-leaves-others"),
    ("final-required-unchecked", "micromessage2/handshake/required-missing-in-final"),
    ("no-handshake-read-timeout", "micromessage2/error-disconnect/stalled-hello-timeout"),
    ("ack-check-ignores-wrap", "micromessage2/ack-wrap/pre-wrap-ack-after-wrap"),
    ("reserved-bits-only-on-send", "micromessage2/error-disconnect/reserved-flag-32-command"),
    ("reserved-bits-only-on-send", "micromessage2/error-disconnect/reserved-flag-64-extension"),
    ("final-major-unchecked", "micromessage2/handshake/other-major-in-final"),
    ("field-check-required-only", "micromessage2/handshake/list-upper-case-name-optional"),
    ("field-check-required-only", "micromessage2/handshake/list-colon-for-equals-optional"),
    ("field-check-required-only", "micromessage2/handshake/list-empty-name-optional"),
    ("props-len-high-byte-dropped", "micromessage2/split-message/properties-300"),
    ("continued-joined-only-for-send", "micromessage2/split-message/continued-command-joined"),
    ("echo-bypasses-window", "micromessage2/ack-wrap/ack-window-echo"),
    ("server-no-ack-under-batch-ack", "micromessage2/ack-wrap/server-acks-under-batch-ack"),
    ("dotnet-type-once", "micromessage2/extension-index/dotnet-type-before-each-message"),
]
#: SHOULD-level bugs: NON-STRICT
SHOULD_BUG_TO_CASE = [
    ("no-split", "micromessage2/split-message/reply-over-1mib-split"),
]
CLIENT_BUG_TO_CASE = {
    "final-takes-server-minor": "micromessage2/handshake/client-server-higher-minor",
    "no-error-on-other-major": "micromessage2/handshake/client-other-major",
    "ignores-server-required": "micromessage2/handshake/client-lacks-server-required",
    "ignores-error": "micromessage2/handshake/client-required-missing-refused",
    "activates-unsupported-suggestion": "micromessage2/handshake/client-final-message",
    "drops-server-required": "micromessage2/handshake/client-final-adds-server-required",
    "acks-on-an-unused-extension-id": "micromessage2/ack-wrap/client-acks-messages",
    "accepts-lower-major": "micromessage2/handshake/client-major-zero",
    "colon-for-equals-accepted": "micromessage2/handshake/client-list-colon-for-equals",
    "ignores-error-once-open": "micromessage2/error-disconnect/client-error-received-close",
    "final-server-suggestions-first": "micromessage2/handshake/client-final-offered-order",
    "final-keeps-unechoed-optional": "micromessage2/handshake/client-server-higher-minor",
    "optional-list-lenient": "micromessage2/handshake/client-list-colon-for-equals-optional",
}


async def _start(bug: str | None) -> BuggyMm2Server:
    return await BuggyMm2Server(bug).start()


SERVERS = servers("micromessage2", BUG_TO_CASE + SHOULD_BUG_TO_CASE, _start)
CLIENTS = clients("micromessage2", CLIENT_BUG_TO_CASE, buggy_client)
