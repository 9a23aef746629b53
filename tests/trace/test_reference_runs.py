"""`conformance run --pcap` against the reference implementation, then check-trace: no finding
against the target (the server, or the client in client-role cases).  Findings against the
suite's side are expected: the suite sends invalid bytes on purpose."""

from __future__ import annotations

import pytest

from conformance.cli import main
from conformance.trace import capture
from conformance.trace.check import check_file
from conformance.trace.sessions import Sessions
from conformance.protocols import adapter_for

pytestmark = pytest.mark.slow

# a few families per protocol keep this test short (a full run: `conformance run all --pcap FILE`)
SUBSET = {
    "stmp": "handshake or error-disconnect or ack-wrap",
    "micromessage2": "handshake or framing",
    "rsio": "handshake or framing",
    "mc0": "curve or connect",
    "mtl": "open or lease",
    "rsocket": "handshake or request",
}


@pytest.mark.parametrize("protocol", sorted(SUBSET))
def test_reference_run_capture_has_no_finding_against_the_target(protocol, tmp_path):
    pcap = tmp_path / "run.pcapng"
    main(["run", protocol, "--out", str(tmp_path / "out"), "--pcap", str(pcap), "-k", SUBSET[protocol]])
    assert pcap.stat().st_size > 0
    adapter = adapter_for(protocol)
    result = check_file(pcap, {}, protocol, {**adapter.params, **adapter.ref_params})
    assert result.connections > 0 and result.frames > 0
    sessions = Sessions()  # and across connections (resumed RSocket sessions, MTL leases)
    sessions.add(str(pcap), result.facts)
    findings = result.findings + [finding for _, finding in sessions.findings()]
    target = capture.target_sides(capture.last)
    assert [str(f) for f in findings if target[f.connection] == f.sender] == []
