"""Which process started a container, so that containers of a killed run do not outlive it.

testcontainers' own reaper (Ryuk) is an image pulled from a registry, so it is off here.  Instead
every container carries an owner label: this machine's boot id, this process's PID namespace and
its PID.  Before a process starts its first container it removes the containers whose owner is
certainly gone: same boot and PID namespace, and no such process any more.  A container of another
machine, namespace or boot (a shared engine) is never touched, and neither is any container without
the label.
"""

from __future__ import annotations

import os
from pathlib import Path

OWNER_LABEL = "org.protocol-conformance.owner"
_reaped = False


def _host() -> str:
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""  # no /proc: no owner we could judge later, so no label
    return f"{boot}/{namespace}"


def owner_labels() -> dict[str, str]:
    host = _host()
    return {OWNER_LABEL: f"{host}/{os.getpid()}"} if host else {}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive
    return True


def orphaned(owner: str, host: str) -> bool:
    """True only for an owner on this machine, boot and PID namespace whose process is gone."""
    where, _, pid = owner.rpartition("/")
    return bool(host) and where == host and pid.isdigit() and not _alive(int(pid))


def reap_orphans(client) -> list[str]:
    """Remove (once per process) the containers whose owning process is gone; their short ids."""
    global _reaped
    if _reaped:
        return []
    _reaped = True
    host, removed = _host(), []
    for container in client.containers.list(all=True, filters={"label": OWNER_LABEL}):
        if orphaned(container.labels.get(OWNER_LABEL, ""), host):
            try:
                container.remove(force=True)
                removed.append(container.short_id)
            except Exception:  # noqa: BLE001  (gone meanwhile, or the engine refused: not this run's problem)
                pass
    return removed
