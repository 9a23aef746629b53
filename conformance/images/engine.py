"""Reaching the docker engine, with an error that says how to start one."""

from __future__ import annotations

import docker
import requests
from docker.errors import DockerException

ENGINE_SCRIPT = "scripts/docker-engine.sh"
# Builds and imports stream hundreds of MB; the SDK's default 60 s would cut them.
API_TIMEOUT = 900


class EngineUnavailableError(RuntimeError):
    """No docker engine answers."""


def docker_client(timeout: float = API_TIMEOUT) -> docker.DockerClient:
    """A client whose engine has just answered a ping."""
    try:
        client = docker.from_env(timeout=timeout)
        client.ping()
    except (DockerException, requests.RequestException) as exc:
        raise EngineUnavailableError(
            f"no docker engine answers ({exc}); start one with `bash {ENGINE_SCRIPT}`"
        ) from exc
    return client


def engine_answers() -> bool:
    try:
        docker_client(timeout=10).close()
    except EngineUnavailableError:
        return False
    return True
