"""The Micromessage2 suite as users run it: `conformance run` in its own process against the reference
server and client, each spawned as a separate process (cmd: target and --target-client)."""

from __future__ import annotations

import json

from suite_helpers import all_cases


def test_full_suite_passes_against_the_reference_processes(reference_run) -> None:
    proc, out = reference_run
    stdout, _ = proc.communicate(timeout=180)
    assert proc.returncode == 0, stdout[-4000:]
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    cases = all_cases("micromessage2")
    assert {r["case"] for r in records} == set(cases)
    grades = {r["case"]: r["grade"] for r in records}
    informational = {cid for cid, c in cases.items() if c.requirement in ("MAY", "INFO")}
    assert {g for cid, g in grades.items() if cid not in informational} == {"PASSED"}, grades
    assert {grades[cid] for cid in informational} <= {"INFORMATIONAL"}
    # client-role cases ran against the spawned reference client, not skipped
    client_cases = [cid for cid, c in cases.items() if c.role == "client"]
    assert len(client_cases) >= 5 and all(grades[cid] == "PASSED" for cid in client_cases)
    assert (out / "junit.xml").exists() and any((out / "allure-results").iterdir())
