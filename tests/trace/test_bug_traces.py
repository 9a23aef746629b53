"""The zero-findings / right-finding property on the suite's own traffic (`run --pcap`):
a capture of a one-bug target's cases gives a finding against the target's role naming a
requirement the catching case tests (docs/requirements, independent of the checker), and the
same cases against the correct twin give none against the target.

How far it goes, per protocol (every bug of conformance/selftest/<protocol>_bugs.py is in one
table): EXACT bugs are found with a requirement the catching case names; OTHER are found under
another requirement (named here); the rest are not visible to the passive rules (timers,
what a peer supports, stalls, facts spanning connections; mc0's CURVE traffic is opened with the key
log the capture wrote beside it): for those the test only checks that the
twin's capture gives no finding against the target, and UNSEEN gives each one's reason for the
protocols it names.
"""

from __future__ import annotations

import pytest

from conformance.selftest.catalog import catalog
from tests.trace.bugtraces import capture_cases, check, requirements_of_case

EXACT = {
    "stmp": {"no-close-after-0x35", "wrong-id-after-wrap", "ps-missing", "accepts-before-negotiation",
             "no-heartbeats", "answers-unknown-response", "reserved-bits-ignored", "pings-before-negotiating",
             "truncated-as-server-error", "no-heartbeat-timeout", "version-nibbles-swapped", "id-wraps-to-zero",
             "response-before-negotiation-id-zero", "negotiation-id-unchecked", "reserved-bit-0-ignored",
             "text-guessed-on-tcp",  # 0x31 on TCP is a binary header with reserved bit 0 set
             # the server closes after the suite gives up, its BadRequest never sent; NotFound to ACTION 0xFF
             "ping-before-negotiation-ignored", "reserved-action-off-by-one",
             # by the test service (rules/stmp_services.py): BadRequest to ACTION 0x12345678, which the
             # service answers NotFound (NON-STRICT, as the case grades it)
             "not-found-as-bad-request",
             # a test client (rules/stmp.py): the echo case closes on the stray Response, its request unanswered
             "client-closes-on-unknown-response",
             # ... and the heartbeat case, silent after the negotiation until the suite gives up on its Ping
             "client-no-heartbeats",
             # ... and the request-timeout case (rules/stmp_testcases.py), its Request unanswered: closed before
             # the run's request timeout, or still open past it and 3 s (the close its local RequestTimeout makes)
             "never-times-out", "times-out-early",
             # the test service's heartbeat timeout is the run's, and any message restarts it: its close 1 s
             # after the client's last Notify, within that timeout (rules/stmp.py)
             "only-pings-keep-alive",
             # the test service speaks 0.1 only and never answers a Notify of another ACTION than 0x101: the Ok
             # to an offer of 0.2, and NotFound with ID 0 right after such a Notify (rules/stmp.py)
             "version-minor-ignored", "unknown-notify-answered",
             # the header checks on every kind and every message of a read: the Notify echoed or the Request
             # answered after a header with reserved bits or ENCODING 6/7, which the reader refuses
             "reserved-bits-requests-only", "encoding67-requests-only", "reserved-bits-first-only",
             # before the negotiation: the Ok to a Notify ACTION 0, or to a request with ENCODING 1, 3 or 4
             # (rules/stmp.py), and a Ping before the negotiation completed
             "notify-action0-negotiates", "negotiation-rejects-json-only", "pings-before-negotiation",
             # by the test service: Ok to ACTION 0x00010100; 0x31 to unreserved ACTIONs 0x200 and 0x80000000
             "action-low16-dispatch", "reserved-range-0xfff", "action-signed",
             # the server silent past its heartbeat interval after its first Ping, the suite pinging
             "pings-once"},
    "micromessage2": {"zero-based-ids", "hello-before-check", "server/ignores-error",  # role/: one role's bug
                      "window-overrun", "no-split", "final-takes-server-minor", "no-error-on-other-major",
                      "drops-server-required", "accepts-lower-major", "ignores-error-once-open",
                      "colon-for-equals-accepted",
                      # by what the profile pins the test service and the test clients to lack
                      # (rules/micromessage2_services.py): the server's hello, or its silence, after a client
                      # message requiring x-conformance-missing or microauth; the client's final message after
                      # a server hello requiring x-conformance-server-only, or activating x-suite-suggestion
                      "no-error-missing-required", "final-required-unchecked", "ignores-server-required",
                      "activates-unsupported-suggestion",
                      # the test service's test/push sends as fast as the window allows, the suite waiting
                      # expect_ms for each message: it stops with room the client's ack across the wrap gave
                      "ack-not-cumulative-across-wrap",
                      # a run's read timeout (read_timeout_ms): the suite's hello, stalled half-way, unanswered
                      # by ERROR when the suite closes read_timeout_ms + 3000 after its last bytes
                      "no-handshake-read-timeout",
                      # across connections (conformance/trace/sessions/micromessage2.py): the first subscriber's
                      # delivery, read before the suite waits on the second; a publication the server read
                      # (it echoed the publisher's next message), never delivered to the subscriber still in place
                      "fan-out-to-one", "unsubscribe-removes-everyone",
                      # the test service sends ERROR only where the profile owes one (rules/micromessage2.py,
                      # rules/refusal.py): its ERROR right after a short subscribe with LARGE_PAYLOAD, or after an
                      # ack across the wrap the window took
                      "command-ignores-large", "ack-check-ignores-wrap",
                      # an EXTENSION frame on an ID the final handshake gave no extension (mm2-extension-index:
                      # client-acks-messages tests that the client acks on batch-ack's ID)
                      "acks-on-an-unused-extension-id",
                      # the suite's RST when its case ends, the server still open a close_ms after the suite's
                      # FIN inside a frame (channels.TcpChannel._reset, rules/micromessage2.py on_abort)
                      "open-after-eof-mid-frame",
                      # the server's MESSAGE with its ack window full (an echo counted as any other message)
                      "echo-bypasses-window",
                      # a hello answering a hello whose list is a syntax error, the client's (the server's
                      # hello after an optional 'JSON') as the server's (the client's final after a colon form)
                      "field-check-required-only", "optional-list-lenient",
                      # the test service's ERROR right after a subscribe COMMAND in CONTINUED fragments
                      "continued-joined-only-for-send",
                      # the client's final optional list: an offer the server's hello left out activated, or
                      # the server's suggestion listed before the client's own offer
                      "final-keeps-unechoed-optional", "final-server-suggestions-first"},
    "rsio": {  # the test clients' cases (rules/rsio_testcases.py): after test/error's onError, or test/large's
             # element in parts and onComplete, the client closes without the goodbye that ends its case
             "on-error-ignored", "parts-not-joined", "empty-last-part-skipped",
             # ... and closes right after its own goodbye, before the suite's answer (at least silence_ms)
             "goodbye-no-wait",
             "past-demand", "wrong-version-no-goodbye", "no-close-after-goodbye", "no-goodbye-reply",
             "uses-unlisted-extension", "ignores-cancel", "accepts-request-zero", "mislabels-parts",
             "id-in-use-replaced", "hello-version-1", "accepts-any-version", "ignores-unknown-type",
             "goodbye-unanswered", "requests-zero", "requests-after-cancel", "goodbye-keeps-streams",
             # by the test services' promises (rules/rsio_services.py; the captures are the suite's own):
             # test/fixed/200/1's 201st element, test/large's element cut into onNext-sized elements,
             # test/never completed once the client shut its side, and test/fixed/3/4's first element read
             # by its elementSize starting with the length prefix the lone onNext should not carry
             "fixed-past-count", "parts-as-onnext", "completes-on-eof", "fixed-single-prefixed",
             # the elements owed at once (the profile's timing; the suite waits reply_ms): test/large's
             # element begun and never finished, test/range/40 stopped after requests past 2^63-1
             "parts-use-demand", "demand-wraps",
             # the test service says goodbye only where the profile owes one (rules/refusal.py): its goodbye
             # right after the case's valid clientHello of 130 extensions (a count varint of two bytes)
             "hello-count-u8",
             # ... and a test client gives up only on what it did not expect: its goodbye before the fixed
             # stream's onComplete, right after valid elements (client-fixed-and-packed pauses before it)
             "fixed-size-read-as-prefixed",
             # demand past what the client signalled: test/range/10 stalled after requests summing to 2^64
             # (the elements owed at once), and elements to the stream with demand 0; a split element's
             # parts on the wrong offsets; elements after the goodbye a malformed message got
             "demand-u64-wrap", "demand-per-connection", "parts-offset-shared", "error-goodbye-keeps-streams",
             # a test client that answers serverHello version 256 (80 02) with a subscribe, not goodbye, and one
             # that answers type 0 with nothing
             "version-u8", "type-0-skipped",
             # the last part of a split element after the server's own goodbye
             "goodbye-finishes-split-element"},
    # the rest of mc0's through the key log `run --pcap` writes beside the capture (CURVE opened)
    "mc0": {"accepts-null", "unchecked-hello", "odd-headers-crash", "ok-after-error", "prefix-match",
            "drops-x-headers", "no-ttl-expiry", "no-noop", "empty-topic-wildcard",
            "accepts-version-0.1",
            # the vouch opened with the in-process broker's s' (a READY after a forged one), and an OK
            # answering a replayed MESSAGE (a box whose short nonce is not above an earlier one's)
            "unchecked-vouch", "no-nonce-check",
            # across connections (conformance/trace/sessions/mc0.py)
            "fixed-server-transient", "fan-out-to-one",
            # the broker of a conformance run answers within the suite's reply_ms: the ERROR the second
            # malformed message is owed never comes, the client closing a wait later
            "odd-headers-stop-serving",
            # the broker dropped the heartbeating client (nothing proves it received the PUT after): then the
            # client's 5 s wait for the MESSAGE is a quiet present client the broker never NOOPs (mc0-noop-timing,
            # the TTL's two intervals, which traffic-keeps-client-present and put-keeps-client-present test)
            "noop-not-heard", "only-noop-heard",
            # a subscriber left without the PUT a third connector's OK proves the broker served, after another
            # subscriber's UNSUB, close or absence (sessions/mc0.py: the OK proves the PUT read)
            "unsub-removes-topic-for-all", "close-drops-topic-for-all", "absence-drops-topic-for-all",
            # a MESSAGE for a topic after the broker's OK to the UNSUB of it (mc0-unsub; mc0-unsub-once when
            # it was subscribed twice), a MESSAGE without its separator, an ERROR whose ID no request carried
            # or without its MESSAGE header, a quiet client with a TTL never NOOPed again
            "unsub-first-only", "unsub-refcount", "empty-body-no-separator", "error-id-text-reencoded",
            "error-description-key", "noop-once"},
    "mtl": {"content-after-dismiss", "summon-twice-ok", "answers-ill-formed", "skips-402", "server-first-no-iterations",
            "server-final-in-201", "confirm-full-on-test", "port-as-string", "profile-before-auth", "no-dead-peer",
            "authorize-before-open",
            # by the test service (rules/mtl_services.py): the case's first request, the service's
            # Connection.Open of test-env spelled CONNECTION.OPEN, refused 400
            "case-sensitive-commands",
            # across connections (conformance/trace/sessions/mtl.py): a Confirm on a data connection
            # holding a lease the control connection's 202 granted to a Connection.Writer of confirm none
            "lease-shared", "confirms-none-writer",
            # the test service serves a ZMTP 3.0 client (RFC 23): its close after the suite's 3.0 greeting
            "zmtp-3.1-only",
            # the Profile granted after the failed Authorize's 401: an invalid request owed an error reply
            "failed-reauth-keeps-auth",
            # the confirm-test cases' bodies are unique to the case run ({unique: ...}): a body the capture
            # shows written once and read on one reader, sent again after a Confirm covered it, after its
            # delivery on a none lease, with other properties, or not at once after a recycling Reject
            # covered it (conformance/trace/sessions/mtl_contents.py)
            "ignores-multiple", "confirm-multiple-exclusive", "redeliver-drops-properties",
            "redeliver-on-none-reader", "reject-ignores-multiple",
            # across connections (sessions/mtl.py): a lease granted on a second data connection after the
            # first, granted it, closed (docs/profiles/mtl.md: the lease dies with its connection)
            "lease-reclaimable-after-close"},
    "rsocket": {"even-stream-ids", "app-error-on-stream-zero", "keepalive-data-dropped", "keepalive-not-echoed",
                "setup-version-accepted", "setup-zero-timers-accepted", "first-frame-served", "second-setup-closes",
                "credit-past-grant", "request-n-zero-accepted", "ignores-cancel", "cancel-unknown-closes",
                "stream-in-use-replaced", "metadata-overrun-ignored", "lease-not-sent",
                "error-data-latin1", "first-stream-3",
                "metadata-push-on-stream", "requests-zero", "setup-version-2",
                "setup-keepalive-zero", "mime-null-terminated",
                "request-on-stream-zero-closes",
                # the client's ERROR[CONNECTION_ERROR] right after a SETUP or a PAYLOAD on an unknown stream,
                # its request-response unanswered (the case pauses silence_ms before the answer)
                "setup-frame-closes", "unknown-stream-payload-closes",
                # a test client's `request-response` case still open reply_ms after ERROR[APPLICATION_ERROR] or a
                # PAYLOAD without C answered it (rules/rsocket_testcase.py, ResponseCase)
                "stream-error-ignored", "waits-for-complete",
                # ... still open close_ms after ERROR[UNSUPPORTED_SETUP] rejected its SETUP; its `stream` case
                # silent expect_ms without the REQUEST_N it owes once it took the two items it asked for
                "ignores-setup-rejection", "no-request-n",
                # the test service's promises (rules/rsocket_service.py; a capture of a conformance run):
                # a channel completed without the echo of the requester's last item, an echo of the first
                # fragment alone, a route in the routing entry not served, last-fnf with the fnf's first
                # fragment (across connections, only where the capture proves which fnf was last)
                "channel-next-complete-item-dropped", "server/fragments-not-joined", "routing-ignored",
                "fragmented-fnf-not-joined",
                # the client's `stream` test case (rules/rsocket_testcase.py) wants all five items of range:5:
                # its close right after item 1, which came behind ERROR[INVALID_SETUP], answers the ERROR
                "setup-error-always-closes",
                # the `resume` test case's REQUEST_N of 2 proves it took items 0 and 1 (server position 14):
                # its RESUME names 0 (rules/rsocket_testcase.py, sessions/rsocket.py)
                "resume-position-zero",
                # the test service sends what it owes without delay (rules/rsocket_service.py, stalls): the
                # suite's close comes expect_ms after the request with range:2's items on the reused id, or
                # the fragmented range:3's last two, or the fragmented channel's completion, still owed
                "ids-never-reused", "fragmented-request-n-lost", "fragmented-channel-complete-lost",
                # ... or range:300's items past the two it asked for at first, owed on the saturated credit
                # its two REQUEST_Ns of 2^31-1 gave (rsocket-credits-cumulative)
                "credit-wraps",
                # a conformance run's capture holds every connection of the session: the RESUME_OK names 26,
                # the client's frames end at 12 (sessions/rsocket.py)
                "resume-position-counts-keepalive",
                # ... and no SETUP carried the tokens the suite RESUMEs without one of its own: a RESUME_OK to
                # them resumes a session the server never had (sessions/rsocket.py, the profile's test service)
                "resume-any-token",
                # a test client's RESUME after an ERROR[REJECTED_RESUME] its `resume` case read: it came within
                # the reply_ms the case waits for its RESUME's answer (the profile), before the client ended
                "resumes-after-rejection",
                # ... and a test client's `request-response` ending the connection with its answer begun in
                # fragments, within the reply_ms it waits (client-joins-fragments pauses after the first)
                "client/fragments-not-joined",
                # across connections (conformance/trace/sessions/rsocket.py)
                "resume-ok-sent-position", "resume-lease-not-restarted",
                # dropping an EXT of unknown type with I set is the spec's "frames not accounted for MUST be
                # ignored" (rsocket-unaccounted-ignored, which ext-ignorable-dropped and client-ignorable-ext
                # test beside rsocket-ignore-flag); and the frames after RESUME_OK going on from the client's
                # position (rsocket-resume-server-implied-position, which resume-replays-missed-frames tests)
                "server/ignorable-ext-closes", "client/ignorable-ext-closes", "resume-no-replay",
                # a METADATA_PUSH with M clear does not decode: the rules file it under the frame's layout
                # (rsocket-metadata-push-no-length: "This frame only supports Metadata"), which
                # client-metadata-push names
                "metadata-push-m-clear",
                # a PAYLOAD on a request-stream after the server's own COMPLETE on it; a REQUEST_CHANNEL with
                # initial n 0 never answered by its ERROR (rules/rsocket.py)
                "extra-complete-after-last", "channel-initial-n-zero-accepted",
                # the test service's stall (rules/rsocket_service.py): range:2 on the id a CANCEL ended, re-used
                # once 2^31-1 was, its items still owed when the suite closes expect_ms later
                "cancel-keeps-id-in-use",
                # the client's ERROR[CONNECTION_ERROR] right after an ERROR on a stream no frame had used, or a
                # PAYLOAD on stream 0 (a frame that does not decode, ignorable), its request-response unanswered
                "error-unknown-stream-closes", "payload-stream-zero-closes"},
}
OTHER = {
    "stmp": {"kind-bits-swapped": "stmp-field-order"},
    # rsio: the one-byte packed count leaves bytes that do not frame (rsio-message-framing, where the case
    # names rsio-fixed-size); the one-byte onNext length leaves the element's bytes read as a message of an
    # unassigned type (the rules file unknown-type under rsio-serialization-format, where the case names
    # rsio-message-framing)
    "rsio": {"packed-count-u8": "rsio-message-framing", "onnext-length-u8": "rsio-serialization-format",
             # the server echoes the Id 2^63 it took in its subscribed: invalid bytes from the server
             "id-u64-accepted": "rsio-message-framing",
             # elementSize 44 (300 & 0xFF) for the 300-byte elements: read by that size, the elements leave a
             # stray byte read as the type of a message in the extension range
             "subscribed-size-u8": "rsio-extension-type-before-hello"},
    "micromessage2": {"large-threshold-512": "mm2-flags-byte",
                      # the one-byte length (339 & 0xFF) cuts the type frame short: its rest is read as frames
                      # with reserved flags
                      "extension-large-unset": "mm2-flags-byte",
                      # the properties length's high byte dropped (300 -> 44): the rest of the properties is read
                      # as frames with reserved flags
                      "props-len-high-byte-dropped": "mm2-flags-byte"},
    # the streams the second SETUP dropped show as the test service's stall: range:3's items 1 and 2, owed on
    # the REQUEST_N sent after it (rsocket-credits-cumulative, where the case names rsocket-second-setup)
    "rsocket": {"second-setup-resets-streams": "rsocket-credits-cumulative"},
}
#: per protocol, the bugs the passive rules cannot see and why (every bug of a protocol named here
#: is in EXACT, OTHER or here)
UNSEEN = {
    "rsio": {
        "initial-demand-u64-clamped": "the server answers the subscribe with subscribed, not goodbye, and the suite closes "
                                      "on that answer within prompt_ms: a passive reader cannot tell an answer sent after "
                                      "the invalid varint was read from one sent before",
        "overlong-only-on-ids": "the rules hold no peer to refusing an overlong varint (a SHOULD: varint-overlong is not "
                                "fatal to them), so a server that takes one in a demand gives no finding",
        "request-zero-before-lookup": "the onError comes after the stream's onComplete, for a subscriber the rules no "
                                      "longer track: they judge a server's signals on open streams only",
        "lenient-utf8": "the client answers the malformed onError with goodbye and closes once the suite answers, as a "
                        "correct client may: only its exit code (0, its case ended in order) differs",
    },
    "micromessage2": {
        "client/ignores-error": "the server's ERROR comes with its close, and the client's close follows from that "
                                "close either way: the capture is the same",
        "reserved-bits-only-on-send": "the bug is an ERROR never sent: after the suite's reserved-bit COMMAND or "
                                      "EXTENSION frame (invalid bytes) the rules owe no ERROR on a timer, so the "
                                      "server's silence is no finding",
        "final-major-unchecked": "the bug is an ERROR never sent: the rules owe ERROR for another major only to the "
                                 "side answered by a hello of it, and keep no timer on the server's silence after "
                                 "a final message",
        "server-no-ack-under-batch-ack": "the bug is an ack never sent: a batch-ack receiver may wait until "
                                         "max-count messages are pending, and the rules keep no timer on an ack owed",
        "dotnet-type-once": "the rules do not track dotnet type frames: a MESSAGE with no type frame of its own "
                            "before it gives no finding",
    },
    "stmp": {
        "notify-enc0-writes-ps": "the PS of four zero bytes after the Notify reads as four Pings, which a server may "
                                 "send at any time: the capture is valid STMP",
        "client-pings-once": "the rules hold a test client to its first Ping only (the profile's window after the "
                             "negotiation's Ok); its silence after that Ping, the suite pinging, is not judged",
    },
    "mtl": {
        "long-threshold-off-by-one": "the 256-octet body goes out as a short frame of size 0, a valid empty body; its "
                                     "octets then read as frames, the last with an 8-octet size near 2^58, which no "
                                     "rule can call wrong (the reader notes it too large and stops reading that side)",
        "fan-out-per-control-session": "a Content never delivered leaves nothing in the capture: the rules hold no "
                                       "promise of when (or that) the test profile's fan-out delivers",
        "reject-multiple-lax-boolean": "the rules ignore the invalid Reject, and the two bodies sent again right after it "
                                       "read as redeliveries: no rule bounds how early a Content may be sent again",
        "only-ping-pong-is-traffic": "the rules judge what a peer silent past the timeout is sent, not when the server "
                                     "closes a data connection: the close of a peer still sending Confirms is just a close",
        "confirm-multiple-unbounded": "a Content never sent again leaves nothing in the capture: the rules hold no "
                                      "promise of when the confirm timeout resends (and ignore a multiple Confirm "
                                      "above every delivery seen)",
        "accepts-incompatible-socket-type": "the ROUTER's READY is the same either way; what differs is the close it "
                                            "owes the PUB peer, and the rules bound no server close after a READY",
        "pings-once": "a Ping never sent leaves nothing in the capture: the rules hold no Ping schedule",
        "ping-timer-from-rx": "a Ping never sent leaves nothing in the capture: the rules hold no Ping schedule",
    },
    "mc0": {
        "empty-id-ignored": "the rules judge a missing answer only for a message that does not decode: a request "
                            "with ID left unanswered (ID '', the client closing after the suite's wait) gives no "
                            "finding",
        "refused-no-id-silent": "which well-formed requests without ID a broker refuses is its reading (the profile "
                                "leaves unknown reserved headers open): silence after a PUT without TOPIC proves "
                                "nothing to the rules",
    },
    "rsocket": {
        "complete-alone-is-item": "the client takes the stream's items internally: it sends the same frames either "
                                  "way (only its exit code differs)",
        "rejected-setup-from-client-closes": "the server closes without a frame; a close after a frame to ignore is "
                                             "judged only for a side with a stream of its own still open, and the test "
                                             "service requests none (a server may end a connection otherwise)",
        "mime-non-ascii-accepted": "the suite's SETUP does not decode (mime-not-ascii, filed against the suite's "
                                   "side), and the server's answer to a first frame that does not decode is not "
                                   "judged (it may call it a CONNECTION_ERROR instead of INVALID_SETUP)",
    },
}
PROTOCOLS = sorted(EXACT)
ALL = {(p, one.role, one.bug): one for p in PROTOCOLS for one in catalog(p)}

