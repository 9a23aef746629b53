"""Run one fuzz target in this process until its time budget is spent (``python -m fuzz`` starts it).

    python -m fuzz.worker TARGET --seconds N --corpus DIR --artifacts DIR [--engine atheris|hypothesis]

atheris (libFuzzer, coverage-guided; ``reference_impl`` is instrumented as
it is imported) is used when installed; otherwise a hypothesis-driven loop
that mutates the seed corpus.  Both print libFuzzer-style lines the parent
parses: ``stat::number_of_executed_units: N`` and, for a crash, ``Test unit
written to PATH`` after the traceback.  One input running longer than
``--timeout`` seconds is a crash too (a hang).
"""

from __future__ import annotations

import argparse
import hashlib
import signal
import sys
import time
import traceback
from pathlib import Path

from fuzz.targets import TARGETS, guarded

DEFAULT_TIMEOUT = 10  # seconds for one input
RSS_LIMIT_MB = 2048


def have_atheris() -> bool:
    try:
        import atheris  # noqa: F401  (only whether it imports)
    except ImportError:
        return False
    return True


def _write_crash(artifacts: Path, data: bytes, kind: str = "crash") -> Path:
    artifacts.mkdir(parents=True, exist_ok=True)
    path = artifacts / f"{kind}-{hashlib.sha1(data).hexdigest()}"
    path.write_bytes(data)
    return path


def run_atheris(name: str, seconds: int, corpus: Path, artifacts: Path, timeout: int) -> None:
    import atheris

    with atheris.instrument_imports(include=["reference_impl"]):
        one_input = guarded(name)
    artifacts.mkdir(parents=True, exist_ok=True)
    corpus.mkdir(parents=True, exist_ok=True)
    argv = [sys.argv[0], f"-max_total_time={seconds}", f"-timeout={timeout}", f"-rss_limit_mb={RSS_LIMIT_MB}",
            f"-max_len={TARGETS[name].max_len}", "-print_final_stats=1", f"-artifact_prefix={artifacts}/",
            str(corpus)]
    atheris.Setup(argv, one_input)
    atheris.Fuzz()  # exits the process


class _Hang(BaseException):
    """One input ran past the per-input timeout (BaseException: the target's own handlers must not eat it)."""


def run_hypothesis(name: str, seconds: int, corpus: Path, artifacts: Path, timeout: int) -> None:
    """Fallback without coverage guidance: mutated seeds and random bytes, shrunk by hypothesis on failure."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import strategies as st

    one_input = guarded(name)
    seeds = [p.read_bytes() for p in sorted(corpus.glob("*")) if p.is_file()] or [b""]
    max_len = TARGETS[name].max_len

    @st.composite
    def mutated(draw) -> bytes:
        data = bytearray(draw(st.sampled_from(seeds)))
        for _ in range(draw(st.integers(0, 4))):
            op = draw(st.integers(0, 3))
            pos = draw(st.integers(0, len(data)))
            if op == 0 and data and pos < len(data):
                data[pos] ^= 1 << draw(st.integers(0, 7))
            elif op == 1:
                data[pos:pos] = draw(st.binary(min_size=1, max_size=8))
            elif op == 2:
                del data[pos:pos + draw(st.integers(1, 8))]
            else:
                data[pos:pos] = draw(st.sampled_from(seeds))[:64]
        return bytes(data[:max_len])

    executions = 0
    failing: list[bytes] = []

    def on_alarm(signum, frame) -> None:
        raise _Hang()

    signal.signal(signal.SIGALRM, on_alarm)

    @settings(max_examples=500, deadline=None, database=None, suppress_health_check=list(HealthCheck),
              phases=[Phase.generate, Phase.shrink])
    @given(st.one_of(mutated(), st.binary(max_size=max_len)))
    def fuzz_once(data: bytes) -> None:
        nonlocal executions
        executions += 1
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            one_input(data)
        except BaseException:
            failing.append(data)
            raise
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)

    deadline = time.monotonic() + seconds
    crashed = None
    while time.monotonic() < deadline:
        try:
            fuzz_once()
        except BaseException as exc:  # noqa: BLE001 - every escape is a finding
            crashed = exc
            break
    print(f"stat::number_of_executed_units: {executions}", flush=True)
    if crashed is not None:
        kind = "timeout" if isinstance(crashed, _Hang) else "crash"
        print("=== Uncaught Python exception: ===", flush=True)
        traceback.print_exception(crashed, file=sys.stdout)
        path = _write_crash(artifacts, failing[-1] if failing else b"", kind)
        print(f"==ERROR: hypothesis engine: {kind}\nTest unit written to {path}", flush=True)
        sys.exit(1)
    print(f"Done {executions} runs in {seconds} second(s)", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m fuzz.worker")
    parser.add_argument("target", choices=sorted(TARGETS))
    parser.add_argument("--seconds", type=int, required=True)
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--artifacts", type=Path, required=True)
    parser.add_argument("--engine", choices=["atheris", "hypothesis"], default=None)
    parser.add_argument("--timeout", type=int, default=DEFAULT_TIMEOUT)
    args = parser.parse_args(argv)
    engine = args.engine or ("atheris" if have_atheris() else "hypothesis")
    print(f"fuzz-engine: {engine}", flush=True)
    run = run_atheris if engine == "atheris" else run_hypothesis
    run(args.target, args.seconds, args.corpus, args.artifacts, args.timeout)


if __name__ == "__main__":
    main()
