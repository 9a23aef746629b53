"""Whole-suite wall time per protocol, the docker target beside the in-process one, and where the time goes.

    .venv/bin/python benchmarks/bench_suites.py                          # all five suites against ref, once
    .venv/bin/python benchmarks/bench_suites.py --protocols stmp rsio --runs 3
    .venv/bin/python benchmarks/bench_suites.py --docker                 # and docker:conformance-ref-<p>:latest
    .venv/bin/python benchmarks/bench_suites.py --profile mtl            # cProfile (every thread) of one suite run
    .venv/bin/python benchmarks/bench_suites.py --markdown               # tables as markdown
    .venv/bin/python benchmarks/bench_suites.py --jobs-table --markdown  # serial beside --jobs auto, each and all

``--jobs-table`` runs each protocol serially (``--jobs 1``) and with ``--jobs auto``, then all
of them together both ways, and prints per protocol and for all: the two walls, the designed waits
(the silence and sleep the scenarios ask for, summed over the cases), the longest single case
(from the serial run: the floor of a concurrent run), the ratios wall / longest case and wall /
designed waits of the concurrent run, and whether both runs graded every case alike. A run's
wall includes about a second of fixed cost (start-up, collection, reports); the case wall (first
case start to last case end, from ``--schedule-log``) leaves it out, and both ratios to the longest
case are printed, with the fixed cost and the run's CPU time (user + sys) beside them.

Each run is ``python -m conformance.cli run P --target T --out OUT`` in a
subprocess, timed from outside; its records give the cases, the grades and
the time inside each case (``durationMs``: the case's exchange, from its
first connect to its grade).  Wall minus time inside cases is start-up,
collection, the target's start (for docker: the 127 check and the container
start) and the reports.

Why a case is slow is read from its scenario, statically: the silence and
sleep it asks for (``expect_silence``, ``sleep_ms``, through repeats and
macros), the target timers its deadlines name (``within_ms:
heartbeat_timeout_ms + 3000`` waits for the target's own timer), the fault
proxy it runs through, its volume (frames expected), or the client role (the
target's client runs the case; with docker, a container per case).

``--docker`` runs, interleaved with the ref runs, the reference image of each
protocol, with the timers the image declares in its labels (as ``conformance
matrix`` does): those are the CLI defaults (5 s heartbeats and so on), longer
than the in-process reference's short test timers, so cases that wait on a
timer wait longer by design.  The ratio is therefore given three ways: wall,
time inside cases, and time inside the cases that do not depend on a timer
(same steps, same waits on both targets: the like-for-like figure).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import resource
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _protocols() -> tuple[str, ...]:
    from conformance.protocols import available
    return tuple(available())


PROTOCOLS = _protocols()  # every protocol of this build, also one added later


# -- what a case waits for, read from its scenario ----------------------------------------------

@dataclass
class CaseShape:
    role: str = "server"
    client_testcase: str | None = None
    fixed_wait_ms: float = 0.0  # expect_silence + sleep_ms, with the run's params
    wait_params: set[str] = field(default_factory=set)  # params a silence or a sleep names (e.g. silence_ms)
    timers: set[str] = field(default_factory=set)  # the target's timers a deadline names (e.g. heartbeat_timeout_ms)
    expects: int = 0
    sends: int = 0
    fault: dict[str, Any] | None = None

    @property
    def timer_bound(self) -> bool:
        """Its duration depends on the target's timers (they differ between ref and a docker image)."""
        return bool(self.timers)

    def reason(self, duration_ms: float) -> str:
        parts = []
        if self.role == "client":
            parts.append(f"client role: the target's client runs {self.client_testcase!r}")
        if self.fixed_wait_ms >= 0.2 * max(duration_ms, 1):
            named = f" ({', '.join(sorted(self.wait_params))})" if self.wait_params else ""
            parts.append(f"waits by design: {self.fixed_wait_ms / 1000:.1f} s of expect_silence/sleep/keep_alive{named}")
        if self.timers:
            parts.append("waits on the target's timer (" + ", ".join(sorted(self.timers)) + ")")
        if self.fault:
            parts.append("through the fault proxy (" + ", ".join(f"{k} {v}" for k, v in self.fault.items()) + ")")
        if self.expects + self.sends >= 200:
            parts.append(f"volume: {self.expects:,} frames expected, {self.sends:,} sent")
        return "; ".join(parts) or "work (no designed wait)"


