"""mc0's one-bug brokers, and the cases meant to catch each (mc0 has no client-role cases)."""

from __future__ import annotations

from conformance.selftest.buggy_mc0 import start_buggy
from conformance.selftest.catalog import servers

BUG_TO_CASE = [
    ("accepts-null", "mc0/handshake/null-refused"),
    ("unchecked-hello", "mc0/handshake/curve-wrong-server-key"),
    ("odd-headers-crash", "mc0/error-disconnect/odd-header-count"),
    ("odd-headers-stop-serving", "mc0/error-disconnect/odd-header-count"),
    ("ok-after-error", "mc0/error-disconnect/unknown-verb-error-only"),
    ("prefix-match", "mc0/pubsub/prefix-not-delivered"),
    ("fan-out-to-one", "mc0/pubsub/fan-out-to-every-subscriber"),
    ("drops-x-headers", "mc0/extension-index/x-headers-forwarded"),
    ("no-ttl-expiry", "mc0/error-disconnect/ttl-expiry-drops-subscriptions"),
    ("noop-not-heard", "mc0/error-disconnect/traffic-keeps-client-present"),
    ("empty-topic-wildcard", "mc0/pubsub/empty-topic-not-wildcard"),
    ("only-noop-heard", "mc0/error-disconnect/put-keeps-client-present"),
    ("accepts-version-0.1", "mc0/handshake/connect-version-0.1"),
    ("unchecked-vouch", "mc0/handshake/curve-forged-vouch"),
    ("no-nonce-check", "mc0/handshake/curve-replayed-message"),
    ("fixed-server-transient", "mc0/handshake/curve-fresh-server-transient"),
    # hunt-mc0 additions
    ("unsub-removes-topic-for-all", "mc0/pubsub/unsub-leaves-other-subscribers"),
    ("close-drops-topic-for-all", "mc0/pubsub/close-leaves-other-subscribers"),
    ("absence-drops-topic-for-all", "mc0/error-disconnect/absence-leaves-other-subscribers"),
    ("unsub-first-only", "mc0/pubsub/unsub-several-topics"),
    ("empty-body-no-separator", "mc0/pubsub/put-empty-body"),
    ("error-id-text-reencoded", "mc0/ack-wrap/error-id-binary"),
    ("empty-id-ignored", "mc0/ack-wrap/empty-id"),
    ("error-description-key", "mc0/error-disconnect/unknown-verb-no-id"),
]
#: SHOULD-level bugs: NON-STRICT
SHOULD_BUG_TO_CASE = [
    ("no-noop", "mc0/error-disconnect/broker-noops-quiet-client"),
    ("unsub-refcount", "mc0/pubsub/unsub-once-after-sub-twice"),
    ("refused-no-id-silent", "mc0/error-disconnect/refused-without-id-gets-error"),
    ("noop-once", "mc0/error-disconnect/noops-keep-coming"),
]

SERVERS = servers("mc0", BUG_TO_CASE + SHOULD_BUG_TO_CASE, start_buggy, transport="zmtp")
CLIENTS: list = []
