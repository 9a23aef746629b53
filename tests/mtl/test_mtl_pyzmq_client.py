"""A third-party peer: the pyzmq (libzmq) MTL client of thirdparty/ against the reference server."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from conformance.selftest.buggy_mtl import BuggyMtlServer
from conformance.targets import LoopThread
from reference_impl.mtl.server import start_server

pytest.importorskip("zmq")
ROOT = Path(__file__).resolve().parents[2]
SPEC = importlib.util.spec_from_file_location("pyzmq_mtl_client", ROOT / "thirdparty" / "pyzmq_mtl_client.py")
client = importlib.util.module_from_spec(SPEC)
sys.modules["pyzmq_mtl_client"] = client
SPEC.loader.exec_module(client)


class ServerThread:
    """A server on its own event loop, so the blocking pyzmq client can run in the test's thread."""

    def __init__(self, start) -> None:
        self.loop = LoopThread("mtl-ref")
        self.server = self.loop.run(start(), 10)

    def stop(self) -> None:
        self.loop.run(self.server.close(), 10)
        self.loop.stop()


def test_pyzmq_client_completes_the_test_profile(capsys) -> None:
    ref = ServerThread(lambda: start_server("127.0.0.1", 0, redeliver_after=0.5))
    try:
        code = client.main([ref.server.url, "--timeout", "5"])
    finally:
        ref.stop()
    out = capsys.readouterr().out
    assert code == 0, out
    assert "test profile: Content 1 arrived at the reader" in out
    assert "redelivered" in out and "pyzmq MTL client: OK" in out


def test_pyzmq_client_notices_a_broken_server(capsys) -> None:
    ref = ServerThread(lambda: BuggyMtlServer("port-as-string").start())
    try:
        code = client.main([ref.server.url, "--timeout", "2"])
    finally:
        ref.stop()
    assert code == 1
    assert "numeric port" in capsys.readouterr().err
