"""A Spark standalone cluster for tests: one master and one worker on 127.0.0.1.

Started with the pyspark package's own launcher scripts (SPARK_HOME = the
package folder), stopped by the PIDs started here. The worker's PATH starts
with a ``python3`` that is not the driver's, as on a cluster whose machines
have another default Python: a job only succeeds if its executors run the
Python the driver chose.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from conformance.target_base import dies_with_us

START_TIMEOUT_S = 60
STOP_TIMEOUT_S = 15
FOREIGN_PYTHON = """#!/bin/sh
echo "python3 on this worker is not the driver's Python" >&2
echo "$0 $*" >> "$(dirname "$0")/calls"
exit 3
"""


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Cluster:
    master_url: str
    ui_url: str
    foreign_python_calls: Path
    logs: Path

    def applications(self) -> list[str]:
        """Names of the applications the master has run or is running, oldest first."""
        state = _master_state(self.ui_url)
        apps = sorted(state.get("completedapps", []) + state.get("activeapps", []), key=lambda a: a["starttime"])
        return [a["name"] for a in apps]

    def log_tail(self, chars: int = 3000) -> str:
        logs = sorted(self.logs.glob("*.log"))
        return "\n".join(f"== {p.name}\n{p.read_text(errors='replace')[-chars:]}" for p in logs)


def _master_state(ui_url: str) -> dict:
    with urllib.request.urlopen(f"{ui_url}/json/", timeout=5) as response:
        return json.load(response)


def _alive_workers(ui_url: str) -> int:
    try:
        state = _master_state(ui_url)
    except OSError:
        return 0
    return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is not None:
        return
    # spark-class execs java in a new session started here: signal that group only.
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(STOP_TIMEOUT_S)


@contextmanager
def standalone_cluster(work: Path, cores: int = 2, memory: str = "1g") -> Iterator[Cluster]:
    home = spark_home()
    fake_bin = work / "worker-bin"
    fake_bin.mkdir(parents=True)
    (fake_bin / "python3").write_text(FOREIGN_PYTHON)
    (fake_bin / "python3").chmod(0o755)
    logs = work / "logs"
    logs.mkdir()
    env = {
        **os.environ,
        "SPARK_HOME": str(home),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_NO_DAEMONIZE": "1",
    }
    env.pop("PYSPARK_PYTHON", None)
    port, ui_port = free_port(), free_port()
    spark_class = str(home / "bin" / "spark-class")
    started: list[subprocess.Popen] = []

    def launch(name: str, args: list[str], extra_env: dict[str, str]) -> subprocess.Popen:
        log = open(logs / f"{name}.log", "wb")  # noqa: SIM115 (the process owns it)
        # dies_with_us: a suite killed mid-test takes the master and worker with it (PDEATHSIG)
        process = subprocess.Popen(dies_with_us([spark_class, *args]), env={**env, **extra_env}, stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        started.append(process)
        return process

    try:
        master = launch("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                   "--port", str(port), "--webui-port", str(ui_port)], {})
        worker = launch(
            "worker",
            ["org.apache.spark.deploy.worker.Worker", f"spark://127.0.0.1:{port}", "--host", "127.0.0.1",
             "--port", str(free_port()), "--webui-port", str(free_port()), "--cores", str(cores),
             "--memory", memory, "--work-dir", str(work / "worker")],
            {"PATH": f"{fake_bin}{os.pathsep}{env.get('PATH', '')}"},
        )
        cluster = Cluster(f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{ui_port}", fake_bin / "calls", logs)
        deadline = time.monotonic() + START_TIMEOUT_S
        while _alive_workers(cluster.ui_url) < 1:
            if master.poll() is not None or worker.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the standalone cluster did not come up:\n{cluster.log_tail()}")
            time.sleep(0.5)
        yield cluster
    finally:
        for process in reversed(started):
            _stop(process)
