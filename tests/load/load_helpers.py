"""Shared pieces of the load tests: the server process, client fan-out, the checks.

Every load test (:func:`run_load`) does the same against a reference server
running in its own process (load_server.py, so its memory and CPU are its own):

1. warm up with a few clients, let them leave, and take the baseline
   (tracemalloc after a full GC, asyncio tasks, file descriptors);
2. stall one client: it stops reading while the server has plenty to send,
   until the server's bytes pile up unread in it (the stall is real);
3. run CLIENTS concurrent clients doing the protocol's normal exchange for
   LOAD_SECONDS, each checking that every message comes back exactly once,
   and every round trip finishing within ROUND_TRIP_BOUND despite the stall;
   the stalled connection must still be held by the server at the end (it
   stalled the whole time);
4. with the stalled client still connected and still not reading, the server
   must give up on it by itself (its write timeout, 10 s, then a bounded
   close) and be back to its baseline: tasks and descriptors exactly, traced
   memory within MEMORY_TOLERANCE.
"""

from __future__ import annotations

import array
import asyncio
import contextlib
import fcntl
import json
import os
import socket
import sys
import termios
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from load_server import raise_nofile  # noqa: E402,F401  (re-exported for the tests)

CLIENTS = 500
LOAD_SECONDS = 4.0
ROUND_TRIP_BOUND = 3.0  # seconds; a stalled server would take the write timeout (10 s) or forever
CONNECT_AT_ONCE = 50  # the listen backlog is 100: open connections in waves
MEMORY_TOLERANCE = 1024 * 1024  # bytes of traced memory a full load may leave behind (caches, dict tables)
IDLE_TIMEOUT = 20.0  # > the servers' write timeout (10 s) + close timeout (2 s) after the load
STALL_MIN_BYTES = 64 * 1024


@dataclass
class Stats:
    traced: int
    peak: int
    rss: int
    tasks: int
    fds: int


class ServerProcess:
    """load_server.py in a subprocess, stopped by its handle."""

    def __init__(self, protocol: str) -> None:
        self.protocol = protocol
        self.proc: asyncio.subprocess.Process | None = None
        self.port = 0

    async def __aenter__(self) -> ServerProcess:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, str(Path(__file__).with_name("load_server.py")), self.protocol,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, env=env, cwd=ROOT)
        line = await asyncio.wait_for(self.proc.stdout.readline(), 20)
        self.port = json.loads(line)["port"]
        return self

    async def _ask(self, command: str) -> dict:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(command.encode() + b"\n")
        await self.proc.stdin.drain()
        return json.loads(await asyncio.wait_for(self.proc.stdout.readline(), 20))

    async def stats(self) -> Stats:
        return Stats(**await self._ask("stats"))

    async def open_files(self) -> list[str]:
        return await self._ask("fds")  # type: ignore[return-value]

    async def reset_peak(self) -> None:
        await self._ask("reset")

    async def wait_idle(self, baseline: Stats, timeout: float = IDLE_TIMEOUT) -> Stats:
        """Stats once the server holds no more tasks or descriptors than at the baseline (or at the timeout)."""
        deadline = time.monotonic() + timeout
        while True:
            stats = await self.stats()
            if (stats.tasks <= baseline.tasks and stats.fds <= baseline.fds) or time.monotonic() > deadline:
                return stats
            await asyncio.sleep(0.2)

    async def __aexit__(self, *exc) -> None:
        assert self.proc is not None
        with contextlib.suppress(Exception):
            self.proc.stdin.write(b"quit\n")
            await self.proc.stdin.drain()
        try:
            await asyncio.wait_for(self.proc.wait(), 15)
        except TimeoutError:
            self.proc.kill()  # by the handle we started it with
            await self.proc.wait()


def unread_bytes(writer: asyncio.StreamWriter) -> int:
    """Bytes sitting unread in the kernel receive buffer of a client socket."""
    sock = writer.get_extra_info("socket")
    buf = array.array("i", [0])
    fcntl.ioctl(sock.fileno(), termios.FIONREAD, buf)
    return buf[0]


TCP_ESTABLISHED = 1


def tcp_state(writer: asyncio.StreamWriter) -> int:
    """The kernel's TCP state of a client socket (Linux TCP_INFO; 1 = established)."""
    sock = writer.get_extra_info("socket")
    return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)[0]


async def wait_stalled(writer: asyncio.StreamWriter, timeout: float = 10.0) -> int:
    """Wait until the unread bytes of a client that stopped reading stop growing; return how many."""
    deadline = time.monotonic() + timeout
    last, steady = -1, 0
    while time.monotonic() < deadline:
        await asyncio.sleep(0.1)
        now = unread_bytes(writer)
        steady = steady + 1 if now == last else 0
        last = now
        if steady >= 3 and now >= STALL_MIN_BYTES:
            break
    return last


