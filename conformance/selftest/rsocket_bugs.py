"""RSocket's one-bug servers and clients, and the cases meant to catch each."""

from __future__ import annotations

from conformance.selftest.buggy_rsocket import start_buggy_server
from conformance.selftest.buggy_rsocket_client import buggy_client
from conformance.selftest.catalog import clients, servers

BUG_TO_CASE = [
    ("setup-version-accepted", "rsocket/handshake/setup-version-unsupported"),
    ("setup-version-accepted", "rsocket/handshake/setup-version-zero"),
    ("setup-zero-timers-accepted", "rsocket/handshake/setup-keepalive-zero"),
    ("setup-zero-timers-accepted", "rsocket/handshake/setup-lifetime-zero"),
    ("first-frame-served", "rsocket/handshake/first-frame-not-setup"),
    ("second-setup-closes", "rsocket/handshake/second-setup-ignored"),
    ("credit-wraps", "rsocket/ack-wrap/credit-saturates"),
    ("credit-past-grant", "rsocket/ack-wrap/initial-n-exact"),
    ("request-n-zero-accepted", "rsocket/ack-wrap/request-n-zero"),
    ("ignores-cancel", "rsocket/error-disconnect/cancel-stops-stream"),
    ("cancel-unknown-closes", "rsocket/error-disconnect/cancel-unknown-stream"),
    ("stream-in-use-replaced", "rsocket/ack-wrap/stream-in-use-ignored"),
    ("fragments-not-joined", "rsocket/split-message/request-fragmented"),
    ("fragments-not-joined", "rsocket/split-message/one-byte-fragments"),
    ("keepalive-data-dropped", "rsocket/error-disconnect/keepalive-echo"),
    ("ignorable-ext-closes", "rsocket/extension-index/ext-ignorable-dropped"),
    ("metadata-overrun-ignored", "rsocket/error-disconnect/metadata-length-overrun"),
    ("app-error-on-stream-zero", "rsocket/error-disconnect/application-error"),
    ("routing-ignored", "rsocket/extension-index/composite-routing"),
    ("routing-ignored", "rsocket/extension-index/composite-routing-by-string"),
    ("lease-not-sent", "rsocket/handshake/lease-requested"),
    ("ids-never-reused", "rsocket/ack-wrap/stream-id-reuse-after-max"),
    ("resume-ok-sent-position", "rsocket/handshake/resume-after-disconnect"),
    ("resume-ok-sent-position", "rsocket/handshake/resume-replays-missed-frames"),
    ("resume-no-replay", "rsocket/handshake/resume-replays-missed-frames"),
    ("resume-any-token", "rsocket/handshake/resume-without-session"),
    ("resume-any-token", "rsocket/handshake/resume-other-token"),
    ("resume-lease-not-restarted", "rsocket/handshake/resume-restarts-lease"),
    ("fragmented-request-n-lost", "rsocket/split-message/stream-request-fragmented"),
    ("fragmented-channel-complete-lost", "rsocket/split-message/channel-request-fragmented-complete"),
    ("fragmented-fnf-not-joined", "rsocket/split-message/fnf-fragmented"),
    ("resume-position-counts-keepalive", "rsocket/handshake/resume-position-skips-keepalive"),
    ("request-on-stream-zero-closes", "rsocket/error-disconnect/request-on-stream-zero-ignored"),
    ("channel-next-complete-item-dropped", "rsocket/request/channel-payload-after-complete-ignored"),
    ("channel-next-complete-item-dropped", "rsocket/split-message/follows-with-complete"),
    ("extra-complete-after-last", "rsocket/request/stream-completes-once"),
    ("cancel-keeps-id-in-use", "rsocket/error-disconnect/cancelled-id-reused"),
    ("channel-initial-n-zero-accepted", "rsocket/ack-wrap/channel-initial-n-zero"),
    ("rejected-setup-from-client-closes", "rsocket/handshake/setup-error-from-client-ignored"),
    ("second-setup-resets-streams", "rsocket/handshake/second-setup-ignored"),
]
#: SHOULD-level bugs: NON-STRICT
SHOULD_BUG_TO_CASE = [
    ("error-data-latin1", "rsocket/error-disconnect/error-data-utf8"),
    ("mime-non-ascii-accepted", "rsocket/handshake/setup-mime-not-ascii"),
]
CLIENT_BUG_TO_CASE = {
    "setup-version-2": "rsocket/handshake/client-setup",
    "setup-keepalive-zero": "rsocket/handshake/client-setup",
    "mime-null-terminated": "rsocket/handshake/client-setup",
    "first-stream-3": "rsocket/handshake/client-setup",
    "ignores-setup-rejection": "rsocket/handshake/client-setup-rejected",
    "setup-frame-closes": "rsocket/handshake/client-ignores-setup-frame",
    "requests-zero": "rsocket/ack-wrap/client-request-n",
    "no-request-n": "rsocket/ack-wrap/client-request-n",
    "even-stream-ids": "rsocket/ack-wrap/client-fnf-odd-id",
    "fragments-not-joined": "rsocket/split-message/client-joins-fragments",
    "ignorable-ext-closes": "rsocket/extension-index/client-ignorable-ext",
    "metadata-push-on-stream": "rsocket/extension-index/client-metadata-push",
    "keepalive-not-echoed": "rsocket/error-disconnect/client-keepalive-echo",
    "setup-error-always-closes": "rsocket/error-disconnect/client-ignores-setup-error-when-established",
    "stream-error-ignored": "rsocket/error-disconnect/client-stream-error",
    "waits-for-complete": "rsocket/request/client-response-without-complete",
    "resume-position-zero": "rsocket/handshake/client-resume",
    "resumes-after-rejection": "rsocket/handshake/client-resume-rejected",
    "unknown-stream-payload-closes": "rsocket/error-disconnect/client-payload-unknown-stream",
    "complete-alone-is-item": "rsocket/request/client-stream-complete-alone",
    "metadata-push-m-clear": "rsocket/extension-index/client-metadata-push",
    "error-unknown-stream-closes": "rsocket/error-disconnect/client-error-unknown-stream",
    "payload-stream-zero-closes": "rsocket/error-disconnect/client-payload-unknown-stream",
}


SERVERS = servers("rsocket", BUG_TO_CASE + SHOULD_BUG_TO_CASE, start_buggy_server)
CLIENTS = clients("rsocket", CLIENT_BUG_TO_CASE, buggy_client)
