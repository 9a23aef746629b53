"""A real capture: tcpdump on the loopback interface records a client talking to the reference
STMP server, and check-trace reads the file.  Skips only where tcpdump is missing or lacks the
capture privilege (not root, no CAP_NET_RAW); under CI (CI=true) it must run."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess

import pytest

from conformance.trace.check import check_file
from reference_impl.stmp import server as stmp_server
from reference_impl.stmp.client import run_client_testcase


def _skip_or_fail(why: str):
    if os.environ.get("CI") == "true":
        pytest.fail(why)
    pytest.skip(why)


def test_tcpdump_capture_of_a_reference_run_checks_clean(tmp_path):
    tcpdump = shutil.which("tcpdump")
    if tcpdump is None:
        _skip_or_fail("tcpdump is not installed (scripts/system-deps.sh test installs it)")

    async def scenario(pcap):
        server = await stmp_server.start_tcp_server("127.0.0.1", 0)
        port = int(server.url.rsplit(":", 1)[1].strip("/"))
        proc = subprocess.Popen([tcpdump, "-i", "lo", "-U", "-s", "0", "-Z", "root" if os.geteuid() == 0 else os.environ.get("USER", "root"),
                                 "-w", str(pcap), f"tcp port {port}"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            # tcpdump says "listening on lo" once its filter is attached: the file header comes earlier
            loop = asyncio.get_running_loop()
            try:
                line = await asyncio.wait_for(loop.run_in_executor(None, proc.stderr.readline), 10)
            except TimeoutError:
                return port, proc, "tcpdump said nothing within 10 s"
            if b"listening on" not in line:
                proc.wait(5)
                return port, proc, (line + proc.stderr.read()).decode(errors="replace")
            await asyncio.sleep(0.5)
            code = await asyncio.wait_for(run_client_testcase(server.url, "echo"), 20)
            assert code == 0
            await asyncio.sleep(0.5)
            return port, proc, None
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            await server.close()

    pcap = tmp_path / "lo.pcap"
    port, proc, error = asyncio.run(scenario(pcap))
    if error is not None:
        if "permission" in error.lower() or "not permitted" in error.lower():
            _skip_or_fail(f"tcpdump cannot capture here: {error.strip()}")
        pytest.fail(f"tcpdump did not start: {error}")
    result = check_file(pcap, {port: "stmp"}, None, {})
    assert result.problems == []
    assert result.connections == 1 and result.frames >= 4
    assert [str(f) for f in result.findings] == []
    assert [str(n) for n in result.notes] == []
