import subprocess
import sys
from pathlib import Path

import pytest

# suite_helpers (run single cases through the harness) lives in tests/harness.
sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "harness"))

ROOT = Path(__file__).resolve().parents[2]
CONFORMANCE = [sys.executable, "-m", "conformance.cli"]


@pytest.fixture(scope="session")
def reference_run(tmp_path_factory):
    """The whole Micromessage2 suite run by the CLI against the reference in separate processes.

    Started once per session (early, see below) and stopped by its handle if still running."""
    out = tmp_path_factory.mktemp("mm2-cli")
    serve = f"{sys.executable} -m conformance.cli serve micromessage2"
    proc = subprocess.Popen(
        CONFORMANCE + ["run", "micromessage2", "--out", str(out),
                       "--target", f"cmd:{serve} --port {{port}}",
                       "--target-client", f"{serve} --role client --connect {{url}} --testcase {{testcase}}"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True)
    yield proc, out
    if proc.poll() is None:
        proc.kill()
        proc.wait(10)


@pytest.fixture(scope="session", autouse=True)
def _start_reference_run_early(request):
    # The CLI run mostly waits on sockets and timers: start it before the in-process tests so the two overlap.
    if any("reference_run" in getattr(item, "fixturenames", ()) for item in request.session.items):
        request.getfixturevalue("reference_run")
