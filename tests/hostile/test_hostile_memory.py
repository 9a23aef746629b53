"""The suite's memory stays bounded under every hostile target, measured in a fresh process.

ru_maxrss is a process's peak: in the test process it already holds whatever earlier tests
reached, so growth there proves little.  A child process runs one case per protocol against
each flooding target at once (endless frames, endless garbage, the largest length announced)
and reports its peak growth.  The Micromessage2 and rsio floods are joined up to the
harness's 64 MiB message limit before they are refused, so the bound allows two of those
plus room for the interpreter; without a bounded wire log this run grew past 1 GiB.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
ROOT = HERE.parent.parent
BOUND_MIB = 2 * 64 + 128

CHILD = r"""
import asyncio, json, resource, sys
sys.path[:0] = [sys.argv[1], sys.argv[2]]
import hostile_targets as H

# (protocol, case, deadline): the ZMTP floods are noise that only the deadline ends; the
# Micromessage2 and rsio ones end when their join passes 64 MiB, however loaded the machine
RUNS = [
    ("micromessage2", "micromessage2/handshake/same-version", 20000),
    ("rsio", "rsio/handshake/version-0", 20000),
    ("mc0", "mc0/ack-wrap/noop-id", 2000),
    ("mtl", "mtl/handshake/plain-good", 2000),
]
for protocol, _, _ in RUNS:
    H.cases_of(protocol)

async def main():
    jobs = [H.run_against(p, b, [c], ms) for p, c, ms in RUNS for b in ("endless", "garbage", "announce-max")]
    return [o for outcomes in await asyncio.gather(*jobs) for o in outcomes]

def rss_kib():  # the resident size now (ru_maxrss is the peak so far: loading the cases set it)
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))

before = rss_kib()
outcomes = asyncio.run(main())
grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(json.dumps({"grown_kib": grown, "sent": sum(o.bytes_sent for o in outcomes),
                  "grades": sorted({o.result.grade.value for o in outcomes}),
                  "messages": [o.result.message[:100] for o in outcomes],
                  "entries": max(len(o.result.log.entries) for o in outcomes)}))
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads VmRSS from /proc")
def test_memory_stays_bounded_under_every_flood() -> None:
    proc = subprocess.run([sys.executable, "-c", CHILD, str(HERE), str(HERE.parent / "harness")],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["grades"] == ["FAILED"], report
    joins = [m for m in report["messages"] if "join" in m or "split element" in m]
    assert len(joins) == 2 and all("too-large" in m for m in joins), report["messages"]
    assert report["sent"] > 2 * 64 * 1024 * 1024, report  # the targets really flooded the suite
    assert report["entries"] <= 1000, report  # the wire log keeps its first and last entries only
    assert report["grown_kib"] < BOUND_MIB * 1024, report
