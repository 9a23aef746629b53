"""`conformance run --pcap` against the reference implementation, then check-trace (with the key
log the run wrote beside the capture: mc0's CURVE boxes opened): no finding
against the target (the server, or the client in client-role cases).  Findings against the
suite's side are expected: the suite sends invalid bytes on purpose."""

from __future__ import annotations

import pytest

from conformance.cli import main
from conformance.trace import capture
from conformance.trace.check import check_file
from conformance.trace.keylog import beside, read
from conformance.trace.sessions import Sessions
from conformance.protocols import adapter_for

pytestmark = pytest.mark.slow

# a few families per protocol keep this test short (a full run: `conformance run all --pcap FILE`), and
# every client-role case (`client` in its id), where the rules judge the test clients' cases
SUBSET = {
    "stmp": "handshake or error-disconnect or ack-wrap or client",
    "micromessage2": "handshake or framing or client",
    "rsio": "handshake or framing or client",
    "mc0": "curve or connect",
    "mtl": "open or lease",
    "rsocket": "handshake or request or client",
}


@pytest.mark.parametrize("protocol", sorted(SUBSET))
def test_reference_run_capture_has_no_finding_against_the_target(protocol, tmp_path):
    pcap = tmp_path / "run.pcapng"
    main(["run", protocol, "--out", str(tmp_path / "out"), "--pcap", str(pcap), "-k", SUBSET[protocol]])
    assert pcap.stat().st_size > 0
    adapter = adapter_for(protocol)
    keys = read([beside(pcap)]) if beside(pcap).exists() else None
    assert (keys is not None) == (protocol == "mc0")  # only mc0 runs CURVE
    if keys is not None:  # the suite's client keys and the in-process reference broker's
        assert beside(pcap).read_text().startswith("# CURVE key log v1:") and keys.clients and keys.servers
    result = check_file(pcap, {}, protocol, {**adapter.params, **adapter.ref_params}, keys)
    assert result.connections > 0 and result.frames > 0
    sessions = Sessions()  # and across connections (resumed RSocket sessions, MTL leases)
    sessions.add(str(pcap), result.facts)
    findings = result.findings + [finding for _, finding in sessions.findings()]
    target = capture.target_sides(capture.last)
    assert [str(f) for f in findings if target[f.connection] == f.sender] == []
    assert not any("encrypted" in n.reason for n in result.notes)  # every CURVE session opened
