"""Running an image that follows docs/image-contract.md, with testcontainers.

Containers use host networking and every address is 127.0.0.1. A server
container is started once and stopped by its own object; client-role and
contract-check containers run to their exit within a bound and are removed.
"""

from __future__ import annotations

import os
import secrets
import socket
import time
from types import TracebackType
from typing import Mapping
from urllib.parse import urlsplit

from docker.errors import DockerException, ImageNotFound, NotFound

from conformance.images.engine import ignore_environment_proxies
from conformance.images.layout import RUN_LABEL, RUN_LABEL_ENV
from conformance.images.owner import owner_labels, reap_orphans

# Ryuk, testcontainers' reaper, is an image pulled from a registry: unreachable here,
# and unneeded since every container is removed by the object that started it.
os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")

from testcontainers.core.container import DockerContainer  # noqa: E402  (needs the variable above)
from testcontainers.core.exceptions import ContainerStartException  # noqa: E402

UNSUPPORTED_EXIT = 127
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
LOG_TAIL_LINES = 40
POLL_SECONDS = 0.1
STOP_GRACE_SECONDS = 3  # SIGTERM, then SIGKILL: a server that ignores SIGTERM must not stall the run


class ContainerError(RuntimeError):
    """An image did not behave as the contract says; the message carries its last log lines."""


class ContainerStartError(ContainerError):
    """The server container exited, or never listened, before it was ready."""


class UnsupportedAnswerError(ContainerError):
    """The image did not answer 127 to a test case name it cannot know."""


