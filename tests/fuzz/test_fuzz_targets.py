"""Keep the fuzz targets working: every target fuzzes a few seconds without a finding.

The long runs are ``python -m fuzz run all --seconds N``; this only proves
that each target starts, runs its seeds and many mutated inputs, and finds
nothing in a small budget.  The seeds (every vector's bytes, FUZZ_CRASH
vectors included) also replay in-process, so a regression of a fixed crash
fails here deterministically.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from fuzz.targets import guarded, seed_inputs, targets_for  # noqa: E402
from fuzz.worker import have_atheris  # noqa: E402

SECONDS = 3
MIN_EXECUTIONS = 100  # even the slowest target runs thousands in 3 s; fewer means it is broken
TARGETS = [t.name for t in targets_for("all")]
_LINE = re.compile(r"^(\S+)\s+(\w+)\s+(\d+) execs\s+\d+/s\s+(\S+)", re.M)


def _run(args: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "fuzz", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout, check=False)


@pytest.fixture(scope="module")
def fuzz_all(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], dict]:
    out = tmp_path_factory.mktemp("fuzz")
    proc = _run(["run", "all", "--seconds", str(SECONDS), "--jobs", "2", "--out", str(out)],
                timeout=len(TARGETS) * (SECONDS + 60))
    lines = {m[1]: (m[2], int(m[3]), m[4]) for m in _LINE.finditer(proc.stdout)}
    return proc, lines


def test_every_protocol_has_targets() -> None:
    protocols = {name.rsplit("-", 1)[0] for name in TARGETS}
    assert {"stmp", "micromessage2", "rsio", "zmtp", "mtl", "mc0"} <= protocols
    for protocol in protocols:
        kinds = {name.rsplit("-", 1)[1] for name in TARGETS if name.rsplit("-", 1)[0] == protocol}
        # a codec target and a state-machine target (mc0's is the broker: its connections are ZMTP's)
        assert "codec" in kinds and kinds & {"connection", "broker"}, (protocol, kinds)
    assert {"mtl-codec", "mtl-connection", "mc0-codec", "mc0-broker"} <= set(TARGETS)


def _mc0_step(peer: int, op: int, frames: list[bytes]) -> bytes:
    from fuzz.mc0 import _records, _step
    return _step(peer, op, _records(frames))


#: Inputs that once broke a target, as found (minimised), with what the fix was.  Each is also a vector
#: (flag FUZZ_CRASH or HUGE_NUMBER), which the seeds replay; these keep the raw inputs.
FINDINGS = {
    # SUB, then the broker attached the same peer handle again: the old subscriptions stayed in the
    # subscriber table (vectors/mc0/replies.json tcId 25; Broker.attach now ends the old session)
    "mc0-broker-reattach": ("mc0-broker", bytes.fromhex("04000000000e0300035355420000000000000000ff00ffff")),
    # Response body '092' decoded as code 92, which the encoder refuses (vectors/mtl/data-commands.json tcId 66)
    "mtl-codec-response-092": ("mtl-codec", bytes.fromhex("000902000000000000000003303932")),
    # found by review, not by the fuzzer: CONNECT TTL of 4301 digits made int() raise ValueError out of
    # Broker.receive (vectors/mc0/requests.json tcId 66)
    "mc0-broker-ttl-digits": ("mc0-broker", _mc0_step(0, 0, [b"", b"CONNECT", b"ID", b"c", b"TTL", b"1" * 4301])),
}


@pytest.mark.parametrize("finding", sorted(FINDINGS))
def test_fuzz_findings_stay_fixed(finding: str) -> None:
    target, data = FINDINGS[finding]
    guarded(target)(data)  # raises on a crash


@pytest.mark.slow
@pytest.mark.parametrize("target", TARGETS)
def test_target_fuzzes_without_findings(fuzz_all, target: str) -> None:
    proc, lines = fuzz_all
    assert target in lines, f"no result line for {target}:\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}"
    engine, executions, status = lines[target]
    assert status == "ok", f"{target}: {status}\n{proc.stdout[-5000:]}"
    assert executions >= MIN_EXECUTIONS, f"{target} ran only {executions} inputs in {SECONDS} s"
    if have_atheris():
        assert engine == "atheris"


@pytest.mark.slow
def test_run_exit_code(fuzz_all) -> None:
    proc, _ = fuzz_all
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-2000:]


@pytest.mark.parametrize("target", TARGETS)
def test_seeds_replay_without_crash(target: str) -> None:
    """Every seed (vectors' wire bytes, FUZZ_CRASH vectors among them) through the guarded target."""
    protocol = target.rsplit("-", 1)[0]
    inputs = seed_inputs(protocol)[target]
    assert inputs, f"{target} has no seeds"
    one_input = guarded(target)
    for data in inputs:
        one_input(data)  # raises on a crash


@pytest.mark.slow
def test_fallback_engine_runs(tmp_path: Path) -> None:
    """Without atheris the runner falls back to hypothesis; keep that path working too."""
    proc = _run(["run", "stmp-codec", "--seconds", "2", "--engine", "hypothesis", "--out", str(tmp_path)],
                timeout=90)
    assert proc.returncode == 0, proc.stdout[-3000:]
    engine, executions, status = {m[1]: (m[2], int(m[3]), m[4]) for m in _LINE.finditer(proc.stdout)}["stmp-codec"]
    assert (engine, status) == ("hypothesis", "ok") and executions >= MIN_EXECUTIONS


def test_minimize_shrinks_a_failing_input(monkeypatch: pytest.MonkeyPatch) -> None:
    """The minimiser keeps the failure and drops what does not matter (a planted fault)."""
    from fuzz import __main__ as cli

    def planted(data: bytes) -> None:
        if b"\xde\xad" in data:
            raise KeyError("planted")

    monkeypatch.setattr(cli, "load", lambda name: planted)
    data, signature = cli.minimize("stmp-codec", b"x" * 50 + b"\xde\xad" + b"y" * 50, seconds=10)
    assert signature is not None and signature[0] == "KeyError"
    assert data == b"\xde\xad"
    assert cli.minimize("stmp-codec", b"harmless", seconds=1) == (b"harmless", None)
