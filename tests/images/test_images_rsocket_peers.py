"""Third-party RSocket implementations as images: rsocket-py 0.4.20, rsocket-js 0.0.27 and
rsocket-js 1.0.0-alpha.3, each behind a peer program of ours, both roles, TCP and WebSocket.

Every peer server is driven by the reference client (reference_impl/rsocket/client_cases.py) and
every peer client runs against the reference server. The outcome tables below are what the
libraries do: each failure is a finding of docs/findings/rsocket.md, with its wire bytes checked
here from hand-written frames, so a library that changes its behaviour fails this test. The image
rsocket-js-1.0-resume (rsocket-js 1.0 with its server's resumption on) is checked from hand-written
frames too: it resumes, and its F-JS1-11 and F-JS1-14 are pinned.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
import tomllib
from pathlib import Path
from typing import Iterator

import docker
import pytest

from conformance.images.container import ContainerTarget, check_unsupported_answer, run_client, start_client
from conformance.images.layout import LABEL_PROTOCOLS, LABEL_ROLES, LABEL_VERSION
from conformance.images.packages import PackageSet
from conformance.images.thirdparty import PEERS, available_peers, peer_hash
from conformance.targets import LoopThread
from reference_impl.rsocket.client_cases import CASES, run_case, server_kept
from reference_impl.rsocket.server import start_server

ROOT = Path(__file__).resolve().parents[2]
RSOCKET_PEERS = ("rsocket-py", "rsocket-js-0.0", "rsocket-js-1.0")  # the rsocket_images fixture (conftest.py)
# rsocket-js 1.0 with its server's resumption on: not in the matrix or interop (no conformance.protocols)
JS1_RESUME = "rsocket-js-1.0-resume"
ALL_PASS = dict.fromkeys(CASES, 0)

# What the reference client sees of each peer's server (exit codes of client_cases.run_case).
SERVER_OUTCOMES = {
    # F-PY-1: the channel's empty item goes back as a PAYLOAD with neither N nor C
    "rsocket-py": {**ALL_PASS, "channel": 1},
    # F-JS0-1: the 0.0.27 responder drops the metadata of every PAYLOAD it sends (M never set)
    "rsocket-js-0.0": {**ALL_PASS, "fragmented": 1},
    "rsocket-js-1.0": ALL_PASS,
}
# The cases after which the server has not kept what the client sent (client_cases.server_kept).
SERVER_LOST = {
    # F-JS1-1: a METADATA_PUSH ends the connection (the frame decoder throws); nothing is kept
    "rsocket-js-1.0": {"metadata-push"},
}
# Each peer's client against the reference server (exit codes of the client image).
CLIENT_OUTCOMES = {
    # F-PY-1: the client sends the channel's empty item as a PAYLOAD with neither N nor C
    "rsocket-py": {**ALL_PASS, "channel": 1},
    # 0.0.x does not fragment what it sends (127). Its METADATA_PUSH without M (F-JS0-2) is written
    # and the case ends: the finding test below and the interop matrix's monitor catch the frame.
    "rsocket-js-0.0": {**ALL_PASS, "fragmented": 127},
    # 1.0.0-alpha.3's requester throws "Method not implemented." from metadataPush (127)
    "rsocket-js-1.0": {**ALL_PASS, "metadata-push": 127},
}

# Frames written by hand from Protocol.md's layouts (TCP: each behind its 24-bit length).
SETUP = bytes.fromhex("00000000" "0400" "0001" "0000" "00002710" "00007530"
                      "0a") + b"text/plain" + b"\x0a" + b"text/plain"
REQUEST_RESPONSE_WITH_METADATA = bytes.fromhex("00000001" "1100" "000004") + b"meta" + b"echo:hello"
METADATA_PUSH = bytes.fromhex("00000000" "3100") + b"abc"  # type 0x0C, M set (Metadata always present)
REQUEST_RESPONSE_ECHO = bytes.fromhex("00000003" "1000") + b"echo:after"  # type 0x04, no flags


def tcp(frame: bytes) -> bytes:
    return len(frame).to_bytes(3, "big") + frame


def _python_pin(name: str) -> str:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = [r for extra in project["optional-dependencies"].values() for r in extra if r.startswith(f"{name}==")]
    assert len(pins) == 1, pins
    return pins[0].split("==")[1]


def test_every_rsocket_peer_has_its_program_entrypoint_and_pinned_library() -> None:
    peers = {p.name: p for p in available_peers(ROOT, ["rsocket"])}
    assert set(peers) == {*RSOCKET_PEERS, JS1_RESUME}
    for name in RSOCKET_PEERS:
        assert peers[name].entrypoint.is_file() and set(peers[name].roles) == {"server", "client"}
        assert peers[name].listed and peers[name].npm_dir.name == name
    # the resume variant: rsocket-js 1.0's program, modules, version and entrypoint, server only, unlisted
    variant, js1 = peers[JS1_RESUME], peers["rsocket-js-1.0"]
    assert variant.entrypoint.is_file() and variant.roles == ("server",) and not variant.listed
    assert variant.npm_dir == js1.npm_dir and variant.version == js1.version
    assert set(js1.files) < set(variant.files)
    assert f"images/thirdparty/{js1.name}/entrypoint.sh" in variant.files
    assert LABEL_PROTOCOLS not in variant.labels("x") and LABEL_PROTOCOLS in js1.labels("x")
    assert peers["rsocket-py"].version == _python_pin("rsocket")
    assert f"rsocket=={peers['rsocket-py'].version}" in (ROOT / "constraints.txt").read_text().splitlines()
    for name in ("rsocket-js-0.0", "rsocket-js-1.0"):
        peer = peers[name]
        lock = json.loads((peer.npm_dir / "package-lock.json").read_text())
        modules = lock["packages"]
        # every rsocket module in the lock is the version the image declares, with its integrity hash
        rsocket_modules = {k: v for k, v in modules.items() if k.startswith("node_modules/rsocket-")}
        assert {"node_modules/rsocket-core", "node_modules/rsocket-tcp-server", "node_modules/rsocket-tcp-client",
                "node_modules/rsocket-websocket-server", "node_modules/rsocket-websocket-client"} <= set(rsocket_modules)
        assert {v["version"] for v in rsocket_modules.values()} == {peer.version}
        assert all(v.get("integrity", "").startswith("sha512-") for v in modules.values() if v.get("version"))


def test_node_peer_hash_follows_its_lock_program_and_debs(tmp_path: Path) -> None:
    peer = next(p for p in PEERS if p.name == "rsocket-js-1.0")
    for path in peer.files:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text((ROOT / path).read_text())
    packages = PackageSet(tmp_path, {"pyzmq-27.3.0-cp311-cp311-manylinux_2_28_x86_64.whl": "a" * 64})
    debs = PackageSet(tmp_path, {"nodejs_18.20.4+dfsg-1~deb12u3_amd64.deb": "b" * 64})
    first = peer_hash(peer, "base", packages, tmp_path, debs)
    assert peer_hash(peer, "base", PackageSet(tmp_path, {}), tmp_path, debs) == first  # wheels: not its inputs
    assert peer_hash(peer, "base", packages, tmp_path, PackageSet(tmp_path, {"x.deb": "c" * 64})) != first
    (tmp_path / peer.files[1]).write_text((ROOT / peer.files[1]).read_text() + "\n// changed\n")
    assert peer_hash(peer, "base", packages, tmp_path, debs) != first


@pytest.fixture(scope="module")
def reference_servers() -> Iterator[dict[str, str]]:
    """The reference RSocket server on TCP and WebSocket, on a loop of its own (the clients are containers)."""
    loop = LoopThread("rsocket-ref")
    servers = {t: loop.run(start_server(transport=t), 10) for t in ("tcp", "websocket")}
    yield {("ws" if t == "websocket" else t): s.url for t, s in servers.items()}
    for server in servers.values():
        loop.run(server.close(), 10)
    loop.stop()


@pytest.mark.docker
@pytest.mark.parametrize("name", RSOCKET_PEERS)
def test_peer_image_labels_and_unsupported_answer(rsocket_images: dict[str, str], name: str) -> None:
    image = rsocket_images[name]
    labels = docker.from_env().images.get(image).labels
    peer = next(p for p in PEERS if p.name == name)
    assert labels[LABEL_PROTOCOLS] == "rsocket" and labels[LABEL_ROLES] == "server,client"
    assert labels[LABEL_VERSION] == peer.version
    check_unsupported_answer(image, "rsocket")
    check_unsupported_answer(image, "stmp")


@pytest.mark.docker
@pytest.mark.parametrize("transport", ["tcp", "ws"])
@pytest.mark.parametrize("name", RSOCKET_PEERS)
def test_peer_server_against_the_reference_client(rsocket_images: dict[str, str], name: str, transport: str) -> None:
    with ContainerTarget(rsocket_images[name], "rsocket", transport=transport) as target:
        outcomes, lost = {}, set()
        for case in CASES:
            outcomes[case] = asyncio.run(run_case(case, target.url, log=print))
            if asyncio.run(server_kept(case, target.url)) is not None:
                lost.add(case)
        logs = target.logs()
    assert outcomes == SERVER_OUTCOMES[name], logs[-3000:]
    assert lost == SERVER_LOST.get(name, set()), logs[-3000:]


@pytest.mark.docker
@pytest.mark.parametrize("name", RSOCKET_PEERS)
def test_peer_client_against_the_reference_server(rsocket_images: dict[str, str], reference_servers: dict[str, str],
                                                  name: str) -> None:
    outcomes, logs = {}, []
    for case in CASES:
        outcomes[case], log = run_client(rsocket_images[name], "rsocket", case, reference_servers["tcp"], timeout=60)
        logs.append(log)
    assert outcomes == CLIENT_OUTCOMES[name], "\n".join(logs)[-3000:]
    # WebSocket: a stream, and a channel (both directions on one stream)
    for case in ("stream", "channel"):
        code, log = run_client(rsocket_images[name], "rsocket", case, reference_servers["ws"], timeout=60)
        assert code == CLIENT_OUTCOMES[name][case], log


def _exchange(port: int, frames: list[bytes], wait: float = 1.5) -> tuple[list[bytes], bool]:
    """Sends FRAMES (TCP framing) and returns the frames received within WAIT, and whether the peer closed."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
        for frame in frames:
            conn.sendall(tcp(frame))
            time.sleep(0.1)
        conn.settimeout(wait)
        data, closed = b"", False
        try:
            while True:
                chunk = conn.recv(65536)
                if not chunk:
                    closed = True
                    break
                data += chunk
        except (socket.timeout, ConnectionResetError) as exc:
            closed = isinstance(exc, ConnectionResetError)
    received = []
    while len(data) >= 3:
        size = int.from_bytes(data[:3], "big")
        received.append(data[3:3 + size])
        data = data[3 + size:]
    return received, closed


