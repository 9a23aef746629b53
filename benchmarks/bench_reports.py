"""Benchmark the report pipeline on generated records (a script, not a test).

    .venv/bin/python benchmarks/bench_reports.py [--records 1000000] [--master local[2]]

Writes deterministic runs (fixed seed) of several implementations, runs the
pipeline, prints wall time and peak memory of the driver (Python) and of the
JVM it started, and checks the matrix against a plain single-process Python
computation over all records of three implementations.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from reports.grades import WORST_FIRST  # noqa: E402
from reports.pipeline import ReportOptions, run_report  # noqa: E402
from reports.spark_session import build_session  # noqa: E402

PROTOCOLS = ("stmp", "micromessage2", "rsio", "mc0", "mtl")
FAMILIES = (
    "handshake",
    "extension-index",
    "ack-wrap",
    "split-message",
    "error-disconnect",
    "heartbeat",
    "framing",
    "flow",
    "close",
    "errors",
)
IMPLEMENTATIONS = 10
CASES_PER_PROTOCOL = 1000
RUNS_PER_VERSION = 25
CHECKED_IMPLEMENTATIONS = 3
START = datetime(2026, 1, 1, tzinfo=timezone.utc)
REQUIREMENTS = ("MUST", "MUST", "MUST", "SHOULD", "SHOULD", "MAY", "INFO")
GRADE_FOR = {
    "MUST": ("PASSED", "FAILED"),
    "SHOULD": ("PASSED", "NON-STRICT"),
    "MAY": ("PASSED", "UNSUPPORTED"),
    "INFO": ("INFORMATIONAL", "NOT-APPLICABLE"),
}


def case_id(protocol: str, n: int) -> tuple[str, str, str]:
    family = FAMILIES[n % len(FAMILIES)]
    return f"{protocol}/{family}/case-{n:04d}", family, REQUIREMENTS[n % len(REQUIREMENTS)]


def generate(root: Path, total: int, seed: int) -> tuple[int, int]:
    """Runs of IMPLEMENTATIONS implementations, one protocol each. Returns (records, malformed lines)."""
    rng = random.Random(seed)
    runs_per_impl = max(1, total // (IMPLEMENTATIONS * CASES_PER_PROTOCOL))
    written = malformed = 0
    for impl in range(IMPLEMENTATIONS):
        protocol = PROTOCOLS[impl % len(PROTOCOLS)]
        name = f"impl-{impl}"
        # Each implementation fails a fixed few cases; a few more flip between runs.
        failing = {n for n in range(CASES_PER_PROTOCOL) if rng.random() < 0.03 * (impl % 4)}
        flaky = {n for n in range(CASES_PER_PROTOCOL) if rng.random() < 0.01}
        for run_no in range(runs_per_impl):
            version = f"{1 + run_no // RUNS_PER_VERSION}.0"
            run = f"r{impl:02d}-{run_no:03d}"
            started = START + timedelta(hours=run_no, minutes=impl)
            lines = []
            for n in range(CASES_PER_PROTOCOL):
                case, family, requirement = case_id(protocol, n)
                good, bad = GRADE_FOR[requirement]
                grade = bad if n in failing or (n in flaky and rng.random() < 0.5) else good
                if rng.random() < 0.0005:
                    grade = "ERROR"
                t = (started + timedelta(milliseconds=10 * n)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
                lines.append(
                    json.dumps(
                        {
                            "schemaVersion": 1,
                            "run": run,
                            "time": t,
                            "implementation": name,
                            "implementationVersion": version,
                            "target": "tcp://127.0.0.1:9000",
                            "protocol": protocol,
                            "family": family,
                            "case": case,
                            "transport": "tcp",
                            "requirement": requirement,
                            "grade": grade,
                            "exchangeGrade": grade,
                            "closeGrade": None,
                            "message": "" if grade == good else f"{grade}: expectation {n % 7} not met",
                            "spec": f"Sentence {n}.",
                            "specRef": f"specs/{protocol}.txt#{n % 40}",
                            "durationMs": round(rng.lognormvariate(2, 0.6), 3),
                            "wirelog": None if grade == good else f"wirelogs/{n}.log",
                        },
                        separators=(",", ":"),
                    )
                )
                if rng.random() < 0.0001:
                    lines.append('{"schemaVersion": 1, "run": ')  # a truncated write
                    malformed += 1
            folder = root / run
            folder.mkdir(parents=True)
            (folder / "records.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
            written += CASES_PER_PROTOCOL
    return written, malformed


def expected_matrix(root: Path, implementations: set[str]) -> dict[tuple[str, str], str]:
    """Single-process reference: per implementation x case, the worst grade of its latest run."""
    latest: dict[tuple[str, str], tuple[str, str]] = {}  # key -> (time, run)
    records: list[dict] = []
    for path in sorted(root.glob("*/records.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            if rec["implementation"] not in implementations:
                continue
            records.append(rec)
            key = (rec["implementation"], rec["case"])
            stamp = (datetime.fromisoformat(rec["time"].replace("Z", "+00:00")).isoformat(), rec["run"])
            latest[key] = max(latest.get(key, stamp), stamp)
    matrix: dict[tuple[str, str], str] = {}
    for rec in records:
        key = (rec["implementation"], rec["case"])
        if rec["run"] != latest[key][1]:
            continue
        if key not in matrix or WORST_FIRST.index(rec["grade"]) < WORST_FIRST.index(matrix[key]):
            matrix[key] = rec["grade"]
    return matrix


def pipeline_matrix(out: Path, implementations: set[str]) -> dict[tuple[str, str], str]:
    cells = {}
    for part in (out / "json" / "matrix").glob("part-*.json"):
        with part.open(encoding="utf-8") as fh:
            for line in fh:
                row = json.loads(line)
                if row["implementation"] in implementations:
                    cells[(row["implementation"], row["case"])] = row["grade"]
    return cells


def vm_hwm_mib(pid: int) -> float | None:
    """Peak resident set of a process from /proc (VmHWM), in MiB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def main() -> int:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--records", type=int, default=1_000_000)
    args.add_argument("--seed", type=int, default=20260101)
    args.add_argument("--master", default="local[2]")
    args.add_argument("--work", type=Path, default=REPO / "out" / "bench-reports")
    args.add_argument("--driver-memory", default="4g")
    opts = args.parse_args()

    # Other work on the machine slows Spark's threads; the load says how much.
    print(f"cpus {os.cpu_count()}, load average at start {os.getloadavg()[0]:.1f}")
    shutil.rmtree(opts.work, ignore_errors=True)
    runs_dir, out = opts.work / "runs", opts.work / "report"
    t0 = time.perf_counter()
    records, malformed = generate(runs_dir, opts.records, opts.seed)
    t_gen = time.perf_counter() - t0
    print(f"generated {records:,} records (+{malformed} malformed lines) in {t_gen:.1f} s under {runs_dir}")

    t0 = time.perf_counter()
    spark = build_session(opts.master, driver_memory=opts.driver_memory)
    t_start = time.perf_counter() - t0
    t0 = time.perf_counter()
    summary = run_report(spark, ReportOptions([str(runs_dir)], out, baseline="r00-000", requirements_dir=None))
    t_report = time.perf_counter() - t0
    load_after = os.getloadavg()[0]
    jvm_pid = spark.sparkContext._gateway.proc.pid  # the JVM py4j launched for this driver
    jvm_peak = vm_hwm_mib(jvm_pid)
    spark.stop()
    driver_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    checked = {f"impl-{i}" for i in range(CHECKED_IMPLEMENTATIONS)}
    t0 = time.perf_counter()
    want = expected_matrix(runs_dir, checked)
    t_python = time.perf_counter() - t0
    got = pipeline_matrix(out, checked)
    matches = want == got
    print(
        f"spark session start: {t_start:.1f} s; report ({opts.master}): {t_report:.1f} s wall "
        f"(load average at its end {load_after:.1f})"
    )
    print(
        f"peak RSS: driver (python) {driver_peak:.0f} MiB, JVM {jvm_peak if jvm_peak is None else round(jvm_peak)} MiB"
    )
    print(
        f"records valid {summary['records']['valid']:,}, invalid {summary['records']['invalid']} "
        f"(expected {records:,} and {malformed}); runs {summary['runs']}; flaky {summary['flaky']['count']}; "
        f"regressions vs r00-000 {summary['regressions']['count']}"
    )
    print(
        f"matrix check on {len(checked)} implementations ({len(want):,} cells, plain Python {t_python:.1f} s): "
        f"{'equal' if matches else 'DIFFERENT'}"
    )
    ok = matches and summary["records"] == {
        "valid": records,
        "invalid": malformed,
        "files": summary["records"]["files"],
    }
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