#: Parameters that are the target's own timers: a deadline naming one waits for the target's timer to fire.
#: (Others, like rsio's reply_ms, only bound how long the suite waits for a prompt reply.)
TIMER_WORDS = ("heartbeat", "timeout", "redeliver", "interval", "ttl")


def _millis(value: Any, params: dict[str, int], into: set[str] | None) -> float:
    """A step's milliseconds with these params; the parameter it names goes ``into`` the set given."""
    from conformance.scenario.values import millis
    if isinstance(value, str) and not value.startswith("=") and into is not None:
        name = value.partition("+")[0].strip()
        if into is not None and (name in params and not name[0].isdigit()):
            into.add(name)
    try:
        return float(millis(value, params))
    except Exception:  # "= expr" inside a repeat, or an unknown name: not a fixed wait we can count
        return 0.0


def _walk(steps: list[dict[str, Any]], macros: dict, params: dict[str, int], shape: CaseShape, times: int,
          depth: int = 0) -> None:
    for step in steps:
        if "expect_silence" in step:
            shape.fixed_wait_ms += times * _millis(step["expect_silence"].get("for_ms", 0), params, shape.wait_params)
        elif "sleep_ms" in step:
            shape.fixed_wait_ms += times * _millis(step["sleep_ms"], params, shape.wait_params)
        elif "keep_alive" in step:  # the target must stay open and silent for the whole window
            shape.fixed_wait_ms += times * _millis(step["keep_alive"].get("for_ms", 0), params, shape.wait_params)
        elif "expect" in step or "expect_close" in step:
            spec = step.get("expect") or step.get("expect_close") or {}
            named: set[str] = set()
            if "within_ms" in spec:
                _millis(spec["within_ms"], params, named)
            shape.timers |= {n for n in named if any(w in n for w in TIMER_WORDS)}
            shape.expects += times if "expect" in step else 0
        elif "send" in step:
            shape.sends += times
        elif "macro" in step and depth < 4 and step["macro"] in macros:
            _walk(macros[step["macro"]], macros, params, shape, times, depth + 1)
        elif "repeat" in step:
            _walk(step["repeat"]["steps"], macros, params, shape, times * int(step["repeat"]["count"]), depth)


def case_shapes(protocol: str, params: dict[str, int]) -> dict[str, CaseShape]:
    from conformance.protocols import adapter_for
    from conformance.scenario.loader import Case, load_file
    adapter = adapter_for(protocol)
    shapes = {}
    for path in sorted((ROOT / "scenarios" / protocol).glob("*.yaml")):
        for case in load_file(path, adapter.frame_check).cases:
            if isinstance(case, Case):
                shape = CaseShape(case.role, case.client_testcase, fault=case.fault)
                _walk(case.steps, adapter.macros, params, shape, 1)
                shapes[case.id] = shape
    return shapes


# -- one suite run -------------------------------------------------------------------------------

_SHAPES: dict[tuple, dict[str, CaseShape]] = {}


