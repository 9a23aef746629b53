"""`conformance run --pcap` against the reference implementation, then check-trace: no finding
against the target (the server side).  Findings against the suite's side are expected: the
suite sends invalid bytes on purpose."""

from __future__ import annotations

import pytest

from conformance.cli import main
from conformance.trace.check import check_file
from conformance.protocols import adapter_for

pytestmark = pytest.mark.slow

# a few cases per protocol keep this test short; every case: scripts or `conformance run all --pcap`
SUBSET = {
    "stmp": "handshake or error-disconnect or ack-wrap",
    "micromessage2": "handshake",
    "rsio": "handshake",
    "mc0": "curve",
    "mtl": "open",
}


@pytest.mark.parametrize("protocol", sorted(SUBSET))
def test_reference_run_capture_has_no_finding_against_the_target(protocol, tmp_path):
    pcap = tmp_path / "run.pcapng"
    main(["run", protocol, "--out", str(tmp_path / "out"), "--pcap", str(pcap), "-k", SUBSET[protocol]])
    assert pcap.stat().st_size > 0
    adapter = adapter_for(protocol)
    result = check_file(pcap, {}, protocol, {**adapter.params, **adapter.ref_params})
    assert result.connections > 0 and result.frames > 0
    assert [str(f) for f in result.findings if f.sender == "server"] == []
