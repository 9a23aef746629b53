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

PROTOCOLS = ["mc0", "micromessage2", "mtl", "rsio", "rsocket", "stmp"]


# every scenario of each protocol (a full run takes seconds against the in-process reference), checked
# twice: with the reference's own waits (the run's exact parameters: the strictest windows), and with
# only what the capture records, as a user checks a capture
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_reference_run_capture_has_no_finding_against_the_target(protocol, tmp_path):
    pcap = tmp_path / "run.pcapng"
    main(["run", protocol, "--out", str(tmp_path / "out"), "--pcap", str(pcap)])
    assert pcap.stat().st_size > 0
    adapter = adapter_for(protocol)
    keys = read([beside(pcap)]) if beside(pcap).exists() else None
    assert (keys is not None) == (protocol == "mc0")  # only mc0 runs CURVE
    if keys is not None:  # the suite's client keys and the in-process reference broker's
        assert beside(pcap).read_text().startswith("# CURVE key log v1:") and keys.clients and keys.servers
    target = capture.target_sides(capture.last)
    for params in ({**adapter.params, **adapter.ref_params}, {}):
        _no_finding_against_the_target(pcap, protocol, params, keys, target)


def _no_finding_against_the_target(pcap, protocol: str, params: dict, keys, target: dict) -> None:
    result = check_file(pcap, {}, protocol, params, keys)
    assert result.connections > 0 and result.frames > 0
    sessions = Sessions()  # and across connections (resumed RSocket sessions, MTL leases)
    sessions.add(str(pcap), result.facts)
    findings = result.findings + [finding for _, finding in sessions.findings()]
    assert [str(f) for f in findings if target[f.connection] == f.sender] == [], params
    assert not any("encrypted" in n.reason for n in result.notes)  # every CURVE session opened
