"""What every target is, apart from how it is started: the Target interface, TargetError, and
the `--target-client` launcher any kind of target can be given.

Its own module so that each kind of target (targets.py, docker_target.py) builds on it without
importing the other.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
from typing import Awaitable, Callable

from conformance.protocols import adapter_for

ClientLauncher = Callable[[str, str], Awaitable[int]]
#: Transports a protocol adapter speaks itself over a plain TCP connection (mc0 and mtl: ZMTP).
TCP_CARRIED = {"zmtp": "tcp"}


class TargetError(Exception):
    """The target could not be started or reached; every case it would run is an ERROR."""


class Target:
    spec: str
    name: str
    in_process = False
    #: `--target-client`: runs client-role cases whatever serves the server-role ones
    client_command: str | None = None

    def endpoint(self, protocol: str, transport: str) -> str | None:
        """URL to reach the target's server for this transport, or None if it offers none."""
        raise NotImplementedError

    def client_launcher(self, protocol: str) -> ClientLauncher | None:
        if self.client_command:
            return command_client_launcher(self.client_command)
        return self.own_client_launcher(protocol)

    def own_client_launcher(self, protocol: str) -> ClientLauncher | None:
        """The target's own client role, used when no --target-client is given."""
        return None

    def params(self, protocol: str) -> dict[str, int]:
        return dict(adapter_for(protocol).params)

    def version(self) -> str | None:
        """The implementation's version when the target itself says (--impl-version wins)."""
        return None

    def logs(self) -> str:
        return ""

    def close(self) -> None:
        pass


#: Exec'd in the child: the kernel sends it SIGTERM when the suite dies, even by
#: SIGKILL (its own session keeps it away from the terminal's signals, so without
#: this a killed suite would leave the target listening).  PDEATHSIG survives the
#: exec, so the target itself keeps the PID we stop it by.
_PARENT_DEATH_EXEC = (
    "import ctypes, os, signal, sys\n"
    "ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG\n"
    "if os.getppid() != int(sys.argv[1]): sys.exit(70)  # the suite died before the prctl\n"
    "os.execvp(sys.argv[2], sys.argv[2:])\n"
)


def find_program(name: str) -> str | None:
    """`name` on PATH, or among the scripts installed beside the running suite.

    `cmd:conformance serve ...` then works from `.venv/bin/conformance run` without the venv
    activated: the user means the same installation's `conformance`.
    """
    found = shutil.which(name)
    if found is not None or os.sep in name:
        return found
    beside = os.pathsep.join(dict.fromkeys([sysconfig.get_path("scripts"), os.path.dirname(sys.executable)]))
    return shutil.which(name, path=beside)


def dies_with_us(argv: list[str]) -> list[str]:
    if not sys.platform.startswith("linux"):
        return argv
    return [sys.executable, "-I", "-c", _PARENT_DEATH_EXEC, str(os.getpid()), *argv]


def command_client_launcher(template: str) -> ClientLauncher:
    """Runs `--target-client` once per client-role case; a client still running when the case
    is done is killed by the PID this started."""

    async def launch(testcase: str, url: str) -> int:
        argv = shlex.split(template.replace("{url}", url).replace("{testcase}", testcase))
        argv[0] = find_program(argv[0]) or argv[0]
        proc = await asyncio.create_subprocess_exec(*dies_with_us(argv), stdin=subprocess.DEVNULL,
                                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            return await proc.wait()
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    return launch


def check_client_command(template: str) -> None:
    """A --target-client that cannot work is a usage error before any case runs."""
    try:
        argv = shlex.split(template)
    except ValueError as exc:
        raise TargetError(f"--target-client {template!r}: {exc}") from None
    if "{url}" not in template:
        raise TargetError(f"--target-client {template!r} needs a {{url}} placeholder (and usually {{testcase}})")
    if not argv or find_program(argv[0]) is None:
        raise TargetError(f"--target-client: cannot run {argv[0] if argv else template!r}: no such program")
