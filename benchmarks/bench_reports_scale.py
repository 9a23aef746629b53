"""How the report pipeline scales with the number of records (a script, not a test; issue 17 item 4).

    .venv/bin/python benchmarks/bench_reports_scale.py [--sizes 10000 100000 1000000 10000000] [--cluster]

For each size it generates deterministic runs (bench_reports.generate), runs
``python -m reports.cli`` end to end (JVM start-up included) on local[2] and,
with --cluster, on a standalone cluster of one 2-core worker started on
127.0.0.1 from the pyspark package's scripts; and times a plain-Python
streaming aggregation of the same records into the same matrix (latest run
per implementation x case x transport, worst grade within it). A straight
line fitted through (millions of records, seconds) gives each one's fixed
cost and cost per million records; the ratios of the slopes say how far the
job is from a single Python process reading the files once.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "benchmarks"), str(REPO / "tests" / "reports")]

from bench_reports import generate  # noqa: E402

from reports.grades import WORST_FIRST  # noqa: E402

SEVERITY = {grade: rank for rank, grade in enumerate(reversed(WORST_FIRST))}


def plain_python_matrix(runs_dir: Path) -> int:
    """One pass over every line, keeping per cell the latest run and its worst grade. Returns the cells."""
    cells: dict[tuple[str, str, str, str], tuple[str, str, int]] = {}  # key -> (time, run, severity)
    for path in sorted(runs_dir.rglob("records.jsonl")):
        with path.open(encoding="utf-8") as lines:
            for line in lines:
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    continue
                key = (rec["implementation"], rec["protocol"], rec["case"], rec["transport"])
                seen = cells.get(key)
                sev = SEVERITY[rec["grade"]]
                if seen is None or rec["run"] != seen[1] and rec["time"] > seen[0]:
                    cells[key] = (rec["time"], rec["run"], sev)
                elif rec["run"] == seen[1] and sev > seen[2]:
                    cells[key] = (seen[0], seen[1], sev)
    return len(cells)


def timed_report(runs_dir: Path, out: Path, master: str) -> float:
    env = {**os.environ, "PYTHONPATH": str(REPO), "SPARK_LOCAL_IP": "127.0.0.1"}
    command = [sys.executable, "-m", "reports.cli", "--input", str(runs_dir), "--out", str(out),
               "--master", master, "--requirements", str(REPO / "docs" / "requirements")]
    if master.startswith("spark://"):
        command += ["--conf", "spark.executor.memory=2g"]
    else:
        command += ["--driver-memory", "4g"]
    t0 = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"report on {master} exited {done.returncode}:\n{done.stderr[-3000:]}")
    return elapsed


def fit(points: list[tuple[float, float]]) -> tuple[float, float]:
    """Least-squares line through (millions, seconds): (fixed seconds, seconds per million)."""
    if len(points) < 2:
        return float("nan"), float("nan")
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    slope = sum((x - mx) * (y - my) for x, y in points) / sxx
    return my - slope * mx, slope


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--cluster", action="store_true", help="also on a 2-core standalone cluster")
    parser.add_argument("--seed", type=int, default=20260101)
    parser.add_argument("--work", type=Path, default=REPO / "out" / "bench-reports-scale")
    opts = parser.parse_args()

    print(f"cpus {os.cpu_count()}, load average at start {os.getloadavg()[0]:.1f}")
    masters = ["local[2]"]
    timings: dict[str, list[tuple[float, float]]] = {"plain python": []}
    rows = []
    with _maybe_cluster(opts.cluster) as cluster_url:
        if cluster_url:
            masters.append(cluster_url)
        for size in opts.sizes:
            shutil.rmtree(opts.work, ignore_errors=True)
            runs_dir = opts.work / "runs"
            records, _malformed = generate(runs_dir, size, opts.seed)
            millions = records / 1e6
            t0 = time.perf_counter()
            plain_python_matrix(runs_dir)
            row = {"records": records, "plain python": time.perf_counter() - t0}
            timings["plain python"].append((millions, row["plain python"]))
            for master in masters:
                row[master] = timed_report(runs_dir, opts.work / "report", master)
                timings.setdefault(master, []).append((millions, row[master]))
            rows.append(row)
            timed = [f"{k} {v:7.1f} s" for k, v in row.items() if k != "records"]
            # The machine may be shared: the 1-minute load average beside each size says how much.
            load = f"load {os.getloadavg()[0]:.1f}"
            print("  ".join([f"{records:>11,} records", *timed, load]), flush=True)

    python_fixed, python_slope = fit(timings["plain python"])
    print(f"\n{'':24}{'fixed s':>9}{'s per million':>15}{'slope / plain python':>22}")
    print(f"{'plain python':24}{python_fixed:9.1f}{python_slope:15.1f}{1.0:22.2f}")
    for master in masters:
        fixed, slope = fit(timings[master])
        label = "standalone 2 cores" if master.startswith("spark://") else master
        print(f"{label:24}{fixed:9.1f}{slope:15.1f}{slope / python_slope:22.2f}")
    million = [r for r in rows if r["records"] >= 1_000_000]
    if million:
        print(f"1M-record end to end on local[2]: {million[0]['local[2]']:.1f} s (goal: under 30 s)")
    return 0


class _maybe_cluster:
    def __init__(self, wanted: bool) -> None:
        self.wanted, self._context = wanted, None

    def __enter__(self) -> str | None:
        if not self.wanted:
            return None
        from spark_cluster import standalone_cluster

        self._tmp = tempfile.TemporaryDirectory(prefix="bench-cluster-")
        self._context = standalone_cluster(Path(self._tmp.name), cores=2, memory="3g")
        return self._context.__enter__().master_url

    def __exit__(self, *exc) -> None:
        if self._context is not None:
            self._context.__exit__(*exc)
            self._tmp.cleanup()


if __name__ == "__main__":
    raise SystemExit(main())
