"""Paired end-to-end runs of the report CLI from two checkouts on the same inputs (a script, not a test).

    .venv/bin/python benchmarks/bench_reports_pair.py --trees ../other-checkout . --input out/runs1m [--pairs 2]
        [--baseline out/runs1m/r00-050] [--conf K=V ...]

Runs ``python -m reports.cli --master local[2] --driver-memory 4g`` from each
checkout in turn (the order alternates between pairs, so neither always runs
on a machine warmed or loaded by the other) and prints, per run, the wall
time, the JVM's CPU time (user + system of the process the CLI started, read
from /proc every 0.2 s until it exits: less sensitive to other load than the
wall time) and the mean 1-minute load average over the run. Each run's
outputs stay in OUT/<pair>-<tree number> for comparing.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CLOCK = os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _cpu_seconds(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / CLOCK  # utime, stime


def _mapped_archives(pid: int) -> set[str]:
    try:
        maps = Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return set()
    return {line.split()[-1] for line in maps.splitlines() if line.endswith(".jsa")}


class _Watch(threading.Thread):
    """Samples the JVM's CPU time and the load average until the CLI's JVM child has exited."""

    def __init__(self, cli: subprocess.Popen) -> None:
        super().__init__(daemon=True)
        self.cli, self.jvm, self.cpu, self.loads = cli, None, 0.0, []
        self.archives: set[str] = set()  # class-data-sharing archives the JVM mapped

    def run(self) -> None:
        while True:
            if self.jvm is None:
                self.jvm = next(iter(_children(self.cli.pid)), None)
            self.loads.append(os.getloadavg()[0])
            if self.jvm is not None:
                seconds = _cpu_seconds(self.jvm)
                if seconds is None:
                    return
                self.cpu = seconds
                self.archives |= _mapped_archives(self.jvm)
            elif self.cli.poll() is not None:
                return
            time.sleep(0.2)


def timed(tree: Path, inputs: list[str], out: Path, extra: list[str]) -> tuple[float, float, float]:
    env = {**os.environ, "PYTHONPATH": str(tree), "SPARK_LOCAL_IP": "127.0.0.1"}
    command = [sys.executable, "-m", "reports.cli", "--input", *inputs, "--out", str(out), "--master", "local[2]",
               "--driver-memory", "4g", "--requirements", str(REPO / "docs" / "requirements"), *extra]
    t0 = time.perf_counter()
    cli = subprocess.Popen(command, env=env, cwd=tree, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    watch = _Watch(cli)
    watch.start()
    stdout, stderr = cli.communicate()
    wall = time.perf_counter() - t0
    watch.join()
    if cli.returncode != 0:
        raise SystemExit(f"{tree}: exit {cli.returncode}\n{stderr[-3000:]}")
    (out / "stdout.txt").write_text(stdout, encoding="utf-8")
    if watch.archives:
        print(f"  {tree}: the JVM mapped {', '.join(sorted(watch.archives))}", flush=True)
    return wall, watch.cpu, sum(watch.loads) / len(watch.loads)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", type=Path, nargs=2, required=True, metavar="CHECKOUT")
    parser.add_argument("--input", nargs="+", required=True)
    parser.add_argument("--baseline")
    parser.add_argument("--pairs", type=int, default=1)
    parser.add_argument("--conf", action="append", default=[], help="passed to the CLI of the second checkout only")
    parser.add_argument("--out", type=Path, default=REPO / "out" / "pair")
    opts = parser.parse_args()
    inputs = [str(Path(i).resolve()) for i in opts.input]
    common = ["--baseline", str(Path(opts.baseline).resolve())] if opts.baseline else []
    for pair in range(1, opts.pairs + 1):
        order = [0, 1] if pair % 2 else [1, 0]
        results = {}
        for n in order:
            extra = common + [arg for conf in opts.conf for arg in ("--conf", conf)] * n
            out = (opts.out / f"{pair}-{n}").resolve()
            results[n] = timed(opts.trees[n].resolve(), inputs, out, extra)
        cells = [f"{wall:6.1f} s / {cpu:6.1f} s / {load:4.1f}" for wall, cpu, load in (results[0], results[1])]
        print(f"pair {pair} ({'first' if order[0] == 0 else 'second'} tree first): "
              f"{opts.trees[0]}: {cells[0]}   {opts.trees[1]}: {cells[1]}   (wall / JVM CPU / load)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
