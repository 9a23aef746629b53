"""--jobs: cases run concurrently with the same grades, reports in the same order, and cases that
share target state never overlapping."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conformance.protocols import adapter_for, available
from conformance.scenario.loader import BrokenCase, Case, load_file
from conformance.scenario.schedule import HEAVY_FRAMES, CaseScheduler, Demand, Span, case_demand, frame_steps, parse_jobs

ROOT = Path(__file__).resolve().parents[2]


def _overlap(a: Span | dict, b: Span | dict) -> bool:
    start = (lambda s: s.start if isinstance(s, Span) else s["start"])
    end = (lambda s: s.end if isinstance(s, Span) else s["end"])
    return start(a) < end(b) and start(b) < end(a)


# -- the loader: a case touching shared state carries the mark ---------------------------------------

def _scenario(tmp_path: Path, protocol: str, body: str) -> Path:
    folder = tmp_path / "scenarios" / protocol
    folder.mkdir(parents=True)
    path = folder / "fam.yaml"
    path.write_text(f"protocol: {protocol}\nfamily: fam\ncases:\n" + textwrap.indent(textwrap.dedent(body), "  "))
    return path


_MC0_SUB = """\
- id: mc0/fam/sub
  title: t
  spec: s
  requirement: MUST
  steps:
    - macro: connect
    - send: {verb: SUB, id: s, positional: [news]}
    - expect: {verb: OK, id: s}
