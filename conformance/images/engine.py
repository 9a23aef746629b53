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


def ignore_environment_proxies() -> None:
    """Docker SDK clients (ours and testcontainers') stop reading proxy settings from the environment.

    With requests' trust_env, every request iterates os.environ (urllib's getproxies). A client used
    from a thread while pytest's thread removes PYTEST_CURRENT_TEST, between tests, then fails with
    KeyError('PYTEST_CURRENT_TEST'): a client-role case of a --jobs run, graded ERROR in CI. The
    engine is reached over its own socket or DOCKER_HOST, with the SDK's own TLS settings; an HTTP
    proxy from the environment has no part in that. Set on the SDK's APIClient class, not on a
    client, because each client asks the engine for its API version in its constructor."""
    from docker.api.client import APIClient

    if not isinstance(APIClient.__dict__.get("trust_env"), property):
        # requests.Session.__init__ sets trust_env = True: the setter keeps it off
        APIClient.trust_env = property(lambda self: False, lambda self, value: None)


def docker_client(timeout: float = API_TIMEOUT) -> docker.DockerClient:
    """A client whose engine has just answered a ping."""
    try:
        ignore_environment_proxies()
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
