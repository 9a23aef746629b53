"""An installed wheel (not the checkout) carries the scenarios and vectors: `conformance run` works anywhere."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_wheel_runs_the_suite_outside_the_checkout(tmp_path: Path) -> None:
    wheels, target, elsewhere = tmp_path / "w", tmp_path / "site", tmp_path / "cwd"
    elsewhere.mkdir()
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(ROOT)],
                   check=True, capture_output=True, timeout=300)
    (wheel,) = wheels.glob("*.whl")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)],
                   check=True, capture_output=True, timeout=300)
    env = {**os.environ, "PYTHONPATH": str(target)}
    where = subprocess.run([sys.executable, "-c", "import conformance.paths as p; print(p.scenarios_dir())"],
                           cwd=elsewhere, env=env, capture_output=True, text=True, check=True)
    assert where.stdout.strip().startswith(str(target))
    run = subprocess.run([sys.executable, "-m", "conformance.cli", "run", "stmp", "--out", str(tmp_path / "out"),
                          "-k", "stmp/handshake/one-version"], cwd=elsewhere, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:]
    assert "2 passed" in run.stdout
    check = subprocess.run([sys.executable, "-m", "conformance.cli", "vectors", "check", "-q"], cwd=elsewhere,
                           env=env, capture_output=True, text=True, timeout=300)
    assert check.returncode == 0 and " 0 failed" in check.stdout
