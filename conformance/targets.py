"""What the suite runs against.

    ref                       the reference implementation, in-process
    tcp://127.0.0.1:PORT      a server already listening (TCP)
    ws://127.0.0.1:PORT/PATH  a server already listening (WebSocket)
    cmd:COMMAND               a server the suite spawns: {port} in COMMAND is
                              replaced by a free port, {transport} by tcp/ws
                              (one process per transport); without
                              {transport} the command serves TCP only
    docker:IMAGE              an image following docs/image-contract.md

Servers are started once per run and stopped by the handle that started them.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import signal
import socket
import subprocess
import tempfile
import threading
import time
from contextlib import asynccontextmanager
from typing import Callable
from urllib.parse import urlsplit

from conformance.protocols import adapter_for
from conformance.target_base import (  # noqa: F401  (the rest re-exported: callers import them from here)
    TCP_CARRIED, ClientLauncher, Target, TargetError, check_client_command, command_client_launcher, dies_with_us,
    find_program,
)

STARTUP_TIMEOUT = 20.0


class LoopThread:
    """An event loop in a daemon thread, for servers that outlive one case."""

    def __init__(self, name: str = "conformance-ref") -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self.thread.start()

    def run(self, coro, timeout: float):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


class RefTarget(Target):
    in_process = True

    def __init__(self) -> None:
        self.spec = self.name = "ref"
        self._loop: LoopThread | None = None
        self._servers: dict[tuple[str, str], object] = {}

    def params(self, protocol: str) -> dict[str, int]:
        adapter = adapter_for(protocol)
        return {**adapter.params, **adapter.ref_params}

    def version(self) -> str:
        from conformance import __version__  # the reference implementations ship with the suite
        return __version__

    def endpoint(self, protocol: str, transport: str) -> str | None:
        adapter = adapter_for(protocol)
        if transport not in adapter.transports:
            return None
        key = (protocol, transport)
        if key not in self._servers:
            if self._loop is None:
                self._loop = LoopThread()
            self._servers[key] = self._loop.run(adapter.start_reference(transport, self.params(protocol)), STARTUP_TIMEOUT)
        return self._servers[key].url

    def own_client_launcher(self, protocol: str) -> ClientLauncher:
        adapter = adapter_for(protocol)
        return lambda testcase, url: adapter.run_reference_client(url, testcase)

    @asynccontextmanager
    async def private_endpoint(self, protocol: str, transport: str):
        """A server of the case's own, started in the servers' thread (about a millisecond), for a
        case that changes state the shared one would show other cases: that case then needs no turn."""
        if self._loop is None:
            raise TargetError("the reference servers' thread is not running: ask endpoint() first")
        loop = self._loop.loop
        server = await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(
            adapter_for(protocol).start_reference(transport, self.params(protocol)), loop))
        try:
            yield server.url
        finally:
            await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(server.close(), loop))

    def close(self) -> None:
        if self._loop is None:
            return
        for server in self._servers.values():
            try:
                self._loop.run(server.close(), 5)
            except Exception:  # closing is best effort; the thread dies with the run
                pass
        self._loop.stop()


class UrlTarget(Target):
    def __init__(self, spec: str, name: str | None = None) -> None:
        parts = urlsplit(spec)
        try:
            port = parts.port
        except ValueError:
            raise TargetError(f"target {spec!r}: the port is not a number from 1 to 65535") from None
        if parts.hostname not in ("127.0.0.1", "localhost", "::1"):
            raise TargetError(f"target {spec!r}: the suite only sends test traffic to 127.0.0.1")
        if not port:
            raise TargetError(f"target {spec!r} needs a port")
        self.spec = spec
        self.name = name or spec
        self.transport = "ws" if parts.scheme == "ws" else "tcp"

    def endpoint(self, protocol: str, transport: str) -> str | None:
        return self.spec if TCP_CARRIED.get(transport, transport) == self.transport else None


PROBE_TIMEOUT = 5.0


def probe_endpoint(url: str) -> None:
    """One TCP connection, opened and closed, before the cases: an endpoint that refuses or does
    not answer makes every case on it ERROR with this one message, not a FAILED verdict each."""
    parts = urlsplit(url)
    try:
        with socket.create_connection((parts.hostname, parts.port), timeout=PROBE_TIMEOUT):
            pass
    except OSError as exc:
        reason = "no answer" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc)).lower()
        raise TargetError(f"{url} is unreachable ({reason} within {PROBE_TIMEOUT:.0f} s); "
                          "checked once, every case on this endpoint is ERROR") from None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port: int, deadline: float, alive: Callable[[], bool]) -> bool:
    while time.monotonic() < deadline:
        if not alive():
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.05)
    return False


def command_name(command: str) -> str:
    """A cmd: target's implementation name when no --impl-name is given: the program's name, and
    what it is told to run when that comes first (`python pyzmq_mc0_broker.py`, `python -m
    myserver`, `conformance serve`): the program alone often names an interpreter, not the
    implementation."""
    try:
        argv = shlex.split(command)
    except ValueError:
        argv = command.split()
    if not argv:
        return command
    name, rest = os.path.basename(argv[0]), argv[1:]
    if rest[:1] == ["-m"] and len(rest) > 1:
        return f"{name} -m {rest[1]}"
    if rest and not rest[0].startswith("-") and "{" not in rest[0]:
        return f"{name} {os.path.basename(rest[0])}"
    return name


class CommandTarget(Target):
    """Spawns the target's server; stops it by the PID it started."""

    def __init__(self, spec: str, name: str | None = None) -> None:
        self.spec = spec
        self.command = spec.split(":", 1)[1].strip()
        if "{port}" not in self.command:
            raise TargetError(f"target {spec!r}: the command needs a {{port}} placeholder")
        self.name = name or command_name(self.command)
        self._procs: dict[str, tuple[subprocess.Popen, str, object]] = {}

    def endpoint(self, protocol: str, transport: str) -> str | None:
        transport = TCP_CARRIED.get(transport, transport)
        if transport not in ("tcp", "ws"):
            return None
        if "{transport}" not in self.command and transport != "tcp":
            return None
        if transport not in self._procs:
            self._procs[transport] = self._spawn(transport)
        return self._procs[transport][1]

    def _spawn(self, transport: str):
        port = free_port()
        argv = shlex.split(self.command.replace("{port}", str(port)).replace("{transport}", transport))
        program = find_program(argv[0]) if argv else None
        if program is None:
            raise TargetError(f"cannot start {argv[0] if argv else self.command!r}: no such program")
        argv[0] = program
        output = tempfile.TemporaryFile()
        try:
            proc = subprocess.Popen(dies_with_us(argv), stdout=output, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        except OSError as exc:
            raise TargetError(f"cannot start {argv[0]!r}: {exc}") from exc
        if not wait_listening(port, time.monotonic() + STARTUP_TIMEOUT, lambda: proc.poll() is None):
            self._stop(proc)
            output.seek(0)
            tail = output.read()[-2000:].decode(errors="replace")
            raise TargetError(f"{' '.join(argv)} did not listen on 127.0.0.1:{port} within {STARTUP_TIMEOUT}s "
                              f"(exit code {proc.poll()}); its output:\n{tail}")
        url = f"ws://127.0.0.1:{port}/" if transport == "ws" else f"tcp://127.0.0.1:{port}"
        return proc, url, output

    def logs(self) -> str:
        parts = []
        for transport, (_, _, output) in self._procs.items():
            output.seek(0)
            parts.append(f"--- {transport} server output ---\n" + output.read()[-20000:].decode(errors="replace"))
        return "\n".join(parts)

    @staticmethod
    def _stop(proc: subprocess.Popen) -> None:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)

    def close(self) -> None:
        for proc, _, output in self._procs.values():
            self._stop(proc)
            output.close()


def parse_target(spec: str, *, name: str | None = None, client_command: str | None = None) -> Target:
    """The target named by --target; --target-client, when given, runs the client-role cases
    for every kind of server target (never silently ignored)."""
    if client_command is not None:
        check_client_command(client_command)
    target = _server_target(spec, name)
    target.client_command = client_command
    return target


def _server_target(spec: str, name: str | None) -> Target:
    if spec in ("ref", "reference"):
        return RefTarget()
    if spec.startswith(("tcp://", "ws://")):
        return UrlTarget(spec, name)
    if spec.startswith("cmd:"):
        return CommandTarget(spec, name)
    if spec.startswith("docker:"):
        from conformance.docker_target import DockerTarget  # imported lazily: needs the docker SDK
        return DockerTarget(spec.split(":", 1)[1], name)
    raise TargetError(f"unknown target {spec!r}: use ref, tcp://127.0.0.1:PORT, ws://127.0.0.1:PORT/PATH, "
                      "cmd:COMMAND or docker:IMAGE")


