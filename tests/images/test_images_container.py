"""Running images through the target API: a real reference server, and broken images that must fail fast."""

from __future__ import annotations

import socket
import time
from typing import Callable

import pytest

from conformance.images.container import (ContainerStartError, ContainerTarget, UnsupportedAnswerError,
                                          check_unsupported_answer, run_client)

pytestmark = pytest.mark.docker

# stmp binary framing (the STMP article, docs/profiles/stmp.md): header byte KIND<<6 | ENCODING<<3, then
# big-endian fields; on TCP a PS (u32 payload size) precedes any payload with ENCODING != 0.
# Request (KIND 1) raw (ENCODING 5) = 0x68: ID u16, ACTION u32, PS u32, payload.
# Response (KIND 3) raw = 0xE8: ID u16, STATUS u8, PS u32, payload. A ping is the single byte 0x00.
NEGOTIATE = bytes.fromhex("68" "0000" "00000000" "00000001" "01")  # ID 0, ACTION 0, versions [0.1]
NEGOTIATED = bytes.fromhex("e8" "0000" "00" "00000001" "01")  # ID 0, Ok, chosen 0.1
ECHO = bytes.fromhex("68" "0001" "00000100" "00000003") + b"abc"  # ID 1, ACTION 0x100 echo
ECHOED = bytes.fromhex("e8" "0001" "00" "00000003") + b"abc"


def read_response(sock: socket.socket, size: int) -> bytes:
    """SIZE bytes of the next message, skipping heartbeat pings that may come first."""
    data = b""
    deadline = time.monotonic() + 5
    while len(data) < size:
        if time.monotonic() > deadline:
            raise TimeoutError(f"only {data.hex()} within 5s")
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError(f"closed after {data.hex()}")
        data += chunk
        if len(data) < size or data[0] == 0:
            data = data.lstrip(b"\x00")  # pings only ever stand between messages
    return data


def test_reference_stmp_server_negotiates_and_echoes(stmp_image: str) -> None:
    with ContainerTarget(stmp_image, "stmp") as target:
        assert target.url == f"tcp://127.0.0.1:{target.port}"
        with socket.create_connection(("127.0.0.1", target.port), timeout=5) as sock:
            sock.sendall(NEGOTIATE)
            assert read_response(sock, len(NEGOTIATED)) == NEGOTIATED
            sock.sendall(ECHO)
            assert read_response(sock, len(ECHOED)) == ECHOED
        assert "listening on" in target.logs()
    assert "listening on" in target.logs()  # kept after the container is gone


def test_reference_client_container_against_reference_server_container(stmp_image: str) -> None:
    with ContainerTarget(stmp_image, "stmp") as target:
        code, logs = run_client(stmp_image, "stmp", "echo", target.url, timeout=30)
    assert code == 0, logs


def test_reference_image_answers_127_to_unknown_case_and_to_another_protocol(stmp_image: str) -> None:
    check_unsupported_answer(stmp_image, "stmp")
    check_unsupported_answer(stmp_image, "micromessage2")


def test_image_that_exits_at_once(shell_image: Callable[[str, str], str]) -> None:
    image = shell_image("exits-at-once", "echo 'fatal: no configuration'; exit 3")
    started = time.monotonic()
    with pytest.raises(ContainerStartError, match=r"exited with code 3(.|\n)*fatal: no configuration"):
        ContainerTarget(image, "stmp", startup_timeout=20).start()
    assert time.monotonic() - started < 15


def test_image_that_never_listens(shell_image: Callable[[str, str], str]) -> None:
    image = shell_image("never-listens", "echo 'warming up forever'; exec sleep 600")
    started = time.monotonic()
    with pytest.raises(ContainerStartError, match=r"did not listen on 127\.0\.0\.1:\d+ within 2s(.|\n)*warming up"):
        with ContainerTarget(image, "stmp", startup_timeout=2):
            pass
    assert time.monotonic() - started < 15  # 2 s of probing + the SIGTERM grace before SIGKILL


def test_image_that_answers_0_to_an_unknown_case(shell_image: Callable[[str, str], str]) -> None:
    image = shell_image("answers-zero", 'echo "pretending to run $TESTCASE"; exit 0')
    with pytest.raises(UnsupportedAnswerError, match=r"exited with code 0 for the unknown test case 'no-such-case-"):
        check_unsupported_answer(image, "stmp", timeout=20)


def test_image_that_hangs_on_an_unknown_case_is_stopped(shell_image: Callable[[str, str], str]) -> None:
    image = shell_image("never-listens", "echo 'warming up forever'; exec sleep 600")
    started = time.monotonic()
    with pytest.raises(UnsupportedAnswerError, match=r"did not exit within 2s"):
        check_unsupported_answer(image, "stmp", timeout=2)
    assert time.monotonic() - started < 15


def test_missing_image_is_not_pulled(docker_engine: object) -> None:
    with pytest.raises(ContainerStartError, match="never pulled"):
        ContainerTarget("conformance-test-no-such-image:0", "stmp").start()


def test_port_already_in_use_is_refused(stmp_image: str) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        with pytest.raises(ContainerStartError, match="already in use"):
            ContainerTarget(stmp_image, "stmp", port=squatter.getsockname()[1]).start()


def test_a_case_that_ends_while_its_client_container_starts_removes_it(monkeypatch) -> None:
    """The race the engine test above can hit on a slow machine: the container is listed while
    start_client is still in its thread, and the runner's cancel lands then.  The start is slowed
    here on purpose, so the cancel always lands inside it (no engine needed)."""
    import asyncio
    import threading

    from conformance.docker_target import DockerTarget
    from conformance.images import container

    removed, started = threading.Event(), threading.Event()

    class _SlowRun:
        def exit_code(self):
            return None

        def remove(self):
            removed.set()

    def slow_start(*args):
        started.set()
        time.sleep(0.5)
        return _SlowRun()

    monkeypatch.setattr(container, "start_client", slow_start)
    launch = DockerTarget("any-image").own_client_launcher("stmp")

    async def case_ends_during_the_start() -> None:
        task = asyncio.ensure_future(launch("anything", "tcp://127.0.0.1:9"))
        await asyncio.to_thread(started.wait, 5)
        task.cancel()
        results = await asyncio.gather(task, return_exceptions=True)
        assert isinstance(results[0], asyncio.CancelledError)
        assert removed.is_set(), "the container whose start the cancel interrupted was left running"

    asyncio.run(case_ends_during_the_start())


def test_a_client_container_still_running_when_its_case_ends_is_removed(
        shell_image: Callable[[str, str], str], docker_engine) -> None:
    import asyncio

    from conformance.docker_target import DockerTarget
    image = shell_image("client-hangs", "sleep 300")
    launch = DockerTarget(image).own_client_launcher("stmp")

    async def case_ends_early() -> None:
        task = asyncio.ensure_future(launch("anything", "tcp://127.0.0.1:9"))
        deadline = time.monotonic() + 60
        while not docker_engine.containers.list(filters={"ancestor": image}) and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        assert docker_engine.containers.list(filters={"ancestor": image}), "the client never started"
        task.cancel()  # what the runner does when a case is over
        await asyncio.gather(task, return_exceptions=True)
        # gone by the time the cancelled launcher returns, not when some timeout of its own expires
        assert docker_engine.containers.list(all=True, filters={"ancestor": image}) == []

    asyncio.run(case_ends_early())