pytestmark = pytest.mark.slow


def _entry(table, role: str, bug: str) -> str | None:
    """The table's key for a bug: its name, or role/name where both roles have a bug of that name."""
    for key in (f"{role}/{bug}", bug):
        if key in table:
            return key
    return None


def _covered(protocol: str, role: str, bug: str) -> bool:
    return _entry(EXACT[protocol], role, bug) is not None or _entry(OTHER.get(protocol, {}), role, bug) is not None


def _target_findings(one, path):
    result = check(one, path)
    assert result.problems == []
    return [f for f in result.findings if f.sender == one.role]


def test_the_tables_name_only_catalogued_bugs():
    names = {(p, key) for p, role, bug in ALL for key in (bug, f"{role}/{bug}")}
    assert {(p, key) for p in PROTOCOLS for key in EXACT[p] | set(OTHER.get(p, {})) | set(UNSEEN.get(p, {}))} <= names


@pytest.mark.parametrize("protocol", sorted(UNSEEN))
def test_every_bug_the_rules_miss_has_a_reason_and_no_other(protocol):
    for p, role, bug in ALL:
        if p == protocol:
            unseen = _entry(UNSEEN[protocol], role, bug) is not None
            assert unseen != _covered(p, role, bug), f"{role}/{bug}: " + ("both in UNSEEN and covered" if unseen
                                                                          else "neither covered nor in UNSEEN")


