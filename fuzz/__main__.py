"""Coverage-guided fuzzing of the reference codecs and connection state machines.

    python -m fuzz seed [all|PROTOCOL|TARGET]            seed corpora from the vectors (out/fuzz/corpus/)
    python -m fuzz run all --seconds 60 [--jobs 2]       every target, each in a subprocess for 60 s
    python -m fuzz run stmp --seconds 30                 one protocol's targets
    python -m fuzz repro TARGET FILE                     run one input, print what it raises
    python -m fuzz minimize TARGET FILE [--seconds 60]   shrink a crashing input (writes FILE.min)
    python -m fuzz list                                  the targets

``run`` seeds the corpora first, prints per target the executions and any
crash (traceback, input file, minimised input in hex) and exits 1 if any
target crashed, hung or could not run.  Logs and crash files go to
out/fuzz/logs/ and out/fuzz/artifacts/<target>/.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import signal
import subprocess
import sys
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from fuzz.targets import ROOT, TARGETS, TargetInfo, allowed_errors, load, seed_inputs, targets_for

DEFAULT_OUT = ROOT / "out" / "fuzz"
STARTUP_SLACK = 60.0  # seconds a worker may take beyond its budget (imports, the initial corpus pass)
MINIMIZE_SECONDS = 30


@dataclass
class Outcome:
    target: str
    engine: str
    executions: int
    seconds: float
    crash: str | None  # path of the crashing input
    detail: str  # traceback or error text
    minimized: bytes | None = None

    @property
    def ok(self) -> bool:
        return self.crash is None and not self.detail


def seed(selector: str, out: Path) -> dict[str, int]:
    counts = {}
    for info in targets_for(selector):
        folder = out / "corpus" / info.name
        folder.mkdir(parents=True, exist_ok=True)
        inputs = seed_inputs(info.protocol)[info.name]
        for data in inputs:
            (folder / hashlib.sha1(data).hexdigest()).write_bytes(data[:info.max_len])
        counts[info.name] = len(inputs)
    return counts


def _parse(info: TargetInfo, text: str, code: int | None, seconds: float) -> Outcome:
    engine = m[1] if (m := re.search(r"fuzz-engine: (\w+)", text)) else "?"
    if m := re.search(r"stat::number_of_executed_units: (\d+)", text):
        executions = int(m[1])
    elif runs := re.findall(r"^#(\d+)\s", text, re.M):
        executions = int(runs[-1])
    else:
        executions = 0
    crash = m[1] if (m := re.search(r"Test unit written to (\S+)", text)) else None
    detail = ""
    if crash or (code not in (0, None)):
        start = text.find("=== Uncaught Python exception: ===")
        error = re.search(r"^==\d*=*\s*ERROR: .*$", text, re.M)
        if start >= 0:
            detail = text[start:error.start() if error and error.start() > start else None].strip()
        elif error:
            tail = text[error.start():].splitlines()
            detail = "\n".join(tail[:20])
        else:
            detail = "\n".join(text.strip().splitlines()[-20:]) or f"worker exited {code}"
    if code is None:
        detail = f"the worker did not finish within {seconds + STARTUP_SLACK:.0f} s (killed)\n" + detail
    return Outcome(info.name, engine, executions, seconds, crash, detail)


def run_target(info: TargetInfo, seconds: int, out: Path, engine: str | None, timeout: int) -> Outcome:
    corpus = out / "corpus" / info.name
    artifacts = out / "artifacts" / info.name
    logs = out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "fuzz.worker", info.name, "--seconds", str(seconds), "--corpus", str(corpus),
           "--artifacts", str(artifacts), "--timeout", str(timeout)]
    if engine:
        cmd += ["--engine", engine]
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    started = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=seconds + STARTUP_SLACK)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the worker's own process group, by its handle
        output, _ = proc.communicate(timeout=10)
        code = None
    text = output.decode("utf-8", "replace")
    (logs / f"{info.name}.log").write_text(text)
    outcome = _parse(info, text, code, time.monotonic() - started)
    if outcome.crash:
        outcome.minimized = _minimize_in_subprocess(info.name, Path(outcome.crash), env)
    return outcome


def _minimize_in_subprocess(name: str, path: Path, env: dict[str, str]) -> bytes | None:
    cmd = [sys.executable, "-m", "fuzz", "minimize", name, str(path), "--seconds", str(MINIMIZE_SECONDS)]
    try:
        subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=MINIMIZE_SECONDS + 30, check=False)
    except subprocess.TimeoutExpired:
        return None
    minimized = path.with_name(path.name + ".min")
    return minimized.read_bytes() if minimized.exists() else None


# -- one input ---------------------------------------------------------------------------


class _Hang(BaseException):
    pass


def _signature(target, data: bytes, timeout: float) -> tuple | None:
    """How the input fails: (exception type, file, line) of the innermost frame; None if it does not."""

    def on_alarm(signum, frame):
        raise _Hang()

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        target(data)
    except allowed_errors():
        return None
    except _Hang:
        return ("hang",)
    except Exception as exc:  # noqa: BLE001 - every other exception is the finding
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        return (type(exc).__name__, frame.filename, frame.lineno)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return None


def minimize(name: str, data: bytes, seconds: float, timeout: float = 5.0) -> tuple[bytes, tuple | None]:
    """Delta debugging: drop ever smaller pieces while the input fails the same way."""
    target = load(name)
    wanted = _signature(target, data, timeout)
    if wanted is None:
        return data, None
    deadline = time.monotonic() + seconds
    size = max(1, len(data) // 2)
    while size >= 1 and time.monotonic() < deadline:
        pos, shrunk = 0, False
        while pos < len(data) and time.monotonic() < deadline:
            candidate = data[:pos] + data[pos + size:]
            if candidate and _signature(target, candidate, timeout) == wanted:
                data, shrunk = candidate, True
            else:
                pos += size
        if not shrunk:
            size //= 2
    # then make the remaining bytes simpler (0x00) where that keeps the failure
    for i in range(len(data)):
        if time.monotonic() >= deadline:
            break
        if data[i]:
            candidate = data[:i] + b"\x00" + data[i + 1:]
            if _signature(target, candidate, timeout) == wanted:
                data = candidate
    return data, wanted


def repro(name: str, data: bytes) -> int:
    target = load(name)
    try:
        target(data)
    except allowed_errors() as exc:
        print(f"allowed error (not a crash): {type(exc).__name__}: {exc}")
        return 0
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        return 1
    print("no crash")
    return 0


# -- command line ------------------------------------------------------------------------


def _report(outcome: Outcome) -> None:
    rate = outcome.executions / outcome.seconds if outcome.seconds else 0
    status = "ok" if outcome.ok else ("CRASH" if outcome.crash else "ERROR")
    print(f"{outcome.target:<26} {outcome.engine:<10} {outcome.executions:>10} execs {rate:>9.0f}/s  {status}",
          flush=True)
    if not outcome.ok:
        print("    " + outcome.detail.replace("\n", "\n    "))
        if outcome.crash:
            print(f"    input: {outcome.crash}")
        if outcome.minimized is not None:
            print(f"    minimised ({len(outcome.minimized)} bytes): {outcome.minimized.hex()}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fuzz", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p_seed = sub.add_parser("seed", help="write seed corpora from the vectors")
    p_seed.add_argument("selector", nargs="?", default="all")
    p_seed.add_argument("--out", type=Path, default=DEFAULT_OUT)
    p_run = sub.add_parser("run", help="fuzz targets for a time budget")
    p_run.add_argument("selector", help="all, a protocol or a target")
    p_run.add_argument("--seconds", type=int, default=60, help="budget per target")
    p_run.add_argument("--jobs", type=int, default=1, help="targets fuzzed at once")
    p_run.add_argument("--out", type=Path, default=DEFAULT_OUT)
    p_run.add_argument("--engine", choices=["atheris", "hypothesis"], default=None)
    p_run.add_argument("--timeout", type=int, default=10, help="seconds one input may run (longer: a hang)")
    p_repro = sub.add_parser("repro", help="run one input")
    p_repro.add_argument("target", choices=sorted(TARGETS))
    p_repro.add_argument("file", type=Path)
    p_min = sub.add_parser("minimize", help="shrink a crashing input")
    p_min.add_argument("target", choices=sorted(TARGETS))
    p_min.add_argument("file", type=Path)
    p_min.add_argument("--seconds", type=float, default=60)
    sub.add_parser("list", help="list the targets")
    args = parser.parse_args(argv)

    if args.command == "list":
        for info in targets_for("all"):
            print(info.name)
        return 0
    if args.command == "seed":
        for name, count in seed(args.selector, args.out).items():
            print(f"{name:<26} {count} seeds -> {args.out / 'corpus' / name}")
        return 0
    if args.command == "repro":
        return repro(args.target, args.file.read_bytes())
    if args.command == "minimize":
        data, signature = minimize(args.target, args.file.read_bytes(), args.seconds)
        if signature is None:
            print("the input does not crash")
            return 1
        args.file.with_name(args.file.name + ".min").write_bytes(data)
        print(f"{signature}: {len(data)} bytes: {data.hex()}")
        return 0
    infos = targets_for(args.selector)
    seed(args.selector, args.out)
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        futures = [pool.submit(run_target, info, args.seconds, args.out, args.engine, args.timeout) for info in infos]
        outcomes = []
        for future in futures:
            outcomes.append(future.result())
            _report(outcomes[-1])
    total = sum(o.executions for o in outcomes)
    bad = [o.target for o in outcomes if not o.ok]
    findings = f"{len(bad)} with findings" + (": " + ", ".join(bad) if bad else "")
    print(f"{len(outcomes)} targets, {total} executions, {findings}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
