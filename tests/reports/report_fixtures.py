"""Small fixed inputs for the reports tests.

The runs below are the hand-checked input every expected value in the tests
is worked out from. Times are in January 2026; "a1" is the baseline run.

    alpha (stmp)   a1 v1.0 01-01   a2 v1.0 01-02   a3 v1.1 01-03
    version-ok     PASSED  10ms    PASSED  20ms    ERROR   40ms
    version-unsup  PASSED          FAILED (allure, wirelog)
    ping/interval  NON-STRICT      NON-STRICT      PASSED
    timeout-info   INFORMATIONAL   INFORMATIONAL

    beta (stmp)    b1 v2.0 01-01: PASSED, PASSED, interval graded twice
                   (tcp NON-STRICT 12:00, ws PASSED 12:05), INFORMATIONAL
    gamma (micromessage2) g1 v0.9: hello MUST PASSED, large SHOULD PASSED,
                   optional MAY UNSUPPORTED, info INFO ERROR
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

STMP_CASES = {
    "stmp/handshake/version-ok": ("handshake", "MUST"),
    "stmp/handshake/version-unsupported": ("handshake", "MUST"),
    "stmp/ping/interval": ("ping", "SHOULD"),
    "stmp/ping/timeout-info": ("ping", "INFO"),
}
MM2_CASES = {
    "micromessage2/handshake/hello": ("handshake", "MUST"),
    "micromessage2/split-message/large": ("split-message", "SHOULD"),
    "micromessage2/filters/optional": ("filters", "MAY"),
    "micromessage2/filters/info": ("filters", "INFO"),
}


def record(run: str, time: str, impl: str, version: str, case: str, grade: str, **extra: Any) -> dict[str, Any]:
    protocol = case.split("/")[0]
    family, requirement = {**STMP_CASES, **MM2_CASES}[case]
    rec = {
        "schemaVersion": 1,
        "run": run,
        "time": time,
        "implementation": impl,
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
        "message": f"{grade.lower()} in {run}",
        "spec": f"The sentence tested by {case}.",
        "specRef": f"{protocol}.txt#3.{len(case) % 7}",
        "durationMs": 5,
        "wirelog": None,
    }
    rec.update(extra)
    return rec


def write_run(root: Path, name: str, records: list[dict[str, Any]], extra_lines: dict[int, str] | None = None) -> Path:
    """A run folder; extra_lines inserts raw (possibly broken) lines before the given 1-based line."""
    run_dir = root / name
    run_dir.mkdir(parents=True)
    lines = [json.dumps(r) for r in records]
    for at, raw in sorted((extra_lines or {}).items()):
        lines.insert(at - 1, raw)
    (run_dir / "records.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return run_dir


def allure_result(
    case: str,
    uuid: str,
    status: str,
    message: str,
    attachments_top: int,
    attachments_in_steps: int,
    labels: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    attach = [
        {"name": "wire log", "source": f"{uuid}-{i}-attachment.txt", "type": "text/plain"}
        for i in range(attachments_top + attachments_in_steps)
    ]
    return {
        "uuid": uuid,
        "historyId": f"h-{case}",
        "testCaseId": f"t-{case}",
        "name": case.rsplit("/", 1)[1],
        "fullName": f"conformance.{case.replace('/', '.')}",
        "status": status,
        "statusDetails": {"message": message, "trace": ""},
        "start": 1767225600000,
        "stop": 1767225600500,
        "labels": [{"name": "epic", "value": case.split("/")[0]}, {"name": "story", "value": case}, *(labels or [])],
        "attachments": attach[:attachments_top],
        "steps": [
            {
                "name": "exchange",
                "status": status,
                "steps": [{"name": "close", "status": status, "attachments": attach[attachments_top:], "steps": []}],
                "attachments": [],
            }
        ],
        "parameters": [{"name": "implementation", "value": "alpha"}],
    }


def build_runs(root: Path) -> dict[str, Path]:
    ok, unsup, interval, info = STMP_CASES
    alpha = [
        (
            "a1",
            "2026-01-01T10:00:00Z",
            "1.0",
            {ok: ("PASSED", 10), unsup: ("PASSED", 5), interval: ("NON-STRICT", 5), info: ("INFORMATIONAL", 5)},
        ),
        (
            "a2",
            "2026-01-02T10:00:00Z",
            "1.0",
            {ok: ("PASSED", 20), unsup: ("FAILED", 5), interval: ("NON-STRICT", 5), info: ("INFORMATIONAL", 5)},
        ),
        ("a3", "2026-01-03T10:00:00Z", "1.1", {ok: ("ERROR", 40), interval: ("PASSED", 5)}),
    ]
    dirs: dict[str, Path] = {}
    for run, time, version, grades in alpha:
        recs = []
        for case, (grade, ms) in grades.items():
            extra: dict[str, Any] = {"durationMs": ms}
            if run == "a2" and case == unsup:
                extra["wirelog"] = "wirelogs/version-unsupported.log"
                extra["message"] = "FAILED: server accepted version 9.9"
            recs.append(record(run, time, "alpha", version, case, grade, **extra))
        dirs[run] = write_run(root / "runs", run, recs)
    (dirs["a2"] / "wirelogs").mkdir()
    (dirs["a2"] / "wirelogs" / "version-unsupported.log").write_text("-> 40 00 00 00 00\n", encoding="utf-8")
    results = dirs["a2"] / "allure-results"
    results.mkdir()
    (results / "u-unsup-result.json").write_text(
        json.dumps(allure_result(unsup, "u-unsup", "failed", "FAILED: server accepted version 9.9", 1, 1)),
        encoding="utf-8",
    )
    (results / "u-ok-result.json").write_text(
        json.dumps(allure_result(ok, "u-ok", "passed", "", 0, 0)), encoding="utf-8"
    )

    beta = [
        record("b1", "2026-01-01T12:00:00Z", "beta", "2.0", ok, "PASSED"),
        record(
            "b1",
            "2026-01-01T12:00:00Z",
            "beta",
            "2.0",
            unsup,
            "PASSED",
            message='escape me: <img src=x onerror="alert(1)"> & done',
        ),
        record("b1", "2026-01-01T12:00:00Z", "beta", "2.0", interval, "NON-STRICT"),
        record("b1", "2026-01-01T12:05:00Z", "beta", "2.0", interval, "PASSED", transport="ws"),
        record("b1", "2026-01-01T12:00:00Z", "beta", "2.0", info, "INFORMATIONAL"),
    ]
    dirs["b1"] = write_run(root / "runs", "b1", beta)
    hello, large, optional, mm_info = MM2_CASES
    gamma = [
        record("g1", "2026-01-04T08:00:00Z", "gamma", "0.9", hello, "PASSED"),
        record("g1", "2026-01-04T08:00:01Z", "gamma", "0.9", large, "PASSED"),
        record("g1", "2026-01-04T08:00:02Z", "gamma", "0.9", optional, "UNSUPPORTED"),
        record("g1", "2026-01-04T08:00:03Z", "gamma", "0.9", mm_info, "ERROR"),
    ]
    dirs["g1"] = write_run(root / "runs", "g1", gamma)
    return dirs


CATALOGUE_STMP = """\
protocol: stmp
spec: stmp.txt
requirements:
  - {id: STMP-1, level: MUST, text: "negotiate first", cases: [stmp/handshake/version-ok], untestable: null}
  - {id: STMP-2, level: MUST, text: "close on 0x35", cases: [stmp/handshake/not-in-any-run], untestable: null}
  - {id: STMP-3, level: MUST, text: "clock skew", cases: [], untestable: "needs a second clock"}
  - id: STMP-4
    level: MUST
    text: "reject 9.9"
    cases: [stmp/x/other, stmp/handshake/version-unsupported]
    untestable: null
  - {id: STMP-5, level: SHOULD, text: "ping", cases: [stmp/ping/interval], untestable: null}
  - {id: STMP-6, level: MAY, text: "extra", cases: [stmp/x/extra], untestable: null}