@pytest.mark.docker
def test_finding_js0_payload_drops_metadata(rsocket_images: dict[str, str]) -> None:
    """F-JS0-1: the answer to echo:hello with metadata "meta" is PAYLOAD(N|C) "hello" without M."""
    with ContainerTarget(rsocket_images["rsocket-js-0.0"], "rsocket") as target:
        received, _ = _exchange(target.port, [SETUP, REQUEST_RESPONSE_WITH_METADATA])
    assert received == [bytes.fromhex("00000001" "2860") + b"hello"]  # flags 0x60: N|C, no M (0x100)


@pytest.mark.docker
def test_finding_py_empty_payload_loses_next(rsocket_images: dict[str, str]) -> None:
    """F-PY-1: echoing an empty PAYLOAD(N) on a channel, rsocket-py sends PAYLOAD with neither N nor C."""
    channel = bytes.fromhex("00000001" "1c00" "00000002") + b"a"  # REQUEST_CHANNEL n=2 "a"
    empty_next = bytes.fromhex("00000001" "2820")  # PAYLOAD N, no data, no metadata
    with ContainerTarget(rsocket_images["rsocket-py"], "rsocket") as target:
        received, _ = _exchange(target.port, [SETUP, channel, empty_next])
    assert received == [bytes.fromhex("00000001" "2000" "00000002"),  # REQUEST_N 2: the credit passed through
                        bytes.fromhex("00000001" "2820") + b"a",  # the echo of "a"
                        bytes.fromhex("00000001" "2800")]  # the empty echo: flags 0, neither N nor C


