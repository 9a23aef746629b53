"""A connection the suite half-closed (`close: half`) and the peer still holds open when the case
ends is closed with an RST (conformance/channels.py, TcpChannel._reset): after the suite's FIN an
orderly close puts nothing on the wire, and a capture could not date when the suite gave up.  Any
other close stays orderly.  The peers are plain sockets on threads, so what they see is the
kernel's, not the suite's own account."""

from __future__ import annotations

import asyncio
import socket
import threading

import pytest

from conformance.channels import TcpChannel
from conformance.trace import capture
from conformance.wirelog import NOTE, WireLog


_TCP_STATES = {7: "CLOSE", 8: "CLOSE_WAIT", 9: "LAST_ACK"}  # include/net/tcp_states.h


class _Peer:
    """Accepts one connection, reads until the suite's FIN, closes then only if ``closes_on_eof``,
    and after ``probe`` is set tells its socket's TCP state (an RST closes it at once)."""

    def __init__(self, closes_on_eof: bool) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.closes_on_eof = closes_on_eof
        self.got_eof = threading.Event()
        self.probe = threading.Event()
        self.after: bytes | str | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        conn, _ = self.listener.accept()
        with conn:
            conn.settimeout(5)
            while conn.recv(100):
                pass
            self.got_eof.set()
            if self.closes_on_eof:
                conn.shutdown(socket.SHUT_WR)
            self.probe.wait(5)
            # the kernel's state of the peer's socket: an RST moves it from CLOSE_WAIT to CLOSE at once
            self.after = _TCP_STATES.get(conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 1)[0], "other")

    def finish(self):
        self.probe.set()
        self.thread.join(5)
        self.listener.close()
        return self.after


async def _session(peer: _Peer, half_close: bool, wait_for_peer: bool = True) -> WireLog:
    log = WireLog()
    channel = await TcpChannel.open(f"tcp://127.0.0.1:{peer.port}", log, 2)
    await channel.send(b"hi")
    if half_close:
        await channel.half_close()
        await asyncio.to_thread(peer.got_eof.wait, 5)
        if wait_for_peer and peer.closes_on_eof:
            assert await channel.recv(2) is None  # the peer's FIN, read as a case's expect_close would
    await channel.close()
    await asyncio.sleep(0.05)
    return log


def _notes(log: WireLog) -> str:
    return "\n".join(str(e.data) for e in log.entries if e.direction == NOTE)


def test_a_peer_still_open_after_the_suites_fin_is_reset():
    peer = _Peer(closes_on_eof=False)
    log = asyncio.run(_session(peer, half_close=True))
    assert peer.finish() == "CLOSE"
    assert "closing with RST" in _notes(log)


def test_a_peer_that_closed_after_the_suites_fin_is_not_reset():
    peer = _Peer(closes_on_eof=True)
    log = asyncio.run(_session(peer, half_close=True))
    assert peer.finish() == "CLOSE"  # its FIN answered by the suite's ACK: an orderly end
    assert "closing with RST" not in _notes(log)


def test_a_close_without_a_half_close_first_stays_orderly():
    peer = _Peer(closes_on_eof=False)
    asyncio.run(_session(peer, half_close=False))
    peer.got_eof.wait(5)
    assert peer.finish() == "CLOSE_WAIT"  # the suite's FIN only: the peer may still close in its time


@pytest.fixture
def recorder():
    rec = capture.start()
    yield rec
    capture.stop()


def test_the_capture_shows_the_suites_fin_then_its_rst(recorder):
    peer = _Peer(closes_on_eof=False)
    asyncio.run(_session(peer, half_close=True))
    peer.finish()
    [conn] = recorder.conns
    ends = [(side, data) for _, side, data in conn.events if isinstance(data, str)]
    assert ends == [("client", "FIN"), ("client", "RST")]


def test_the_capture_of_a_peer_that_closed_has_no_rst(recorder):
    peer = _Peer(closes_on_eof=True)
    asyncio.run(_session(peer, half_close=True, wait_for_peer=False))  # the drain reads the peer's FIN
    peer.finish()
    [conn] = recorder.conns
    ends = [(side, data) for _, side, data in conn.events if isinstance(data, str)]
    assert ends == [("client", "FIN"), ("server", "FIN")]