"""


def build_catalogues(root: Path) -> Path:
    folder = root / "requirements"
    folder.mkdir(parents=True)
    (folder / "stmp.yaml").write_text(CATALOGUE_STMP, encoding="utf-8")
    (folder / "rsio.yaml").write_text("protocol: rsio\nrequirements: [{id: R-1, level: SOMETIMES}]\n", encoding="utf-8")
    return folder


def build_profiles_dir(root: Path) -> Path:
    (root / "docs" / "profiles").mkdir(parents=True)
    (root / "docs" / "profiles" / "stmp.md").write_text("# STMP profile\n", encoding="utf-8")
    return root / "docs" / "profiles"


def read_json_table(out: Path, name: str) -> list[dict[str, Any]]:
    rows = []
    for part in sorted((out / "json" / name).glob("part-*.json")):
        rows.extend(json.loads(line) for line in part.read_text(encoding="utf-8").splitlines() if line.strip())
    return rows


OK, UNSUP, INTERVAL, INFO = (
    "stmp/handshake/version-ok",
    "stmp/handshake/version-unsupported",
    "stmp/ping/interval",
    "stmp/ping/timeout-info",
)
HELLO, LARGE, OPTIONAL, MM_INFO = (
    "micromessage2/handshake/hello",
    "micromessage2/split-message/large",
    "micromessage2/filters/optional",
    "micromessage2/filters/info",
)

# (implementation, case, transport) -> (grade, run): the latest run's grade on that transport.
EXPECTED_MATRIX = {
    ("alpha", OK, "tcp"): ("ERROR", "a3"),
    ("alpha", UNSUP, "tcp"): ("FAILED", "a2"),
    ("alpha", INTERVAL, "tcp"): ("PASSED", "a3"),
    ("alpha", INFO, "tcp"): ("INFORMATIONAL", "a2"),
    ("beta", OK, "tcp"): ("PASSED", "b1"),
    ("beta", UNSUP, "tcp"): ("PASSED", "b1"),
    ("beta", INTERVAL, "tcp"): ("NON-STRICT", "b1"),  # one cell per transport: neither grade hides the other
    ("beta", INTERVAL, "ws"): ("PASSED", "b1"),
    ("beta", INFO, "tcp"): ("INFORMATIONAL", "b1"),
    ("gamma", HELLO, "tcp"): ("PASSED", "g1"),
    ("gamma", LARGE, "tcp"): ("PASSED", "g1"),
    ("gamma", OPTIONAL, "tcp"): ("UNSUPPORTED", "g1"),
    ("gamma", MM_INFO, "tcp"): ("ERROR", "g1"),
}
