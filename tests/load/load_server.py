"""A reference server in its own process for the load tests, reporting on itself.

    python tests/load/load_server.py stmp|micromessage2|rsio|mc0|mtl

Prints ``{"port": N}`` once listening, then answers lines on stdin:
``stats`` -> one JSON line (after a full GC): ``traced`` (tracemalloc
current bytes), ``peak`` (tracemalloc peak since the last ``reset``), ``rss``
(bytes), ``tasks`` (asyncio tasks alive), ``fds`` (open file descriptors);
``fds`` -> what the open descriptors point to (for a failure message);
``reset`` -> resets the tracemalloc peak; ``quit`` -> closes the server and exits.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import resource
import sys
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

NOFILE = 8192


def raise_nofile(wanted: int = NOFILE) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


async def _start(protocol: str):
    if protocol == "stmp":
        from reference_impl.stmp.server import start_tcp_server
        return await start_tcp_server("127.0.0.1", 0)
    if protocol == "micromessage2":
        from reference_impl.micromessage2.server import start_server
        return await start_server("127.0.0.1", 0)
    if protocol == "rsio":
        from reference_impl.rsio.server import start_server
        return await start_server("127.0.0.1", 0)
    if protocol == "mc0":  # CURVE with the test server key pair (reference_impl/mc0/testkeys.json)
        from reference_impl.mc0.server import start_server
        return await start_server("127.0.0.1", 0)
    if protocol == "mtl":  # port = the control endpoint; 202 replies announce the data port
        from reference_impl.mtl.server import start_server
        return await start_server("127.0.0.1", 0)
    raise SystemExit(f"unknown protocol {protocol!r}")


def _stats() -> dict[str, int]:
    gc.collect()
    traced, peak = tracemalloc.get_traced_memory()
    with open("/proc/self/statm") as f:
        rss = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    return {"traced": traced, "peak": peak, "rss": rss, "tasks": len(asyncio.all_tasks()),
            "fds": len(os.listdir("/proc/self/fd"))}


async def main(protocol: str) -> None:
    raise_nofile()
    tracemalloc.start()
    server = await _start(protocol)
    loop = asyncio.get_running_loop()
    commands = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(commands), sys.stdin)
    print(json.dumps({"port": server.port}), flush=True)
    try:
        while line := await commands.readline():
            command = line.strip()
            if command == b"stats":
                print(json.dumps(_stats()), flush=True)
            elif command == b"fds":
                print(json.dumps(sorted(os.readlink(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd")
                                        if os.path.exists(f"/proc/self/fd/{fd}"))), flush=True)
            elif command == b"reset":
                tracemalloc.reset_peak()
                print("{}", flush=True)
            elif command == b"quit":
                break
    finally:
        await asyncio.wait_for(server.close(), 10)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