"""


def _load(path: Path, protocol: str) -> list:
    adapter = adapter_for(protocol)
    return load_file(path, adapter.frame_check, adapter.shared_state_use).cases


def test_unmarked_subscription_is_refused_with_its_line(tmp_path):
    (case,) = _load(_scenario(tmp_path, "mc0", _MC0_SUB), "mc0")
    assert isinstance(case, BrokenCase)
    assert "fam.yaml:10: field cases/0/steps/1/send: this step subscribes to a topic" in case.error
    assert "serial: true" in case.error


def test_marked_subscription_loads_as_serial(tmp_path):
    body = _MC0_SUB.replace("  title: t\n", "  serial: true\n  title: t\n", 1)
    (case,) = _load(_scenario(tmp_path, "mc0", body), "mc0")
    assert isinstance(case, Case) and case.serial


def test_file_default_marks_every_case(tmp_path):
    path = _scenario(tmp_path, "mc0", _MC0_SUB)
    path.write_text(path.read_text().replace("cases:\n", "defaults: {serial: true}\ncases:\n"))
    (case,) = _load(path, "mc0")
    assert isinstance(case, Case) and case.serial


def test_lease_inside_a_macro_and_fan_out_are_shared_state(tmp_path):
    mtl = _scenario(tmp_path / "a", "mtl", """\
        - id: mtl/fam/writer
          title: t
          spec: s
          requirement: MUST
          steps:
            - macro: test-profile
            - macro: writer
        """)
    (case,) = _load(mtl, "mtl")
    assert isinstance(case, BrokenCase) and "runs macro 'writer', which asks for a lease" in case.error
    stmp = _scenario(tmp_path / "b", "stmp", """\
        - id: stmp/fam/second
          title: t
          spec: s
          requirement: MUST
          steps:
            - connect: {channel: second}
            - expect_silence: {for_ms: 10}
        """)
    (case,) = _load(stmp, "stmp")
    assert isinstance(case, BrokenCase) and "second client of the target" in case.error


def test_a_case_of_its_own_connection_needs_no_mark(tmp_path):
    mm2 = _scenario(tmp_path, "micromessage2", """\
        - id: micromessage2/fam/echo
          title: t
          spec: s
          requirement: MUST
          steps:
            - macro: handshake
            - send: {frame: send, seq: 1, destination: test/echo, payload: "x"}
            - expect: {frame: message, seq: 1, destination: test/echo}
        """)
    (case,) = _load(mm2, "micromessage2")
    assert isinstance(case, Case) and not case.serial


def test_shipped_scenarios_carry_the_mark_where_needed():
    for protocol in available():
        adapter = adapter_for(protocol)
        for path in sorted((ROOT / "scenarios" / protocol).glob("*.yaml")):
            for case in load_file(path, adapter.frame_check, adapter.shared_state_use).cases:
                assert isinstance(case, Case), case.error


# -- the scheduler ---------------------------------------------------------------------------------

def test_parse_jobs():
    assert parse_jobs("auto") is None and parse_jobs("4") == 4
    for bad in ("0", "-1", "many"):
        with pytest.raises(ValueError):
            parse_jobs(bad)


def test_frame_steps_multiplies_repeats_and_follows_macros():
    steps = [{"macro": "m"}, {"repeat": {"count": 10, "steps": [{"send": {}}, {"expect": {}}, {"sleep_ms": 1}]}}]
    assert frame_steps(steps, {"m": [{"send": {}}, {"expect": {}}]}) == 2 + 20


def test_case_demand_reads_waits_frames_and_the_fault_proxy_from_the_steps():
    steps = [{"macro": "m"}, {"expect_silence": {"for_ms": "silence_ms + 100"}},
             {"repeat": {"count": 3, "steps": [{"sleep_ms": 10}, {"send": {}}]}},
             {"keep_alive": {"send": {}, "for_ms": 500}}, {"expect_close": {"within_ms": "= t * 2"}},
             {"expect_silence": {"for_ms": "= saved_later"}}]  # not known before the case runs: 0
    demand = case_demand(steps, {"m": [{"expect": {}}, {"sleep_ms": 5}]}, {"silence_ms": 300, "t": 1000})
    assert demand == Demand(frames=4, wait_ms=5 + 400 + 30 + 500 + 2000, paced=False)  # the default pace: 1 s
    assert not demand.heavy and case_demand([], {}, fault={"chunk": 1}).paced
    # a keep-alive paced tighter than TIGHT_PACE_MS races the target's timeout: paced, even in a macro
    assert case_demand([{"macro": "k"}], {"k": [{"keep_alive": {"send": {}, "every_ms": 75, "for_ms": 600}}]}).paced
    assert not case_demand([{"keep_alive": {"send": {}, "every_ms": "t", "for_ms": 600}}], {}, {"t": 1000}).paced
    assert case_demand([{"repeat": {"count": HEAVY_FRAMES, "steps": [{"send": {}}]}}], {}).heavy


def test_scheduler_bounds_concurrency_serialises_groups_and_keeps_heavy_and_paced_apart():
    scheduler = CaseScheduler(3)
    running, most = 0, 0

    async def work() -> str:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await asyncio.sleep(0.02)
        running -= 1
        return "done"

    heavy, paced = Demand(frames=HEAVY_FRAMES), Demand(paced=True)
    try:
        futures = [scheduler.submit(f"case{i}", "g" if i % 3 == 0 else None, work,
                                    heavy if i in (7, 8) else paced if i in (1, 2, 10) else Demand())
                   for i in range(15)]
        assert [f.result(10) for f in futures] == ["done"] * 15
    finally:
        scheduler.close()
    spans = scheduler.spans
    assert len(spans) == 15 and most <= 3 and most >= 2
    grouped = [s for s in spans if s.group == "g"]
    assert len(grouped) == 5
    assert not any(_overlap(a, b) for i, a in enumerate(grouped) for b in grouped[i + 1:])
    heavies, paceds = [s for s in spans if s.heavy], [s for s in spans if s.paced]
    assert len(heavies) == 2 and len(paceds) == 3
    assert not any(_overlap(h, p) for h in heavies for p in paceds)
    # the others run beside a heavy case: it no longer runs alone
    assert any(_overlap(h, s) for h in heavies for s in spans if not s.heavy and not s.paced)


def test_a_case_both_heavy_and_paced_overlaps_neither_kind():
    scheduler = CaseScheduler(4)

    async def work() -> None:
        await asyncio.sleep(0.05)

    both = Demand(frames=HEAVY_FRAMES, paced=True)
    try:
        futures = [scheduler.submit("both", None, work, both),
                   scheduler.submit("paced", None, work, Demand(paced=True)),
                   scheduler.submit("heavy", None, work, Demand(frames=HEAVY_FRAMES))]
        for future in futures:
            future.result(10)
    finally:
        scheduler.close()
    spans = {s.key: s for s in scheduler.spans}
    assert spans["both"].heavy and spans["both"].paced
    # heavy: no paced case beside it; paced: no heavy case beside it
    assert not _overlap(spans["both"], spans["paced"]) and not _overlap(spans["both"], spans["heavy"])


def test_scheduler_starts_the_longest_waits_first():
    scheduler = CaseScheduler(1)

    async def work() -> None:
        await asyncio.sleep(0.01)

    try:
        # one at a time: the first takes the one slot at once, the others are served longest first
        futures = [scheduler.submit(f"case{w}", None, work, Demand(wait_ms=w)) for w in (0, 100, 5000, 300)]
        for future in futures:
            future.result(10)
        # a batch (the plugin hands every case over in one) starts in order of priority from the first
        with scheduler.batch():
            futures = [scheduler.submit(f"batch{w}", None, work, Demand(wait_ms=w)) for w in (0, 100, 5000, 300)]
            futures.append(scheduler.submit("heavy", None, work, Demand(frames=HEAVY_FRAMES)))
            futures.append(scheduler.submit("paced", None, work, Demand(paced=True)))
        assert [f.result(10) for f in futures] == [None] * 6
    finally:
        scheduler.close()
    order = [s.key for s in sorted(scheduler.spans, key=lambda s: s.start)]
    # the paced case first; the heavy one waits for it to end, then for the next free slot, which it
    # takes before the ordinary cases still waiting
    assert order == ["case0", "case5000", "case300", "case100",
                     "paced", "batch5000", "heavy", "batch300", "batch100", "batch0"]


# -- the whole suite: --jobs 4 beside a serial run (slow, not timed) ------------------------------------

def _run(out: Path, jobs: str, what: str = "all", target: str = "ref") -> None:
    command = [sys.executable, "-m", "conformance.cli", "run", what, "--target", target, "--out", str(out),
               "--jobs", jobs, "--", f"--schedule-log={out / 'spans.jsonl'}"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=900, check=False)


def _spans(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "spans.jsonl").read_text().splitlines()]


def _records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines() if line.strip()]


def _junit_cases(out: Path) -> list[tuple[str, str, str]]:
    cases = []
    for case in ET.parse(out / "junit.xml").getroot().iter("testcase"):
        outcome = next((child.tag for child in case if child.tag in ("failure", "error", "skipped")), "passed")
        cases.append((case.get("classname"), case.get("name"), outcome))
    return cases


@pytest.mark.slow
def test_jobs_4_grades_every_case_as_a_serial_run_and_serial_cases_never_overlap(tmp_path):
    serial, concurrent, external = tmp_path / "serial", tmp_path / "jobs4", tmp_path / "external"
    _run(serial, "1")
    _run(concurrent, "4")
    one, four = _records(serial), _records(concurrent)
    assert {r["protocol"] for r in one} == set(available())
    # same cases, same grades, in the same order (the records and JUnit follow pytest's order)
    assert [(r["case"], r["transport"], r["grade"]) for r in four] == [(r["case"], r["transport"], r["grade"]) for r in one]
    assert _junit_cases(concurrent) == _junit_cases(serial)
    spans = _spans(concurrent)
    assert len(spans) == len(one)
    # it did run concurrently: some two cases overlap, never more than four at once
    points = sorted([(s["start"], 1) for s in spans] + [(s["end"], -1) for s in spans], key=lambda p: (p[0], p[1]))
    level = most = 0
    for _, step in points:
        level += step
        most = max(most, level)
    assert 2 <= most <= 4
    heavy, paced = [s for s in spans if s["heavy"]], [s for s in spans if s["paced"]]
    assert heavy and paced, "no heavy or no paced case ran"
    for case in heavy:
        assert not any(_overlap(case, s) for s in paced), case
    # against ref a serial case has a server of its own and takes no turn; against a server the
    # suite cannot multiply (here the reference mc0 broker as a cmd: target) serial cases take turns
    _run(external, "4", "mc0", f"cmd:{sys.executable} -m conformance.cli serve mc0 --port {{port}}")
    grades = {(r["case"], r["transport"]): r["grade"] for r in one if r["protocol"] == "mc0"}
    assert {(r["case"], r["transport"]): r["grade"] for r in _records(external)} == grades
    turns = [s for s in _spans(external) if s["group"]]
    assert len(turns) == sum(1 for r in _records(external) if _serial("mc0", r["case"]))
    assert turns and all(s["group"] == turns[0]["group"] for s in turns)
    for i, a in enumerate(turns):
        for b in turns[i + 1:]:
            assert not _overlap(a, b), (a, b)
    free = [s for s in _spans(external) if not s["group"]]
    assert any(_overlap(a, b) for i, a in enumerate(free) for b in free[i + 1:]), "the other cases ran one by one"


def _serial(protocol: str, case_id: str) -> bool:
    adapter = adapter_for(protocol)
    for path in (ROOT / "scenarios" / protocol).glob("*.yaml"):
        for case in load_file(path, adapter.frame_check).cases:
            if isinstance(case, Case) and case.id == case_id:
                return case.serial
    raise AssertionError(case_id)