@pytest.mark.docker
def test_finding_js1_metadata_push_ends_the_connection(rsocket_images: dict[str, str]) -> None:
    """F-JS1-1: a well-formed METADATA_PUSH closes the connection; the request after it is never answered."""
    with ContainerTarget(rsocket_images["rsocket-js-1.0"], "rsocket") as target:
        before, _ = _exchange(target.port, [SETUP, REQUEST_RESPONSE_ECHO])
        after, closed = _exchange(target.port, [SETUP, METADATA_PUSH, REQUEST_RESPONSE_ECHO])
    assert before == [bytes.fromhex("00000003" "2860") + b"after"]  # the same request, without METADATA_PUSH
    assert after == [] and closed


@pytest.mark.docker
def test_js1_resume_image_labels_and_unsupported_answer(rsocket_images: dict[str, str]) -> None:
    labels = docker.from_env().images.get(rsocket_images[JS1_RESUME]).labels
    assert LABEL_PROTOCOLS not in labels  # `conformance matrix` and `interop` leave it out
    assert labels[LABEL_ROLES] == "server" and labels[LABEL_VERSION] == "1.0.0-alpha.3"
    check_unsupported_answer(rsocket_images[JS1_RESUME], "rsocket")


TOKEN = b"probe-token"


def _setup(flags: int) -> bytes:
    """SETUP 1.0 with the resume token (R 0x80, L 0x40), keepalive 30 s, lifetime 90 s, text/plain."""
    return (bytes.fromhex("00000000") + (0x0400 | flags).to_bytes(2, "big") + bytes.fromhex("0001" "0000"
            "00007530" "00015f90") + len(TOKEN).to_bytes(2, "big") + TOKEN + b"\x0atext/plain\x0atext/plain")


