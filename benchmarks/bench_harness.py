"""The harness's own cost: per-case overhead and the STMP suite's wall time.

    .venv/bin/python benchmarks/bench_harness.py                   # per-case overhead (N = 300)
    .venv/bin/python benchmarks/bench_harness.py --cases 1000
    .venv/bin/python benchmarks/bench_harness.py --profile         # cProfile of the plugin-style loop
    .venv/bin/python benchmarks/bench_harness.py --suite           # also: conformance run stmp, wall time
    .venv/bin/python benchmarks/bench_harness.py --profile-case stmp/ack-wrap/client-id-wrap  # who spends its time

The trivial case is ``stmp/handshake/one-version`` (send the negotiation
request, expect the Ok) over TCP against the in-process reference server,
run N times three ways:

  bare     the same bytes with a plain asyncio client (no harness): the floor
           the target and the socket set;
  runner   ``CaseRunner.against_server`` N times in one event loop;
  plugin   as the pytest plugin runs a case: handed to the run's scheduler
           (one long-lived event loop in its own thread, ``CaseScheduler``) and its
           result waited for from pytest's thread, the reference server in its own
           loop thread (``RefTarget``).

  batch    as the plugin runs cases with --jobs: all handed to the scheduler at
           once (one slot, so one after another), results taken in order.

runner - bare is the harness's per-case overhead; plugin - runner is what
handing each case to the scheduler and back costs one at a time (before --jobs:
a new event loop per case, about 1.2 ms); batch - runner the same when the
cases are handed over together. Both also move the reference server into a
thread of its own (as the plugin runs it), so every read crosses threads; that
batch costs what one-at-a-time does says the cost is there, not in the handing over.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import io
import json
import pstats
import statistics
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from conformance.grading import Grade  # noqa: E402
from conformance.protocols import adapter_for  # noqa: E402
from conformance.scenario.loader import Case, load_file  # noqa: E402
from conformance.scenario.runner import CaseRunner  # noqa: E402
from conformance.scenario.schedule import CaseScheduler  # noqa: E402
from conformance.targets import RefTarget  # noqa: E402

CASE_ID = "stmp/handshake/one-version"


def trivial_case() -> Case:
    adapter = adapter_for("stmp")
    loaded = load_file(ROOT / "scenarios" / "stmp" / "handshake.yaml", adapter.frame_check)
    return next(c for c in loaded.cases if isinstance(c, Case) and c.id == CASE_ID)


def _params() -> dict[str, int]:
    adapter = adapter_for("stmp")
    return {**adapter.params, **adapter.ref_params}


async def _bare_once(port: int) -> None:
    from reference_impl.stmp import codec
    from reference_impl.stmp.codec import Encoding, Request
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(codec.encode_binary(Request(0, 0, Encoding.RAW, b"\x01"), with_ps=True))
    decoder = codec.StreamDecoder()
    while not decoder.feed(await asyncio.wait_for(reader.read(65536), 5)):
        pass
    writer.close()
    await writer.wait_closed()


def bench_bare(n: int) -> list[float]:
    async def main() -> list[float]:
        server = await adapter_for("stmp").start_reference("tcp", _params())
        times = []
        try:
            for _ in range(n):
                started = time.perf_counter()
                await _bare_once(server.port)
                times.append(time.perf_counter() - started)
        finally:
            await server.close()
        return times
    return asyncio.run(main())


def bench_runner(n: int) -> list[float]:
    case, adapter, params = trivial_case(), adapter_for("stmp"), _params()

    async def main() -> list[float]:
        server = await adapter.start_reference("tcp", params)
        times = []
        try:
            for _ in range(n):
                started = time.perf_counter()
                result = await CaseRunner(case, adapter, "tcp", params).against_server(server.url)
                times.append(time.perf_counter() - started)
                assert result.grade is Grade.PASSED, result.message
        finally:
            await server.close()
        return times
    return asyncio.run(main())


@contextlib.contextmanager
def _scheduled_cases():
    """A function that hands one trivial case to a one-slot scheduler (the plugin's way, the
    reference server in its own thread) and returns its future; scheduler and server stopped after."""
    case, adapter = trivial_case(), adapter_for("stmp")
    target = RefTarget()
    scheduler = CaseScheduler(1)
    try:
        url, params = target.endpoint("stmp", "tcp"), target.params("stmp")
        yield lambda: scheduler.submit(CASE_ID, None, partial(CaseRunner(case, adapter, "tcp", params).against_server, url))
    finally:
        scheduler.close()
        target.close()


def bench_plugin(n: int, profile: cProfile.Profile | None = None) -> list[float]:
    with _scheduled_cases() as submit:
        times = []
        if profile is not None:
            profile.enable()
        for _ in range(n):
            started = time.perf_counter()
            result = submit().result()
            times.append(time.perf_counter() - started)
            assert result.grade is Grade.PASSED, result.message
        if profile is not None:
            profile.disable()
        return times


def bench_batch(n: int) -> list[float]:
    """The n cases handed to the scheduler at once, as the plugin does with --jobs above 1 (one slot
    here, so they still run one after another): the time between consecutive results."""
    with _scheduled_cases() as submit:
        last = time.perf_counter()
        futures = [submit() for _ in range(n)]
        times = []
        for future in futures:
            result = future.result()
            now = time.perf_counter()
            times.append(now - last)
            last = now
            assert result.grade is Grade.PASSED, result.message
        return times


def _ms(times: list[float]) -> str:
    ordered = sorted(times)
    p95 = ordered[int(len(ordered) * 0.95) - 1]
    return (f"mean {statistics.mean(times) * 1000:6.2f} ms  median {statistics.median(times) * 1000:6.2f} ms  "
            f"p95 {p95 * 1000:6.2f} ms")


def per_case(n: int) -> dict[str, float]:
    bench_plugin(20)  # warm-up: imports, the first server start
    rows = {"bare": bench_bare(n), "runner": bench_runner(n), "plugin": bench_plugin(n), "batch": bench_batch(n)}
    print(f"per-case cost of {CASE_ID} over TCP against the in-process reference, N={n}:")
    for name, times in rows.items():
        print(f"  {name:<7} {_ms(times)}")
    means = {name: statistics.mean(times) * 1000 for name, times in rows.items()}
    print(f"  harness overhead (runner - bare): {means['runner'] - means['bare']:.2f} ms/case; "
          f"handing a case to the scheduler and back (plugin - runner): {means['plugin'] - means['runner']:.2f} ms/case; "
          f"the same in a batch, as with --jobs (batch - runner): {means['batch'] - means['runner']:.2f} ms/case")
    return means


def profile(n: int) -> None:
    prof = cProfile.Profile()
    bench_plugin(n, prof)
    for order in ("tottime", "cumulative"):
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats(order).print_stats(25)
        print(f"--- cProfile of {n} plugin-style cases, by {order} ---")
        print("\n".join(out.getvalue().splitlines()[4:40]))


def find_case(case_id: str) -> Case:
    protocol = case_id.split("/")[0]
    adapter = adapter_for(protocol)
    for path in sorted((ROOT / "scenarios" / protocol).glob("*.yaml")):
        for case in load_file(path, adapter.frame_check).cases:
            if isinstance(case, Case) and case.id == case_id:
                return case
    raise SystemExit(f"no case {case_id!r}")


def run_case(case: Case, transport: str, target: RefTarget) -> tuple[Grade, float]:
    """One case as the plugin runs it (either role); its grade and wall time."""
    adapter = adapter_for(case.protocol)
    runner = CaseRunner(case, adapter, transport, target.params(case.protocol))
    started = time.perf_counter()
    if case.role == "client":
        result = asyncio.run(runner.against_client(target.client_launcher(case.protocol)))
    else:
        result = asyncio.run(runner.against_server(target.endpoint(case.protocol, transport)))
    return result.grade, time.perf_counter() - started


def profile_case(case_id: str, transport: str) -> None:
    """cProfile of one case; time split by who spends it (harness, reference implementation, asyncio, other)."""
    case = find_case(case_id)
    target = RefTarget()
    prof = cProfile.Profile()
    try:
        target.endpoint(case.protocol, transport) if case.role != "client" else None
        prof.enable()
        grade, wall = run_case(case, transport, target)
        prof.disable()
    finally:
        target.close()
    stats = pstats.Stats(prof)
    owners: dict[str, float] = {}
    for (filename, _, _), (_, _, tottime, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        owner = ("harness (conformance/)" if "/conformance/" in filename else
                 "reference_impl/" if "/reference_impl/" in filename else
                 "asyncio" if "/asyncio/" in filename else "other (stdlib, C calls)")
        owners[owner] = owners.get(owner, 0.0) + tottime
    total = sum(owners.values())
    print(f"{case_id} [{transport}]: {grade.value} in {wall:.2f} s (under cProfile); own time by owner:")
    for owner, seconds in sorted(owners.items(), key=lambda kv: -kv[1]):
        print(f"  {owner:<26} {seconds:7.2f} s  {seconds / total:6.1%}")
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(30)
    print("\n".join(out.getvalue().splitlines()[4:42]))


def suite(out: Path) -> None:
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "conformance.cli", "run", "stmp", "--out", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=1800, check=False)
    wall = time.perf_counter() - started
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines() if line.strip()]
    in_cases = sum(r["durationMs"] for r in records) / 1000
    grades: dict[str, int] = {}
    for r in records:
        grades[r["grade"]] = grades.get(r["grade"], 0) + 1
    print(f"conformance run stmp: exit {proc.returncode}, wall {wall:.1f} s, {len(records)} cases "
          f"({', '.join(f'{g} {c}' for g, c in sorted(grades.items()))}); time inside cases {in_cases:.1f} s, "
          f"outside (start-up, collection, reports) {wall - in_cases:.1f} s")
    for r in sorted(records, key=lambda r: -r["durationMs"])[:8]:
        print(f"  {r['durationMs'] / 1000:6.2f} s  {r['case']} [{r['transport']}]")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--suite", action="store_true")
    parser.add_argument("--profile-case", metavar="CASE_ID",
                        help="cProfile one case, e.g. stmp/ack-wrap/client-id-wrap")
    parser.add_argument("--transport", default="tcp")
    parser.add_argument("--out", type=Path, default=ROOT / "out" / "bench" / "stmp-suite")
    args = parser.parse_args()
    if args.profile_case:
        profile_case(args.profile_case, args.transport)
        return
    per_case(args.cases)
    if args.profile:
        profile(args.cases)
    if args.suite:
        suite(args.out)


if __name__ == "__main__":
    main()