@pytest.mark.parametrize("protocol,role,bug", sorted(k for k in ALL if _covered(*k)))
def test_a_one_bug_target_gives_its_finding_and_its_twin_none(protocol, role, bug, tmp_path):
    one = ALL[(protocol, role, bug)]
    capture_cases(one, bug, tmp_path / "bug.pcapng")
    found = _target_findings(one, tmp_path / "bug.pcapng")
    if _entry(EXACT[protocol], role, bug):
        wanted = set().union(*(requirements_of_case(protocol, c) for c in one.cases))
    else:
        wanted = {OTHER[protocol][_entry(OTHER[protocol], role, bug)]}
    assert {f.requirement for f in found} & wanted, [str(f) for f in found]
    capture_cases(one, None, tmp_path / "twin.pcapng")
    assert [str(f) for f in _target_findings(one, tmp_path / "twin.pcapng")] == []


@pytest.mark.parametrize("protocol,role,bug", sorted(k for k in ALL if not _covered(*k)))
def test_the_twin_of_a_bug_the_rules_miss_gives_no_finding(protocol, role, bug, tmp_path):
    one = ALL[(protocol, role, bug)]
    capture_cases(one, None, tmp_path / "twin.pcapng")
    assert [str(f) for f in _target_findings(one, tmp_path / "twin.pcapng")] == []


def test_the_readme_counts_what_the_tables_say():
    from pathlib import Path
    text = " ".join((Path(__file__).resolve().parents[2] / "README.md").read_text().split())
    exact = sum(1 for p, role, bug in ALL if _entry(EXACT[p], role, bug))
    other = sum(1 for p, role, bug in ALL if _entry(OTHER.get(p, {}), role, bug))
    assert f"{exact} of the {len(ALL)} one-bug targets give a finding naming their requirement and {other} more" in text