@dataclass
class SuiteRun:
    protocol: str
    target: str
    code: int
    wall: float
    records: list[dict[str, Any]]
    load: str
    params: dict[str, int]
    cpu: float = 0.0  # user + sys of the run's process (and its children), seconds
    spans: list[dict[str, Any]] = field(default_factory=list)  # --schedule-log: when each case ran

    @property
    def case_wall(self) -> float | None:
        """From the first case's start to the last one's end (the scheduler's spans): the run without
        its fixed cost (interpreter and plugin start-up, collection, reports)."""
        if not self.spans:
            return None
        return max(s["end"] for s in self.spans) - min(s["start"] for s in self.spans)

    @property
    def in_cases(self) -> float:
        return sum(r["durationMs"] for r in self.records) / 1000

    @property
    def grades(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for r in self.records:
            counts[r["grade"]] = counts.get(r["grade"], 0) + 1
        return counts

    def shapes(self) -> dict[str, CaseShape]:
        key = (self.protocol, tuple(sorted(self.params.items())))
        if key not in _SHAPES:
            _SHAPES[key] = {}
            for protocol in self.protocol.split():  # a run of several protocols: each with its own params
                params = self.params if len(self.protocol.split()) == 1 else ref_params(protocol)
                _SHAPES[key].update(case_shapes(protocol, params))
        return _SHAPES[key]

    def fixed_waits(self) -> float:
        shapes = self.shapes()
        return sum(min(shapes[r["case"]].fixed_wait_ms, r["durationMs"]) for r in self.records
                   if r["case"] in shapes) / 1000

    def in_cases_where(self, keep, minus_waits: bool = False) -> float:
        """Seconds inside the cases whose shape ``keep`` accepts; less their designed waits if asked."""
        shapes = self.shapes()
        return sum(r["durationMs"] - (min(shapes[r["case"]].fixed_wait_ms, r["durationMs"]) if minus_waits else 0)
                   for r in self.records if r["case"] in shapes and keep(shapes[r["case"]])) / 1000


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def ref_params(protocol: str) -> dict[str, int]:
    from conformance.protocols import adapter_for
    adapter = adapter_for(protocol)
    return {**adapter.params, **adapter.ref_params}


def run_suite(protocol: str, target: str, out: Path, params: dict[str, int] | None = None,
              impl_name: str | None = None, timeout: float = 1800, tree: Path = ROOT,
              extra: list[str] | None = None, keyword: str | None = None, jobs: str | None = None,
              spans: bool = False) -> SuiteRun:
    out.mkdir(parents=True, exist_ok=True)
    records_file, spans_file = out / "records.jsonl", out / "spans.jsonl"
    for old in (records_file, spans_file):
        if old.exists():
            old.unlink()
    if spans:
        extra = [*(extra or []), f"--schedule-log={spans_file}"]
    command = [sys.executable, "-m", "conformance.cli", "run", *protocol.split(), "--target", target, "--out", str(out)]
    for key, value in sorted((params or {}).items()):
        command += ["--param", f"{key}={value}"]
    if impl_name:
        command += ["--impl-name", impl_name]
    if keyword:
        command += ["-k", keyword]
    if jobs:
        command += ["--jobs", jobs]
    if extra:
        command += ["--", *extra]
    load = load_average()
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    with (out / "run.log").open("w") as log:
        proc = subprocess.run(command, cwd=tree, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                              timeout=timeout, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - used.ru_utime) + (after.ru_stime - used.ru_stime)
    records = ([json.loads(line) for line in records_file.read_text().splitlines() if line.strip()]
               if records_file.exists() else [])
    first = protocol.split()[0]
    effective = {**(ref_params(first) if target == "ref" else _defaults(first)), **(params or {})}
    spans_of = ([json.loads(line) for line in spans_file.read_text().splitlines() if line.strip()]
                if spans_file.exists() else [])
    return SuiteRun(protocol, target, proc.returncode, wall, records, f"{load} -> {load_average()}", effective,
                    cpu, spans_of)


def _defaults(protocol: str) -> dict[str, int]:
    from conformance.protocols import adapter_for
    return dict(adapter_for(protocol).params)


def docker_image(protocol: str) -> tuple[str, dict[str, int]]:
    """The reference image of a protocol and the timers it declares (as `conformance matrix` passes them)."""
    from conformance.images.engine import docker_client
    from conformance.images.implementations import explicit, suite_params
    client = docker_client()
    try:
        impl = explicit(client, f"conformance-ref-{protocol}:latest")
    finally:
        client.close()
    return impl.image, suite_params(impl, protocol)


# -- reports ----------------------------------------------------------------------------------------

def _grades(run: SuiteRun) -> str:
    return ", ".join(f"{g} {c}" for g, c in sorted(run.grades.items()))


def report_runs(runs: list[SuiteRun], top: int, markdown: bool) -> None:
    by_protocol: dict[str, list[SuiteRun]] = {}
    for run in runs:
        by_protocol.setdefault(run.protocol, []).append(run)
    if markdown:
        print("| protocol | cases | grades | wall | time inside cases | outside cases | designed waits inside | "
              "inside minus designed waits | load avg (1 min, before -> after) |")
        print("|---|---:|---|---:|---:|---:|---:|---:|---|")
    for protocol, prs in by_protocol.items():
        walls = [r.wall for r in prs]
        ins = [r.in_cases for r in prs]
        waits = [r.fixed_waits() for r in prs]
        last = prs[-1]
        span = (lambda xs: f"{min(xs):.1f} s" if len(xs) == 1 else f"{min(xs):.1f} to {max(xs):.1f} s")
        if markdown:
            print(f"| {protocol} | {len(last.records)} | {_grades(last)} | {span(walls)} | {span(ins)} | "
                  f"{span([w - i for w, i in zip(walls, ins)])} | {span(waits)} | "
                  f"{span([i - w for i, w in zip(ins, waits)])} | {'; '.join(r.load for r in prs)} |")
        else:
            print(f"{protocol} against {last.target}: {len(prs)} run(s), exit {','.join(str(r.code) for r in prs)}, "
                  f"{len(last.records)} cases ({_grades(last)})")
            outside = span([w - i for w, i in zip(walls, ins)])
            print(f"  wall {span(walls)}; inside cases {span(ins)}; outside {outside}; "
                  f"designed waits (silence/sleep) inside cases {span(waits)}; load {'; '.join(r.load for r in prs)}")
    for protocol, prs in by_protocol.items():
        print()
        slowest_cases(prs, top, markdown)


def slowest_cases(prs: list[SuiteRun], top: int, markdown: bool) -> None:
    shapes = prs[-1].shapes()
    durations: dict[tuple[str, str], list[float]] = {}
    for run in prs:
        for r in run.records:
            durations.setdefault((r["case"], r["transport"]), []).append(r["durationMs"])
    ranked = sorted(durations.items(), key=lambda kv: -statistics.median(kv[1]))
    total = statistics.median([run.in_cases for run in prs])
    rest = sum(statistics.median(v) for _, v in ranked[top:]) / 1000
    title = f"{prs[-1].protocol} against {prs[-1].target}: the {top} slowest cases (median of {len(prs)} run(s))"
    if markdown:
        print(f"{title}\n\n| case | time | why |\n|---|---:|---|")
    else:
        print(title)
    for (case, transport), values in ranked[:top]:
        median = statistics.median(values)
        span = (f"{min(values) / 1000:.2f} to {max(values) / 1000:.2f} s" if len(values) > 1
                else f"{median / 1000:.2f} s")
        why = shapes[case].reason(median) if case in shapes else "?"
        if markdown:
            print(f"| `{case}` [{transport}] | {span} | {why} |")
        else:
            print(f"  {span:>18}  {case} [{transport}]: {why}")
    line = f"the other {len(ranked) - top} cases together: {rest:.1f} s (of {total:.1f} s inside cases)"
    print(f"| the other {len(ranked) - top} cases together | {rest:.1f} s | |" if markdown else f"  {line}")


def report_docker(pairs: list[tuple[SuiteRun, SuiteRun]], markdown: bool) -> None:
    """ref beside docker, per protocol; medians over the runs."""
    by_protocol: dict[str, list[tuple[SuiteRun, SuiteRun]]] = {}
    for ref, dock in pairs:
        by_protocol.setdefault(ref.protocol, []).append((ref, dock))
    header = ("protocol", "ref wall", "docker wall", "ratio docker/ref", "ref inside cases", "docker inside cases",
              "ratio", "docker outside cases", "server cases without timer waits, less designed waits: ref",
              "docker", "ratio", "client-role cases: ref", "docker", "grades ref / docker", "load avg")
    if markdown:
        print("| " + " | ".join(header) + " |")
        print("|---|" + "---:|" * (len(header) - 3) + "---|---|")

    def free(shape: CaseShape) -> bool:
        return shape.role == "server" and not shape.timer_bound

    for protocol, prs in by_protocol.items():
        med = (lambda f: statistics.median([f(r) for r in prs]))
        ref_wall, dock_wall = med(lambda p: p[0].wall), med(lambda p: p[1].wall)
        ref_in, dock_in = med(lambda p: p[0].in_cases), med(lambda p: p[1].in_cases)
        ref_free = med(lambda p: p[0].in_cases_where(free, minus_waits=True))
        dock_free = med(lambda p: p[1].in_cases_where(free, minus_waits=True))
        ref_cli = med(lambda p: p[0].in_cases_where(lambda s: s.role == "client"))
        dock_cli = med(lambda p: p[1].in_cases_where(lambda s: s.role == "client"))
        ratio = (lambda a, b: f"{b / a:.2f}" if a else "-")
        row = (protocol, f"{ref_wall:.1f} s", f"{dock_wall:.1f} s", ratio(ref_wall, dock_wall), f"{ref_in:.1f} s",
               f"{dock_in:.1f} s", ratio(ref_in, dock_in), f"{dock_wall - dock_in:.1f} s", f"{ref_free:.2f} s",
               f"{dock_free:.2f} s", ratio(ref_free, dock_free), f"{ref_cli:.2f} s", f"{dock_cli:.2f} s",
               f"{_grades(prs[-1][0])} / {_grades(prs[-1][1])}", "; ".join(d.load for _, d in prs))
        if markdown:
            print("| " + " | ".join(row) + " |")
        else:
            print(f"{protocol}:")
            for label, value in zip(header[1:], row[1:]):
                print(f"  {label:<62} {value}")


# -- serial beside --jobs auto ----------------------------------------------------------------------

def _median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def jobs_table(protocols: list[str], runs: int, out: Path, markdown: bool) -> None:
    """Per protocol and for all: serial wall, --jobs auto wall, designed waits, the longest case, ratios.

    A run's wall includes a fixed cost (start-up, collection, reports: about a second) that a short
    suite cannot hide; the case wall (first case start to last case end, from the scheduler's spans)
    leaves it out, so both ratios to the longest case are printed, and the fixed cost beside them;
    and the wall of a run of the longest case alone (`-k` that case, start-up and reports included),
    the floor a user of `conformance run` can meet, with the whole run's wall over it."""
    serial: dict[str, list[SuiteRun]] = {}
    auto: dict[str, list[SuiteRun]] = {}
    runs_of = [(p, p) for p in protocols] + ([("all", " ".join(protocols))] if len(protocols) > 1 else [])
    for n in range(runs):
        for name, label in runs_of:
            for jobs, into in (("1", serial), ("auto", auto)):
                run = run_suite(label, "ref", out / "jobs" / name / f"jobs-{jobs}" / f"run-{n}", jobs=jobs, spans=True)
                into.setdefault(name, []).append(run)
                print(f"[run {n + 1}/{runs}] {name} --jobs {jobs}: {run.wall:.1f} s wall, {run.cpu:.1f} s CPU, "
                      f"{len(run.records)} results, exit {run.code}, load {run.load}", flush=True)
    header = ("protocol", "results", "serial wall", "--jobs auto wall", "speed-up", "designed waits",
              "longest case", "auto case wall", "fixed cost (auto wall - case wall)", "auto wall / longest case",
              "auto case wall / longest case", "longest case alone (process wall)", "auto wall / longest case alone",
              "auto wall / designed waits", "auto CPU (user+sys)", "same grades",
              "load (1 min, before -> after)")
    if markdown:
        print("\n| " + " | ".join(header) + " |\n|---|" + "---:|" * 14 + "---|---|")
    else:
        print()
    waits_of: dict[str, float] = {}
    longest_of: dict[str, tuple[float, str]] = {}
    for protocol in protocols:
        waits_of[protocol] = _median([r.fixed_waits() for r in serial[protocol]])
        longest = max(((r["durationMs"] / 1000, f"{r['case']} [{r['transport']}]")
                       for run in serial[protocol] for r in run.records), default=(0.0, "-"))
        longest_of[protocol] = longest
    waits_of["all"] = sum(waits_of[p] for p in protocols)
    longest_of["all"] = max(longest_of[p] for p in protocols)
    # the floor as a user meets it: `conformance run P -k <the longest case>` alone, start-up and
    # reports included (on each transport the case has, at once), beside the whole run's wall
    alone_of: dict[str, float] = {}
    for protocol in protocols:
        case = longest_of[protocol][1].split(" [")[0]
        alone = [run_suite(protocol, "ref", out / "jobs" / protocol / "alone" / f"run-{n}", keyword=case, jobs="auto")
                 for n in range(runs)]
        alone_of[protocol] = _median([r.wall for r in alone])
        print(f"{protocol}: the longest case alone ({case}): {alone_of[protocol]:.1f} s wall", file=sys.stderr, flush=True)
    alone_of["all"] = max(alone_of[p] for p in protocols)
    for name, _ in runs_of:
        s_wall, a_wall = _median([r.wall for r in serial[name]]), _median([r.wall for r in auto[name]])
        case_walls = [r.case_wall for r in auto[name] if r.case_wall is not None]
        a_cases = _median(case_walls) if case_walls else None
        a_cpu = _median([r.cpu for r in auto[name]])
        waits, (longest, longest_case) = waits_of[name], longest_of[name]
        same = all(_grades_by_case(a) == _grades_by_case(b) for a in serial[name] for b in auto[name])
        row = (name, str(len(serial[name][-1].records)), f"{s_wall:.1f} s", f"{a_wall:.1f} s",
               f"{s_wall / a_wall:.1f}x" if a_wall else "-", f"{waits:.1f} s", f"{longest:.1f} s ({longest_case})",
               f"{a_cases:.1f} s" if a_cases is not None else "-",
               f"{a_wall - a_cases:.1f} s" if a_cases is not None else "-",
               f"{a_wall / longest:.2f}" if longest else "-",
               f"{a_cases / longest:.2f}" if longest and a_cases is not None else "-",
               f"{alone_of[name]:.1f} s", f"{a_wall / alone_of[name]:.2f}" if alone_of[name] else "-",
               f"{a_wall / waits:.2f}" if waits else "-", f"{a_cpu:.1f} s",
               "yes" if same else "NO", "; ".join(r.load for r in auto[name]))
        if markdown:
            print("| " + " | ".join(row) + " |")
        else:
            print(f"{name}:")
            for label, value in zip(header[1:], row[1:]):
                print(f"  {label:<36} {value}")


def _grades_by_case(run: SuiteRun) -> dict[tuple[str, str], str]:
    return {(r["case"], r["transport"]): r["grade"] for r in run.records}


# -- cProfile of a whole run, every thread ---------------------------------------------------------

_WAITS = ("poll' of 'select.epoll", "select.select", "time.sleep", "acquire' of '_thread.lock",
          "acquire' of '_thread.RLock", "'control' of 'select.kqueue")


def owner_of(filename: str, name: str) -> str:
    if filename == "~":
        return "waiting" if any(w in name for w in _WAITS) else "C"
    if "/conformance/protocols/" in filename:
        return "harness: conformance/protocols/"
    if "/conformance/" in filename:
        return "harness: conformance/ (core)"
    if "/reference_impl/" in filename:
        return "reference_impl/ (the target)"
    if "/asyncio/" in filename:
        return "asyncio"
    if any(p in filename for p in ("/_pytest/", "/pluggy/", "/allure", "/pytest")):
        return "pytest, pluggy, allure"
    if any(p in filename for p in ("/yaml/", "/jsonschema", "/referencing/", "/rpds")):
        return "yaml, jsonschema (loading scenarios)"
    return "other Python (stdlib, libraries)"


def owners(stats: pstats.Stats) -> dict[str, float]:
    """Own time by owner; a C function's time goes to the owners of its callers (in proportion), waits apart."""
    table: dict[tuple, tuple] = stats.stats  # type: ignore[attr-defined]
    result: dict[str, float] = {}
    for (filename, _, name), (_, _, tottime, _, callers) in table.items():
        owner = owner_of(filename, name)
        if owner != "C":
            result[owner] = result.get(owner, 0.0) + tottime
            continue
        caller_time = {c: v[2] for c, v in callers.items()}
        total = sum(caller_time.values())
        if not total:
            result["C, no caller"] = result.get("C, no caller", 0.0) + tottime
            continue
        for caller, t in caller_time.items():
            o = owner_of(caller[0], caller[2])
            o = "other Python (stdlib, libraries)" if o in ("C", "waiting") else o
            result[o] = result.get(o, 0.0) + tottime * t / total
    return result


class ThreadProfiles:
    """cProfile in the calling thread and in every thread started while it is on."""

    def __init__(self) -> None:
        self.profiles: dict[str, cProfile.Profile] = {}
        self._lock = threading.Lock()

    def _start_in_thread(self, *_: Any) -> None:
        sys.setprofile(None)
        prof = cProfile.Profile()
        with self._lock:
            self.profiles[f"{threading.current_thread().name} ({len(self.profiles)})"] = prof
        prof.enable()

    def __enter__(self) -> ThreadProfiles:
        threading.setprofile(self._start_in_thread)
        main = cProfile.Profile()
        self.profiles["main thread"] = main
        main.enable()
        return self

    def __exit__(self, *_: Any) -> None:
        self.profiles["main thread"].disable()
        threading.setprofile(None)  # type: ignore[arg-type]


def profile_suite(protocol: str, out: Path, keyword: str | None, top: int) -> None:
    from conformance.cli import main as cli_main
    argv = ["run", protocol, "--out", str(out)] + (["-k", keyword] if keyword else [])
    started = time.perf_counter()
    load = load_average()
    with ThreadProfiles() as profiles:
        code = cli_main(argv)
    wall = time.perf_counter() - started
    print(f"\nconformance run {protocol} under cProfile (every thread): exit {code}, wall {wall:.1f} s, load {load}")
    combined = None
    for name, prof in profiles.profiles.items():
        try:
            stats = pstats.Stats(prof)
        except TypeError:  # a thread that profiled nothing
            continue
        split = owners(stats)
        busy = sum(v for k, v in split.items() if k != "waiting")
        print(f"  {name}: busy {busy:.2f} s, waiting {split.get('waiting', 0.0):.2f} s")
        for owner, seconds in sorted(split.items(), key=lambda kv: -kv[1]):
            if owner != "waiting" and seconds >= 0.005:
                print(f"    {owner:<40} {seconds:7.2f} s  {seconds / busy:6.1%}")
        combined = stats if combined is None else combined.add(stats)
    assert combined is not None
    table = combined.stats  # type: ignore[attr-defined]
    print("\n  harness functions (conformance/), by own time, all threads:")
    rows = [(k, v) for k, v in table.items() if "/conformance/" in k[0]]
    for (filename, line, name), (_, calls, tottime, cumtime, _) in sorted(rows, key=lambda kv: -kv[1][2])[:top]:
        where = filename.split("/conformance/", 1)[1]
        print(f"    {tottime:7.2f} s own {cumtime:7.2f} s cum {calls:>9,} calls  conformance/{where}:{line} {name}")
    out_text = io.StringIO()
    combined.stream = out_text  # type: ignore[attr-defined]
    combined.sort_stats("tottime").print_stats(top)
    print("\n  every function, by own time (all threads):")
    print("\n".join("    " + line for line in out_text.getvalue().splitlines()[6:6 + top + 3]))


# -- two trees, interleaved: before and after a change -----------------------------------------------

def compare_trees(trees: list[Path], protocols: list[str], runs: int, out: Path, cases: list[str],
                  extra: list[str]) -> None:
    """The same suites from copies of the checkout (``python -m conformance.cli`` run with each copy as
    its working directory imports that copy's conformance/), run in turn, so load drifts hit both."""
    results: dict[tuple[str, str], list[SuiteRun]] = {}
    labels = [f"{i}:{t.name}" for i, t in enumerate(trees)]
    for n in range(runs):
        for protocol in protocols:
            for label, tree in zip(labels, trees):
                run = run_suite(protocol, "ref", out / "compare" / label.replace(":", "-") / protocol / f"run-{n}",
                                tree=tree, extra=extra)
                results.setdefault((protocol, label), []).append(run)
                print(f"[run {n + 1}/{runs}] {protocol} {label}: wall {run.wall:.1f} s, inside cases "
                      f"{run.in_cases:.1f} s, exit {run.code}, load {run.load}", flush=True)
    print()
    for protocol in protocols:
        for label in labels:
            rs = results[(protocol, label)]
            picked = ""
            for case in cases:
                values = [r["durationMs"] / 1000 for run in rs for r in run.records if r["case"] == case]
                if values:
                    picked += f"; {case.rsplit('/', 1)[-1]} {min(values):.2f} to {max(values):.2f} s"
            print(f"{protocol} {label}: wall {min(r.wall for r in rs):.1f} to {max(r.wall for r in rs):.1f} s; "
                  f"inside cases {min(r.in_cases for r in rs):.1f} to {max(r.in_cases for r in rs):.1f} s; "
                  f"outside {min(r.wall - r.in_cases for r in rs):.1f} to {max(r.wall - r.in_cases for r in rs):.1f} s"
                  f"{picked}")


# -- main ---------------------------------------------------------------------------------------------

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--protocols", nargs="+", default=list(PROTOCOLS), choices=PROTOCOLS)
    parser.add_argument("--runs", type=int, default=1, help="runs per protocol and target, interleaved")
    parser.add_argument("--docker", action="store_true",
                        help="also run each suite against docker:conformance-ref-<protocol>:latest (interleaved)")
    parser.add_argument("--top", type=int, default=6, help="slowest cases shown per protocol")
    parser.add_argument("--profile", metavar="PROTOCOL", choices=PROTOCOLS,
                        help="cProfile one suite run in this process (every thread) instead")
    parser.add_argument("-k", dest="keyword", default=None, help="a pytest -k expression (a subset of the cases)")
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--compare", nargs="+", type=Path, metavar="TREE",
                        help="run the suites from these copies of the checkout in turn (before/after a change)")
    parser.add_argument("--case", action="append", default=[], help="with --compare: also show this case's times")
    parser.add_argument("--pytest-arg", action="append", default=[], help="passed to pytest after --")
    parser.add_argument("--out", type=Path, default=ROOT / "out" / "bench" / "suites")
    parser.add_argument("--jobs", default="1", metavar="N|auto",
                        help="--jobs of each run outside --jobs-table (default 1: serial, as these tables always were)")
    parser.add_argument("--jobs-table", action="store_true",
                        help="each protocol and all together, serial beside --jobs auto (against ref)")
    args = parser.parse_args()

    if args.jobs_table:
        jobs_table(args.protocols, args.runs, args.out, args.markdown)
        return
    if args.compare:
        compare_trees(args.compare, args.protocols, args.runs, args.out, args.case, args.pytest_arg)
        return
    if args.profile:
        profile_suite(args.profile, args.out / "profile" / args.profile, args.keyword, max(args.top, 25))
        return

    images = {p: docker_image(p) for p in args.protocols} if args.docker else {}
    ref_runs: list[SuiteRun] = []
    pairs: list[tuple[SuiteRun, SuiteRun]] = []
    for n in range(args.runs):
        for protocol in args.protocols:
            ref = run_suite(protocol, "ref", args.out / "ref" / protocol / f"run-{n}", keyword=args.keyword,
                            jobs=args.jobs)
            ref_runs.append(ref)
            print(f"[run {n + 1}/{args.runs}] {protocol} ref: {ref.wall:.1f} s wall, {len(ref.records)} cases, "
                  f"exit {ref.code}, load {ref.load}", flush=True)
            if protocol in images:
                image, params = images[protocol]
                dock = run_suite(protocol, f"docker:{image}", args.out / "docker" / protocol / f"run-{n}", params,
                                 impl_name=f"conformance-ref-{protocol}", keyword=args.keyword, jobs=args.jobs)
                pairs.append((ref, dock))
                print(f"[run {n + 1}/{args.runs}] {protocol} docker:{image}: {dock.wall:.1f} s wall, "
                      f"{len(dock.records)} cases, exit {dock.code}, load {dock.load}", flush=True)
    print()
    report_runs(ref_runs, args.top, args.markdown)
    if pairs:
        print()
        report_runs([d for _, d in pairs], args.top, args.markdown)
        print("\ndocker target beside the in-process reference (medians):")
        report_docker(pairs, args.markdown)


if __name__ == "__main__":
    main()