class ContainerTimeoutError(ContainerError):
    """A client-role container did not exit within its time."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def _last_lines(text: str) -> str:
    lines = text.rstrip().splitlines()[-LOG_TAIL_LINES:]
    return "\n".join(f"  | {line}" for line in lines) if lines else "  (no output)"


class _Run:
    """One container of an image, created with host networking and removed by this object."""

    def __init__(self, image: str, env: Mapping[str, str], volumes: Mapping[str, str] | None) -> None:
        self.image = image
        try:
            labels = owner_labels()  # a later run removes this container if this process dies first
            if os.environ.get(RUN_LABEL_ENV):  # lets whoever started this run find its containers
                labels[RUN_LABEL] = os.environ[RUN_LABEL_ENV]
            kwargs: dict[str, object] = {"network_mode": "host", "labels": labels}
            ignore_environment_proxies()
            self._container = DockerContainer(image).with_kwargs(**kwargs)
        except DockerException as exc:
            raise ContainerStartError(f"no docker engine answers ({exc}); start one with "
                                      "`bash scripts/docker-engine.sh`") from exc
        for key, value in env.items():
            self._container.with_env(key, value)
        for host_path, container_path in (volumes or {}).items():
            self._container.with_volume_mapping(host_path, container_path, "ro")
        self._started = False

    def start(self) -> None:
        client = self._container.get_docker_client().client
        reap_orphans(client)
        try:
            client.images.get(self.image)
        except ImageNotFound as exc:
            # testcontainers would try to pull it, which cannot work without a registry.
            raise ContainerStartError(
                f"image {self.image} is not in the local engine: build it (`conformance images build`) "
                "or `docker load` it; images are never pulled") from exc
        try:
            self._container.start()
        except DockerException as exc:
            self.remove()
            raise ContainerStartError(f"cannot start a container of {self.image}: {exc}") from exc
        self._started = True

    def exit_code(self) -> int | None:
        """The exit code once the container has stopped, else None."""
        wrapped = self._container.get_wrapped_container()
        wrapped.reload()
        if wrapped.status in ("exited", "dead"):
            return int(wrapped.attrs["State"]["ExitCode"])
        return None

    def wait(self, timeout: float) -> int | None:
        deadline = time.monotonic() + timeout
        while (code := self.exit_code()) is None and time.monotonic() < deadline:
            time.sleep(POLL_SECONDS)
        return code

    def logs(self) -> str:
        try:
            return self._container.get_wrapped_container().logs(stdout=True, stderr=True).decode(errors="replace")
        except (DockerException, ContainerStartException):
            return ""

    def remove(self) -> None:
        try:
            wrapped = self._container.get_wrapped_container()
        except ContainerStartException:  # never created: nothing to remove
            return
        try:
            if self._started and self.exit_code() is None:
                wrapped.stop(timeout=STOP_GRACE_SECONDS)
            self._container.stop()  # testcontainers force-removes the container it created
        except NotFound:
            pass


class ContainerTarget:
    """A server container of IMAGE for PROTOCOL, listening on 127.0.0.1:PORT.

    with ContainerTarget("conformance-ref-stmp:latest", "stmp") as target:
        connect to target.url ...
    """

    def __init__(self, image: str, protocol: str, *, port: int | None = None, env: dict[str, str] | None = None,
                 startup_timeout: float = 30, transport: str = "tcp",
                 volumes: Mapping[str, str] | None = None) -> None:
        self.image = image
        self.protocol = protocol
        self.port = port
        self.transport = transport
        self.startup_timeout = startup_timeout
        self._extra_env = dict(env or {})
        self._volumes = volumes
        self._run: _Run | None = None
        self._final_logs = ""

    @property
    def url(self) -> str:
        if self.port is None:
            raise ContainerError("the container has not been started")
        return f"ws://127.0.0.1:{self.port}/" if self.transport == "ws" else f"tcp://127.0.0.1:{self.port}"

    def logs(self) -> str:
        return self._run.logs() if self._run is not None else self._final_logs

    def start(self) -> "ContainerTarget":
        if self.port is None:
            self.port = free_port()
        elif _listening(self.port):
            # Something else would answer the readiness probe and pass for this image.
            raise ContainerStartError(f"127.0.0.1:{self.port} is already in use; cannot start {self.image} there")
        env = {**self._extra_env, "PROTOCOL": self.protocol, "ROLE": "server", "PORT": str(self.port),
               "TRANSPORT": self.transport}
        self._run = _Run(self.image, env, self._volumes)
        self._run.start()
        try:
            self._wait_listening()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_listening(self) -> None:
        assert self._run is not None and self.port is not None
        deadline = time.monotonic() + self.startup_timeout
        while True:
            code = self._run.exit_code()
            if code is not None:
                raise ContainerStartError(
                    f"{self.image} ({self.protocol} server) exited with code {code} before listening on "
                    f"127.0.0.1:{self.port}; last log lines:\n{_last_lines(self._run.logs())}")
            if _listening(self.port):
                return
            if time.monotonic() >= deadline:
                raise ContainerStartError(
                    f"{self.image} ({self.protocol} server) did not listen on 127.0.0.1:{self.port} within "
                    f"{self.startup_timeout:g}s; it was stopped. Last log lines:\n{_last_lines(self._run.logs())}")
            time.sleep(POLL_SECONDS)

    def stop(self) -> None:
        if self._run is None:
            return
        self._final_logs = self._run.logs()
        try:
            self._run.remove()
        finally:
            self._run = None

    close = stop

    def __enter__(self) -> "ContainerTarget":
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.stop()


def _run_to_exit(image: str, env: Mapping[str, str], timeout: float,
                 volumes: Mapping[str, str] | None = None) -> tuple[int | None, str]:
    """Exit code (None if it had to be stopped after TIMEOUT) and logs of one run."""
    run = _Run(image, env, volumes)
    run.start()
    try:
        code = run.wait(timeout)
        return code, run.logs()
    finally:
        run.remove()


def check_unsupported_answer(image: str, protocol: str, *, timeout: float = 20) -> None:
    """Trust an image only if it answers 127 to a test case name it cannot know."""
    testcase = f"no-such-case-{secrets.token_hex(6)}"
    port = free_port()  # nothing listens there: a client that connects anyway fails at once
    env = {"PROTOCOL": protocol, "ROLE": "client", "TESTCASE": testcase, "PORT": str(port),
           "SERVER_URL": f"tcp://127.0.0.1:{port}"}
    code, logs = _run_to_exit(image, env, timeout)
    if code is None:
        raise UnsupportedAnswerError(
            f"{image} did not exit within {timeout:g}s when asked for the unknown test case {testcase!r} "
            f"(the contract needs exit code {UNSUPPORTED_EXIT}); it was stopped. Last log lines:\n{_last_lines(logs)}")
    if code != UNSUPPORTED_EXIT:
        raise UnsupportedAnswerError(
            f"{image} exited with code {code} for the unknown test case {testcase!r}; the contract needs "
            f"{UNSUPPORTED_EXIT} (unsupported), so its results cannot be trusted. Last log lines:\n{_last_lines(logs)}")


def client_env(protocol: str, testcase: str, server_url: str, env: Mapping[str, str] | None = None) -> dict[str, str]:
    parts = urlsplit(server_url)
    if parts.hostname not in LOCAL_HOSTS or parts.port is None:
        raise ValueError(f"server URL {server_url!r}: clients only ever connect to 127.0.0.1:PORT")
    return {**(env or {}), "PROTOCOL": protocol, "ROLE": "client", "TESTCASE": testcase,
            "SERVER_URL": server_url, "PORT": str(parts.port)}


def start_client(image: str, protocol: str, testcase: str, server_url: str) -> "_Run":
    """A started client container; whoever holds it waits on ``exit_code()`` and calls ``remove()``."""
    run = _Run(image, client_env(protocol, testcase, server_url), None)
    run.start()
    return run


def run_client(image: str, protocol: str, testcase: str, server_url: str, *, timeout: float,
               env: dict[str, str] | None = None, volumes: Mapping[str, str] | None = None) -> tuple[int, str]:
    """Runs the image's client for one client-role case against SERVER_URL; (exit code, logs)."""
    code, logs = _run_to_exit(image, client_env(protocol, testcase, server_url, env), timeout, volumes)
    if code is None:
        raise ContainerTimeoutError(
            f"{image} ({protocol} client, test case {testcase!r}) did not exit within {timeout:g}s; it was stopped. "
            f"Last log lines:\n{_last_lines(logs)}")
    return code, logs
