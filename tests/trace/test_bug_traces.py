"""The zero-findings / right-finding property on the suite's own traffic (`run --pcap`):
a capture of a one-bug target's cases gives a finding against the target's role naming a
requirement the catching case tests (docs/requirements, independent of the checker), and the
same cases against the correct twin give none against the target.

How far it goes, per protocol (every bug of conformance/selftest/<protocol>_bugs.py is in one
table): EXACT bugs are found with a requirement the catching case names; OTHER are found under
another requirement (named here); the rest are not visible to the passive rules (timers,
encrypted mc0 traffic, handshake contents, windows): for those the test only checks that the
twin's capture gives no finding against the target, and where a protocol has an UNSEEN table,
that it gives each one's reason.
"""

from __future__ import annotations

import pytest

from conformance.selftest.catalog import catalog
from tests.trace.bugtraces import capture_cases, check, requirements_of_case

EXACT = {
    "stmp": {"no-close-after-0x35", "wrong-id-after-wrap", "ps-missing", "accepts-before-negotiation",
             "no-heartbeats", "answers-unknown-response", "reserved-bits-ignored", "pings-before-negotiating"},
    "micromessage2": {"zero-based-ids", "hello-before-check", "server/ignores-error"},  # role/: one role's bug
    "rsio": {"past-demand", "wrong-version-no-goodbye", "no-close-after-goodbye", "no-goodbye-reply",
             "uses-unlisted-extension"},
    "mc0": {"accepts-null"},
    "mtl": {"content-after-dismiss", "summon-twice-ok", "answers-ill-formed"},
    "rsocket": {"even-stream-ids", "app-error-on-stream-zero", "keepalive-data-dropped", "keepalive-not-echoed",
                "setup-version-accepted", "setup-zero-timers-accepted", "first-frame-served", "second-setup-closes",
                "credit-past-grant", "request-n-zero-accepted", "ignores-cancel", "cancel-unknown-closes",
                "stream-in-use-replaced", "metadata-overrun-ignored", "lease-not-sent",
                "error-data-latin1", "first-stream-3",
                "setup-error-always-closes", "metadata-push-on-stream", "requests-zero", "setup-version-2",
                "setup-keepalive-zero"},
}
OTHER = {
    "stmp": {"kind-bits-swapped": "stmp-field-order"},
    "micromessage2": {"large-threshold-512": "mm2-flags-byte"},
    # the case names rsocket-ignore-flag, the MAY of closing on a frame *without* I: dropping an EXT
    # of unknown type with I set is the spec's "frames not accounted for MUST be ignored"
    "rsocket": {"server/ignorable-ext-closes": "rsocket-unaccounted-ignored"},
}
#: why a bug is not caught passively: what the capture would have to show, and does not
UNSEEN = {
    "rsocket": {
        "credit-wraps": "a wrapped credit stalls the stream: the server sends less, never more, and a trace cannot "
                        "tell a stall from a stream with nothing to send yet (that range:300 has more is the "
                        "application's)",
        "server/fragments-not-joined": "the request's fragments are all on the wire before the answer; that the "
                                       "answer was to the first fragment alone shows only in its content (echo)",
        "routing-ignored": "which route served a request is application semantics (the data it echoes)",
        "ids-never-reused": "the server stays silent on a reused id; when or whether a responder answers is the "
                            "application's",
        "resume-ok-sent-position": "RESUME_OK's position is what the server received, which a capture cannot tell "
                                   "from what the client sent (bytes in flight when the transport dropped), and "
                                   "the session spans connections, which are checked one at a time",
        "resume-no-replay": "the frames owed after RESUME_OK were sent on an earlier connection: a session spans "
                            "connections, which are checked one at a time",
        "resume-any-token": "whether a token names a session the server kept is the server's state (sessions from "
                            "other connections, or from before the capture)",
        "resume-lease-not-restarted": "the L flag of the session is in the SETUP of an earlier connection; "
                                      "connections are checked one at a time",
        "ignores-setup-rejection": "the client should close after the rejection, but the server closes right "
                                   "after its ERROR too, so which side closes first proves nothing",
        "client/fragments-not-joined": "the client's reassembly is internal: it sends the same frames either way "
                                       "(only its exit code differs)",
        "stream-error-ignored": "what the client makes of an ERROR on its stream is internal: it sends nothing "
                                "either way",
        "waits-for-complete": "the client treats a response without C as complete or not internally: it sends "
                              "nothing either way",
        # the case's last frame follows the frame to ignore at once and the suite closes: the client's
        # ERROR comes after the capture ends (a capture that shows it is caught, under the same requirement)
        "client/ignorable-ext-closes": "the client's ERROR answering the EXT comes after the suite closed",
        "setup-frame-closes": "the client's ERROR answering the SETUP comes after the suite closed",
        "no-request-n": "a requester may request no more: only the testcase knows it wanted all five",
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
def test_every_bug_the_rules_miss_has_a_reason(protocol):
    missed = {(role, bug) for p, role, bug in ALL if p == protocol and not _covered(p, role, bug)}
    assert {(role, bug) for role, bug in missed if _entry(UNSEEN[protocol], role, bug) is None} == set()
    caught = {(role, bug) for p, role, bug in ALL if p == protocol and _covered(p, role, bug)}
    assert {(role, bug) for role, bug in caught if _entry(UNSEEN[protocol], role, bug)} == set()


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