def _resume(major: int, server_position: int) -> bytes:
    """RESUME (type 0x0D) of version MAJOR.0 for TOKEN: last received server position, first client position 0."""
    return (bytes.fromhex("00000000" "3400") + major.to_bytes(2, "big") + bytes(2) + len(TOKEN).to_bytes(2, "big")
            + TOKEN + server_position.to_bytes(8, "big") + bytes(8))


def _refused(port: int, seconds: float) -> bool:
    """Whether a connection to PORT is refused (no server any more) within SECONDS."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except ConnectionRefusedError:
            return True
        time.sleep(0.2)
    return False


@pytest.mark.docker
def test_finding_js1_refused_resumable_setup_ends_the_server(rsocket_images: dict[str, str]) -> None:
    """F-JS1-11: with resumption on, a SETUP with L and R is refused, and then the server process is gone;
    a SETUP with R alone is served, and the server stays."""
    with ContainerTarget(rsocket_images[JS1_RESUME], "rsocket") as target:
        served, _ = _exchange(target.port, [_setup(0x80), REQUEST_RESPONSE_ECHO])
        assert served == [bytes.fromhex("00000003" "2860") + b"after"]
        assert not _refused(target.port, 1)
        received, _ = _exchange(target.port, [_setup(0x80 | 0x40)])
        assert received == [bytes.fromhex("00000000" "2c00" "00000003") + b"Lease has to be disabled"]
        assert _refused(target.port, 5), target.logs()[-3000:]
        assert "Cannot read properties of undefined (reading 'pause')" in target.logs()


@pytest.mark.docker
def test_finding_js1_resume_of_another_version_is_resumed(rsocket_images: dict[str, str]) -> None:
    """F-JS1-14: a RESUME of version 2.0 gets RESUME_OK; the same RESUME of version 1.0 is the control."""
    echo = bytes.fromhex("00000001" "1000") + b"echo:v1"  # 6 + 7 = 13 bytes the server receives
    answer = bytes.fromhex("00000001" "2860") + b"v1"  # 6 + 2 = 8 bytes the server sends
    with ContainerTarget(rsocket_images[JS1_RESUME], "rsocket") as target:
        first, _ = _exchange(target.port, [_setup(0x80), echo])
        assert first == [answer]
        resumed, _ = _exchange(target.port, [_resume(2, 8)])
    assert resumed == [bytes.fromhex("00000000" "3800") + (13).to_bytes(8, "big")]  # RESUME_OK, position 13


@pytest.mark.docker
def test_finding_js0_client_metadata_push_without_m(rsocket_images: dict[str, str]) -> None:
    """F-JS0-2: rsocket-js 0.0.27's client sends METADATA_PUSH with flags 0: M clear."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(30)
    port = listener.getsockname()[1]
    client = start_client(rsocket_images["rsocket-js-0.0"], "rsocket", "metadata-push", f"tcp://127.0.0.1:{port}")
    try:
        conn, _ = listener.accept()
        conn.settimeout(3)
        data = b""
        try:
            while (chunk := conn.recv(65536)):
                data += chunk
        except socket.timeout:  # still open: we have its frames
            pass
        conn.close()
    finally:
        listener.close()
        client.remove()
    setup_size = int.from_bytes(data[:3], "big")
    assert data[3:9] == bytes.fromhex("00000000" "0400")  # SETUP first
    push = data[3 + setup_size + 3:]
    assert push[:6] == bytes.fromhex("00000000" "3000"), push.hex()  # METADATA_PUSH, flags 0: no M
    assert push[6:] == b"client-metadata"  # the profile's metadata-push case
