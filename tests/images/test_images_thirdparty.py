"""Third-party implementations as images: the pyzmq mc0 broker and the pyzmq MTL client.

The broker image runs the whole mc0 suite through `--target docker:` and is compared,
case by case, with the reference mc0 image; the MTL client image runs against the
reference MTL server image.  Both answer 127 where the contract says so.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import docker
import pytest

from conformance.images.build import build_images
from conformance.images.container import ContainerStartError, ContainerTarget, check_unsupported_answer, run_client
from conformance.images.layout import LABEL_PROTOCOLS, LABEL_ROLES
from conformance.images.packages import PackageSet
from conformance.images.thirdparty import PEERS, available_peers, peer_hash

ROOT = Path(__file__).resolve().parents[2]
TEST_KEYS = json.loads((ROOT / "reference_impl" / "mc0" / "testkeys.json").read_text())
PYZMQ_WHEEL = "pyzmq-27.3.0-cp311-cp311-manylinux_2_28_x86_64.whl"


def test_every_peer_has_its_program_and_an_entrypoint() -> None:
    assert {peer.repository for peer in available_peers(ROOT)} == {p.repository for p in PEERS}
    for peer in PEERS:
        assert peer.entrypoint.is_file()
    assert [p.name for p in available_peers(ROOT, ["mc0"])] == ["pyzmq-mc0"]
    assert available_peers(ROOT, ["stmp"]) == []


def test_peer_hash_follows_its_program_and_wheel_but_not_the_project(tmp_path: Path) -> None:
    peer = next(p for p in PEERS if p.name == "pyzmq-mc0")
    for path in peer.files:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text((ROOT / path).read_text())
    (tmp_path / "conformance").mkdir()
    packages = PackageSet(tmp_path, {PYZMQ_WHEEL: "a" * 64, "pytest-9.2.0-py3-none-any.whl": "b" * 64})
    first = peer_hash(peer, "base", packages, tmp_path)
    (tmp_path / "conformance" / "unrelated.py").write_text("x = 1\n")
    assert peer_hash(peer, "base", PackageSet(tmp_path, {**packages.wheels, "pytest-9.2.0-py3-none-any.whl": "c" * 64}),
                     tmp_path) == first  # other wheels and project files do not rebuild it
    assert peer_hash(peer, "base", PackageSet(tmp_path, {**packages.wheels, PYZMQ_WHEEL: "d" * 64}), tmp_path) != first
    (tmp_path / peer.files[0]).write_text((ROOT / peer.files[0]).read_text() + "\n# changed\n")
    assert peer_hash(peer, "base", packages, tmp_path) != first


@pytest.fixture(scope="session")
def images(docker_engine: docker.DockerClient, project_snapshot: Path) -> dict[str, str]:
    """repository -> image of the mc0/MTL third-party and reference images (cached by content hash)."""
    outcomes = build_images(["mc0", "mtl"], project_dir=project_snapshot, log=print)
    return {o.what.split(":")[0]: o.what for o in outcomes if ":" in o.what}


def run_suite(protocol: str, image: str, out: Path) -> tuple[subprocess.CompletedProcess, list[dict]]:
    run = subprocess.run([sys.executable, "-m", "conformance.cli", "run", protocol, "--target", f"docker:{image}",
                          "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines() if line.strip()]
    return run, records


@pytest.mark.docker
@pytest.mark.slow
def test_pyzmq_mc0_image_runs_the_mc0_suite_beside_the_reference(images: dict[str, str], tmp_path: Path) -> None:
    peer, reference = images["conformance-thirdparty-pyzmq-mc0"], images["conformance-ref-mc0"]
    peer_run, peer_records = run_suite("mc0", peer, tmp_path / "peer")
    ref_run, ref_records = run_suite("mc0", reference, tmp_path / "ref")

    # the reference image passes; the third party gets a grade for every case the reference got
    assert ref_run.returncode == 0, ref_run.stdout[-3000:]
    assert {r["grade"] for r in ref_records} <= {"PASSED", "INFORMATIONAL"}
    peer_grades = {(r["case"], r["transport"]): r["grade"] for r in peer_records}
    ref_grades = {(r["case"], r["transport"]): r["grade"] for r in ref_records}
    assert len(ref_grades) >= 50 and set(peer_grades) == set(ref_grades)
    assert {r["implementation"] for r in peer_records} == {"conformance-thirdparty-pyzmq-mc0"}
    # ERROR would mean the image did not come up or the harness could not run a case
    assert "ERROR" not in peer_grades.values(), peer_run.stdout[-3000:]
    # the CURVE handshake with the suite's test key works: the key is in the image
    assert peer_grades[("mc0/handshake/curve-test-key", "zmtp")] == "PASSED"
    failed = any(r["grade"] == "FAILED" and r["requirement"] == "MUST" for r in peer_records)
    assert peer_run.returncode == (1 if failed else 0), peer_run.stdout[-3000:]
    differences = {key: (peer_grades[key], grade) for key, grade in ref_grades.items() if peer_grades[key] != grade}
    print(f"pyzmq mc0 broker vs reference: {len(differences)} cases graded differently: {differences}")


@pytest.mark.docker
def test_pyzmq_mc0_image_contract_answers(images: dict[str, str]) -> None:
    peer = images["conformance-thirdparty-pyzmq-mc0"]
    labels = docker.from_env().images.get(peer).labels
    assert labels[LABEL_PROTOCOLS] == "mc0" and labels[LABEL_ROLES] == "server"
    check_unsupported_answer(peer, "mc0")  # no client role: 127 for any test case
    with pytest.raises(ContainerStartError, match="exited with code 127(.|\n)*implements mc0, not stmp"):
        ContainerTarget(peer, "stmp", startup_timeout=20).start()


@pytest.mark.docker
def test_pyzmq_mc0_image_honours_curve_secret_file_and_null(images: dict[str, str], tmp_path: Path) -> None:
    zmq = pytest.importorskip("zmq")
    peer = images["conformance-thirdparty-pyzmq-mc0"]
    key_file = tmp_path / "server.key"
    key_file.write_text(TEST_KEYS["wrong_server"]["secret"] + "\n")
    key_file.chmod(0o644)

    def connect_ok(url: str, server_public: str | None) -> list[bytes]:
        ctx = zmq.Context()
        sock = ctx.socket(zmq.DEALER)
        sock.linger = 0
        sock.rcvtimeo = sock.sndtimeo = 5000
        if server_public:
            sock.curve_serverkey = server_public.encode()
            sock.curve_publickey = TEST_KEYS["client"]["public"].encode()
            sock.curve_secretkey = TEST_KEYS["client"]["secret"].encode()
        try:
            sock.connect(url)
            sock.send_multipart([b"", b"CONNECT", b"ID", b"7"])
            return sock.recv_multipart()
        finally:
            sock.close()
            ctx.term()

    with ContainerTarget(peer, "mc0", env={"CURVE_SECRET_FILE": "/keys/server.key"},
                         volumes={str(key_file): "/keys/server.key"}) as target:
        assert connect_ok(target.url, TEST_KEYS["wrong_server"]["public"]) == [b"", b"OK", b"ID", b"7"]
    with ContainerTarget(peer, "mc0", env={"ZMTP_MECHANISM": "NULL"}) as target:
        assert connect_ok(target.url, None) == [b"", b"OK", b"ID", b"7"]


@pytest.mark.docker
def test_pyzmq_mtl_client_image_against_the_reference_mtl_image(images: dict[str, str]) -> None:
    client, server = images["conformance-thirdparty-pyzmq-mtl"], images["conformance-ref-mtl"]
    check_unsupported_answer(client, "mtl")
    check_unsupported_answer(client, "mc0")
    with ContainerTarget(server, "mtl") as target:
        code, logs = run_client(client, "mtl", "test-and-confirm", target.url, timeout=60)
    assert code == 0, logs
    assert "redelivered" in logs and "pyzmq MTL client: OK" in logs
