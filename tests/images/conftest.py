"""Fixtures of the image tests: the engine gate, the base image, a frozen project copy, tiny test images."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterator

import docker
import pytest

from conformance.images.base import ensure_base_image
from conformance.images.build import build_images, build_peer_images
from conformance.images.digest import combine, tag_of
from conformance.images.engine import docker_client, engine_answers
from conformance.images.layout import CHECKOUT
from conformance.images.wheel import copy_project


@pytest.fixture(scope="session")
def docker_engine() -> Iterator[docker.DockerClient]:
    """Skips without an engine, except under CI=true, whose run starts one first and must not pass silently."""
    if not engine_answers():
        reason = "no docker engine answers: run `bash scripts/docker-engine.sh` first"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason} (CI=true: the image tests must run)")
        pytest.skip(reason)
    client = docker_client()
    yield client
    client.close()


@pytest.fixture(scope="session")
def base_image(docker_engine: docker.DockerClient) -> str:
    name, _, _ = ensure_base_image(docker_engine, force=False, log=print)
    return name


@pytest.fixture(scope="session")
def project_snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The checkout frozen once, so edits made during the session cannot change the wheel between builds."""
    return copy_project(CHECKOUT, tmp_path_factory.mktemp("project") / "src")


@pytest.fixture(scope="session")
def stmp_image(docker_engine: docker.DockerClient, project_snapshot: Path) -> str:
    outcomes = build_images(["stmp"], project_dir=project_snapshot, log=print)
    return outcomes[-1].what


@pytest.fixture(scope="session")
def shell_image(docker_engine: docker.DockerClient, base_image: str, tmp_path_factory: pytest.TempPathFactory):
    """Builds (once, cached by content) a tiny image FROM the base whose entrypoint is a shell script."""

    def build(kind: str, script: str) -> str:
        dockerfile = f"FROM {base_image}\nENTRYPOINT {json.dumps(['/bin/sh', '-c', script])}\n"
        name = f"conformance-test-{kind}:{tag_of(combine({'dockerfile': dockerfile}))}"
        try:
            docker_engine.images.get(name)
            return name
        except docker.errors.ImageNotFound:
            pass
        context = tmp_path_factory.mktemp(kind)
        (context / "Dockerfile").write_text(dockerfile)
        docker_engine.images.build(path=str(context), tag=name, rm=True, network_mode="none", pull=False)
        return name

    return build


@pytest.fixture(scope="session")
def rsocket_images(docker_engine: docker.DockerClient, project_snapshot: Path) -> dict[str, str]:
    """The RSocket third-party images: peer name -> image (built once, then reused by content hash)."""
    from conformance.images.thirdparty import PEERS
    names = [peer.name for peer in PEERS if "rsocket" in peer.protocols]
    outcomes = build_peer_images(names, project_dir=project_snapshot, log=print)
    return dict(zip(names, [o.what for o in outcomes[-len(names):]]))


@pytest.fixture(scope="session")
def pyzmq_images(docker_engine: docker.DockerClient, project_snapshot: Path) -> dict[str, str]:
    """The pyzmq peers (mc0 broker, MTL client): peer name -> image."""
    names = ["pyzmq-mc0", "pyzmq-mtl"]
    outcomes = build_peer_images(names, project_dir=project_snapshot, log=print)
    return dict(zip(names, [o.what for o in outcomes[-len(names):]]))
