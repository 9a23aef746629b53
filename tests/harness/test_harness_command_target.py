"""cmd: targets are started by the suite, stopped by their PID, and never outlive it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conformance.targets import CommandTarget, TargetError

ROOT = Path(__file__).resolve().parents[2]
SERVER = f"{sys.executable} -m conformance.cli serve stmp --port {{port}}"


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        return True
    except OSError:
        return False


def _gone(pid: int) -> bool:
    """Exited (a zombie waiting for whoever adopted it counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


def test_the_target_is_the_pid_we_started_and_stops_with_close() -> None:
    target = CommandTarget(f"cmd:{SERVER}")
    url = target.endpoint("stmp", "tcp")
    port = int(url.rsplit(":", 1)[1])
    proc = target._procs["tcp"][0]
    try:
        assert _listening(port)
        with open(f"/proc/{proc.pid}/cmdline", "rb") as f:
            assert b"conformance.cli" in f.read()  # the exec replaced the trampoline: same PID
    finally:
        target.close()
    assert proc.poll() is not None and not _listening(port)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux-only")
def test_a_suite_killed_by_sigkill_takes_its_target_with_it(tmp_path: Path) -> None:
    suite = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(ROOT)!r})
        from conformance.targets import CommandTarget
        target = CommandTarget({f"cmd:{SERVER}"!r})
        url = target.endpoint("stmp", "tcp")
        print(target._procs["tcp"][0].pid, url.rsplit(":", 1)[1], flush=True)
        time.sleep(60)
    """)
    proc = subprocess.Popen([sys.executable, "-c", suite], stdout=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        pid, port = map(int, proc.stdout.readline().split())
        assert _listening(port)
    finally:
        proc.send_signal(signal.SIGKILL)  # no finalizer, no atexit: only the kernel can clean up
        proc.wait(10)
    deadline = time.monotonic() + 10
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        assert _gone(pid), "the target outlived the suite"
        assert not _listening(port)
    finally:
        if not _gone(pid):
            os.kill(pid, signal.SIGKILL)


def test_a_missing_program_is_a_clear_error() -> None:
    with pytest.raises(TargetError, match="no-such-program-here.*no such program"):
        CommandTarget("cmd:no-such-program-here --port {port}").endpoint("stmp", "tcp")
