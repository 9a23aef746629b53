"""Containers of a killed run are removed by the next run (conformance/images/owner.py): only those
whose owner label names this machine, boot and PID namespace and a process that is gone."""

from __future__ import annotations

import subprocess
import sys

import docker
import pytest

from conformance.images import owner
from conformance.images.owner import OWNER_LABEL, orphaned, owner_labels


def _dead_pid() -> int:
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    return done.pid


def test_only_a_gone_process_of_this_host_is_an_orphan() -> None:
    (mine,) = owner_labels().values()
    host, _, pid = mine.rpartition("/")
    assert int(pid) > 0 and host.count("/") >= 1  # boot id / pid namespace / pid
    assert not orphaned(mine, host)  # this process: alive
    assert orphaned(f"{host}/{_dead_pid()}", host)
    assert not orphaned(f"another-boot/{host.split('/', 1)[1]}/{_dead_pid()}", host)
    assert not orphaned(f"{host}/not-a-pid", host)
    assert not orphaned("", host) and not orphaned(f"{host}/{_dead_pid()}", "")


@pytest.mark.docker
def test_the_next_run_removes_the_containers_of_a_dead_owner_only(docker_engine: docker.DockerClient,
                                                                     shell_image, monkeypatch) -> None:
    image = shell_image("sleeper", "sleep 60")
    (mine,) = owner_labels().values()
    host = mine.rpartition("/")[0]
    owners = {"dead": f"{host}/{_dead_pid()}", "alive": mine, "elsewhere": f"other-boot/ns/{_dead_pid()}"}
    started = {name: docker_engine.containers.run(image, detach=True, network_mode="none",
                                                  labels={OWNER_LABEL: label})
               for name, label in owners.items()}
    try:
        monkeypatch.setattr(owner, "_reaped", False)
        removed = owner.reap_orphans(docker_engine)
        # (containers of earlier killed runs on this machine would go too)
        assert started["dead"].short_id in removed
        assert not {started["alive"].short_id, started["elsewhere"].short_id} & set(removed)
        left = {c.id for c in docker_engine.containers.list(all=True, filters={"label": OWNER_LABEL})}
        assert started["alive"].id in left and started["elsewhere"].id in left and started["dead"].id not in left
        assert owner.reap_orphans(docker_engine) == []  # once per process
    finally:
        for name, container in started.items():
            if name != "dead":
                container.remove(force=True)