@dataclass
class LoadResult:
    clients: int = 0
    round_trips: int = 0
    messages: int = 0  # every message verified delivered exactly once
    max_round_trip: float = 0.0
    errors: list[str] = field(default_factory=list)

    def add_round_trip(self, seconds: float, messages: int) -> None:
        self.round_trips += 1
        self.messages += messages
        self.max_round_trip = max(self.max_round_trip, seconds)


async def run_clients(count: int, client: Callable[[int, asyncio.Semaphore, float, LoadResult], Awaitable[None]],
                      seconds: float) -> LoadResult:
    """``count`` clients at once, connecting in waves, each running its exchange until the deadline."""
    result = LoadResult(clients=count)
    gate = asyncio.Semaphore(CONNECT_AT_ONCE)
    deadline = time.monotonic() + seconds

    async def guarded(i: int) -> None:
        try:
            await client(i, gate, deadline, result)
        except Exception as exc:  # noqa: BLE001 - every failure is counted and reported
            result.errors.append(f"client {i}: {type(exc).__name__}: {exc}")

    await asyncio.gather(*(guarded(i) for i in range(count)))
    return result


def abort(writer: asyncio.StreamWriter) -> None:
    """Drop a connection at once, unsent bytes and all, as a client that dies does (the peer sees a reset)."""
    writer.transport.abort()


async def close_writer(writer: asyncio.StreamWriter) -> None:
    writer.close()
    with contextlib.suppress(OSError, TimeoutError):
        await asyncio.wait_for(writer.wait_closed(), 5)


def check_recovered(baseline: Stats, after: Stats) -> None:
    """The server after the load: no task or descriptor left, traced memory back near the baseline.

    ``after.peak`` is the tracemalloc peak since the baseline (the peak is reset there).
    """
    assert after.tasks <= baseline.tasks, f"tasks {baseline.tasks} -> {after.tasks}: connection handlers left behind"
    assert after.fds <= baseline.fds, f"descriptors {baseline.fds} -> {after.fds}: sockets left open"
    grown = after.traced - baseline.traced
    used = after.peak - baseline.traced
    assert used > 2 * MEMORY_TOLERANCE, f"the load used only {used} bytes: the measurement says nothing"
    assert grown < MEMORY_TOLERANCE, (
        f"traced memory {baseline.traced} -> {after.traced} (+{grown} bytes) after the clients left; "
        f"peak under load +{used} bytes")


def summary(name: str, result: LoadResult, baseline: Stats, after: Stats, stalled: int) -> str:
    mib = 1024 * 1024
    return (f"{name}: {result.clients} clients, {result.round_trips} round trips, {result.messages} messages, "
            f"max round trip {result.max_round_trip * 1000:.0f} ms, stalled reader held {stalled} unread bytes; "
            f"traced {baseline.traced / mib:.1f} -> peak {after.peak / mib:.1f} -> {after.traced / mib:.1f} MiB, "
            f"rss {baseline.rss / mib:.0f} -> {after.rss / mib:.0f} MiB, tasks {baseline.tasks}/{after.tasks}, "
            f"fds {baseline.fds}/{after.fds}")


ClientFn = Callable[[int, asyncio.Semaphore, float, LoadResult], Awaitable[None]]


async def run_load(protocol: str, make_client: Callable[[int], ClientFn],
                   stall: Callable[[int], Awaitable[asyncio.StreamWriter]]) -> str:
    """The whole scenario of the module docstring; returns a one-line report."""
    async with ServerProcess(protocol) as server:
        start = await server.stats()
        warm = await run_clients(20, make_client(server.port), 0.5)
        assert not warm.errors, warm.errors[:5]
        baseline = await server.wait_idle(start)
        await server.reset_peak()

        stalled = await stall(server.port)
        unread = await wait_stalled(stalled)
        assert unread >= STALL_MIN_BYTES, f"the stalled client holds only {unread} unread bytes"
        result = await run_clients(CLIENTS, make_client(server.port), LOAD_SECONDS)
        held = tcp_state(stalled) == TCP_ESTABLISHED  # the server has neither closed nor reset it yet
        try:
            after = await server.wait_idle(baseline)  # the stalled client is still connected, still not reading
            open_files = await server.open_files()
        finally:
            abort(stalled)
        report = summary(f"{protocol}/tcp", result, baseline, after, unread)
        assert not result.errors, f"{len(result.errors)} clients failed, e.g. {result.errors[:5]}\n{report}"
        assert result.round_trips >= CLIENTS, report  # every client did at least one
        assert result.max_round_trip < ROUND_TRIP_BOUND, f"slow round trips next to a stalled reader\n{report}"
        assert held, f"the server dropped the stalled client before the load ended\n{report}"
        check_recovered(baseline, after)
        assert after.fds <= baseline.fds, open_files
        return report

