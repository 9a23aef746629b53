"""`conformance matrix`: implementations from image labels, one bounded run per pair, a re-run of failed pairs."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import docker
import pytest

from conformance.images.implementations import (Implementation, cases_of, discover, from_labels, role_filter,
                                                suite_params)
from conformance.images.layout import RUN_LABEL, RUN_LABEL_ENV
from conformance.images.matrix_report import pair_outcome
from conformance.images.reference import REFERENCE_TIMERS

ROOT = Path(__file__).resolve().parents[2]
CLIENT_CASE = "stmp/handshake/client-sends-negotiation"
SERVER_CASE = "stmp/handshake/version-unsupported"


def test_pair_outcome_from_attempts() -> None:
    assert pair_outcome(["passed"]) == "passed"
    assert pair_outcome(["failed", "passed"]) == "flaky"
    assert pair_outcome(["timeout", "passed"]) == "flaky"
    assert pair_outcome(["failed", "failed"]) == "failing"
    assert pair_outcome(["failed", "timeout"]) == "failing"
    assert pair_outcome(["no-cases"]) == "no-cases"
    assert pair_outcome([]) == "no-cases"


def test_labels_declare_protocols_roles_and_timers() -> None:
    impl = from_labels("peer", "peer:1", {"conformance.protocols": "mc0, mtl", "conformance.roles": "client",
                                          "conformance.params.mtl": "heartbeat_interval_ms=700,redeliver_ms=300"})
    assert impl.protocols == ("mc0", "mtl") and impl.roles == ("client",) and impl.kind == "external"
    assert suite_params(impl, "mtl")["heartbeat_interval_ms"] == 700
    assert suite_params(impl, "mtl")["heartbeat_timeout_ms"] == 15000  # the adapter's default for the rest
    assert from_labels("x", "x:1", {"conformance.protocols": "stmp"}).roles == ("server", "client")


def test_stmp_reference_image_gets_the_cli_default_timers() -> None:
    impl = Implementation("conformance-ref-stmp", "conformance-ref-stmp:latest", "reference", ("stmp",),
                          params={"stmp": REFERENCE_TIMERS["stmp"]})
    params = suite_params(impl, "stmp")
    assert params["heartbeat_interval_ms"] == 5000 and params["heartbeat_timeout_ms"] == 15000


def test_reference_timers_are_what_the_images_serve_with() -> None:
    """The entrypoint runs `conformance serve` with its defaults: the labels must say the same."""
    from conformance.cli import build_parser
    from reference_impl.micromessage2.connection import DEFAULT_READ_TIMEOUT
    from reference_impl.mtl.service import BrokerOptions
    from reference_impl.stmp.client import CASE_REQUEST_TIMEOUT

    serve = build_parser().parse_args(["serve", "stmp"])
    request_timeout = CASE_REQUEST_TIMEOUT  # the only thing the suite's request_timeout_ms times
    assert REFERENCE_TIMERS["stmp"] == {"heartbeat_interval_ms": serve.heartbeat_interval * 1000,
                                        "heartbeat_timeout_ms": serve.heartbeat_timeout * 1000,
                                        "request_timeout_ms": request_timeout * 1000}
    assert REFERENCE_TIMERS["micromessage2"] == {"read_timeout_ms": DEFAULT_READ_TIMEOUT * 1000}
    assert REFERENCE_TIMERS["mtl"] == {"heartbeat_interval_ms": serve.heartbeat_interval * 1000,
                                       "heartbeat_timeout_ms": serve.heartbeat_timeout * 1000,
                                       "redeliver_ms": BrokerOptions().redeliver_after * 1000}


def test_role_filter_keeps_the_cases_an_image_can_run() -> None:
    roles, budget = cases_of("stmp")
    assert roles[CLIENT_CASE] == "client" and budget["server"] > budget["client"] > 0
    assert role_filter(roles, ("server", "client")) is None
    only_client = role_filter(roles, ("client",))
    assert only_client.startswith("(") and f"{CLIENT_CASE}[" in only_client and SERVER_CASE not in only_client
    assert role_filter(roles, ("server",)) == "not (" + " or ".join(
        f"{c}[" for c in sorted(c for c, r in roles.items() if r == "client")) + ")"
    assert role_filter({"mtl/a": "server"}, ("client",)) == ""


@pytest.mark.docker
def test_client_role_case_through_the_reference_image(stmp_image: str, tmp_path: Path) -> None:
    # the suite is the server; the image runs ROLE=client TESTCASE=negotiate against it
    run = subprocess.run([sys.executable, "-m", "conformance.cli", "run", "stmp", "--target", f"docker:{stmp_image}",
                          "--out", str(tmp_path), "-k", CLIENT_CASE],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:]
    records = [json.loads(line) for line in (tmp_path / "records.jsonl").read_text().splitlines()]
    assert {(r["case"], r["transport"], r["grade"]) for r in records} == {
        (CLIENT_CASE, "tcp", "PASSED"), (CLIENT_CASE, "ws", "PASSED")}


@pytest.mark.docker
def test_images_are_discovered_by_their_labels(docker_engine: docker.DockerClient, stmp_image: str) -> None:
    found = {impl.name: impl for impl in discover(docker_engine)}
    impl = found["conformance-ref-stmp"]
    assert impl.protocols == ("stmp",) and impl.kind == "reference" and impl.image == "conformance-ref-stmp:latest"
    assert impl.params["stmp"]["heartbeat_timeout_ms"] == 15000
    assert not any(name.startswith("conformance-test-") for name in found)  # unlabelled images are not run


@pytest.mark.docker
def test_matrix_records_each_pair_and_reruns_a_failing_one_once(
        stmp_image: str, shell_image: Callable[[str, str], str], tmp_path: Path) -> None:
    # answers 127 to client test cases (so it is trusted), then never serves: every server case is an ERROR
    broken = shell_image("matrix-broken", 'if [ "$ROLE" = client ]; then exit 127; fi; '
                                          'echo "broken: refuses to serve"; exit 3')
    out = tmp_path / "matrix"
    run = subprocess.run(
        [sys.executable, "-m", "conformance.images.matrix", "--out", str(out), "--image", stmp_image,
         "--image", f"{broken}=stmp", "--protocol", "stmp", "-k", f"{CLIENT_CASE}[tcp] or {SERVER_CASE}[tcp]"],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 1, run.stdout[-3000:] + run.stderr[-3000:]  # a failing pair
    document = json.loads((out / "matrix.json").read_text())
    assert document["protocols"] == ["stmp"]
    assert [impl["name"] for impl in document["implementations"]] == [
        "conformance-ref-stmp", "conformance-test-matrix-broken"]
    pairs = {pair["implementation"]: pair for pair in document["pairs"]}

    good = pairs["conformance-ref-stmp"]
    assert good["outcome"] == "passed" and len(good["attempts"]) == 1
    assert good["params"]["heartbeat_interval_ms"] == 5000 and good["params"]["heartbeat_timeout_ms"] == 15000
    assert good["grades"] == {"PASSED": 2}
    attempt = good["attempts"][0]
    assert attempt["out"] == "conformance-ref-stmp/stmp"
    for key in ("records", "junit", "allureResults", "log"):
        assert (out / attempt[key]).exists(), key
    records = [json.loads(line) for line in (out / attempt["records"]).read_text().splitlines()]
    assert {(r["case"], r["grade"], r["implementation"]) for r in records} == {
        (CLIENT_CASE, "PASSED", "conformance-ref-stmp"), (SERVER_CASE, "PASSED", "conformance-ref-stmp")}

    bad = pairs["conformance-test-matrix-broken"]
    assert bad["outcome"] == "failing"
    assert [a["outcome"] for a in bad["attempts"]] == ["failed", "failed"]
    assert [a["out"] for a in bad["attempts"]] == ["conformance-test-matrix-broken/stmp",
                                                  "conformance-test-matrix-broken/stmp/attempt-2"]
    for attempt in bad["attempts"]:
        assert attempt["exitCode"] == 1 and not attempt["timedOut"]
        grades = {r["case"]: r["grade"] for r in map(json.loads, (out / attempt["records"]).read_text().splitlines())}
        assert grades == {SERVER_CASE: "ERROR", CLIENT_CASE: "UNSUPPORTED"}
    assert document["summary"] == {"passed": 1, "flaky": 0, "failing": 1, "no-cases": 0}
    assert "FAILING" in run.stdout and str(out / "matrix.json") in run.stdout


@pytest.mark.docker
def test_pair_timeout_stops_the_run_and_its_containers(
        docker_engine: docker.DockerClient, stmp_image: str, tmp_path: Path) -> None:
    # the heartbeat-timeout case waits up to 18 s for the image (15 s timeout): longer than the pair timeout
    out = tmp_path / "matrix"
    started = time.monotonic()
    run = subprocess.run(
        [sys.executable, "-m", "conformance.images.matrix", "--out", str(out), "--image", stmp_image,
         "-k", "stmp/error-disconnect/heartbeat-timeout[tcp]", "--pair-timeout", "6"],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 1, run.stdout[-3000:] + run.stderr[-3000:]
    assert time.monotonic() - started < 2 * (6 + 20) + 30
    (pair,) = json.loads((out / "matrix.json").read_text())["pairs"]
    assert pair["outcome"] == "failing" and pair["timeoutSeconds"] == 6
    for attempt in pair["attempts"]:
        assert attempt["outcome"] == "timeout" and attempt["timedOut"] and attempt["exitCode"] is None
        assert "stopped after the pair timeout of 6s" in (out / attempt["log"]).read_text()
        left = docker_engine.containers.list(all=True, filters={"label": f"{RUN_LABEL}={attempt['runLabel']}"})
        assert left == []


@pytest.mark.docker
def test_containers_carry_the_run_label(docker_engine: docker.DockerClient, stmp_image: str,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from conformance.images.container import ContainerTarget
    monkeypatch.setenv(RUN_LABEL_ENV, "test-run-label")
    with ContainerTarget(stmp_image, "stmp"):
        running = docker_engine.containers.list(filters={"label": f"{RUN_LABEL}=test-run-label"})
        assert len(running) == 1
