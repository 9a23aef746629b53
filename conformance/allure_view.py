"""How a graded case looks in Allure: status, tree, links, environment.

Allure knows five statuses (passed, failed, broken, skipped, unknown) and the suite has seven
grades, so each grade gets the closest status and is named besides, where the report shows it:
the ``grade`` label (one Allure category per grade, reports/allure.py), a tag, the title and
the status message.

    PASSED          passed
    FAILED          failed
    ERROR           broken   (the case could not run: Allure's "broken" means exactly that)
    NON-STRICT      unknown  (failed under --strict)
    INFORMATIONAL   unknown  (an observation, not a pass: never green)
    UNSUPPORTED     skipped
    NOT-APPLICABLE  skipped

pytest decides the status allure-pytest writes (a pass is "passed"), and it decides it after the
case has run; the grade is applied later, when the result is handed to Allure's file writer
(:class:`GradeStatus`).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import allure_commons
from allure_commons.model2 import StatusDetails

import conformance
from conformance.grading import Grade

PROJECT_ROOT = Path(__file__).resolve().parents[1]

# Where finish.py puts the compliance matrix, seen from the Allure report folder beside it.
MATRIX_PAGE = "../compliance/matrix.html"

STATUS = {
    Grade.PASSED: "passed",
    Grade.FAILED: "failed",
    Grade.ERROR: "broken",
    Grade.NON_STRICT: "unknown",
    Grade.INFORMATIONAL: "unknown",
    Grade.UNSUPPORTED: "skipped",
    Grade.NOT_APPLICABLE: "skipped",
}

SUITE_LABELS = ("parentSuite", "suite", "subSuite")


def title(case_id: str, transport: str, grade: Grade) -> str:
    base = f"{case_id} [{transport}]"
    return base if grade is Grade.PASSED else f"{base} {grade.value}"


def profile_page(protocol: str) -> str | None:
    """Our reading of the protocol's spec, as a link that works from a report opened from disk."""
    page = PROJECT_ROOT / "docs" / "profiles" / f"{protocol}.md"
    return page.as_uri() if page.is_file() else None


@dataclass
class Verdict:
    grade: Grade
    message: str
    wirelog: str | None
    strict: bool


class GradeStatus:
    """An allure-commons plugin: gives each result the status and message of its grade.

    Registered after Allure's file writer and called first (tryfirst), so the result is changed
    before it is written.  Results are matched by their name (the title, which holds case id and
    transport), which is unique within a run.
    """

    def __init__(self) -> None:
        self._verdicts: dict[str, Verdict] = {}

    def expect(self, name: str, verdict: Verdict) -> None:
        self._verdicts[name] = verdict

    @allure_commons.hookimpl(tryfirst=True)
    def report_result(self, result) -> None:
        verdict = self._verdicts.pop(result.name, None)
        if verdict is None:
            return
        _keep_last_suite_labels(result)
        if not (verdict.strict and verdict.grade is Grade.NON_STRICT):
            result.status = STATUS[verdict.grade]
        message = f"{verdict.grade.value}: {verdict.message}"
        if verdict.wirelog:
            message += f"\nwire log: {verdict.wirelog}"
        if verdict.grade is not Grade.PASSED:
            _set_message(result, message)


def _set_message(result, message: str) -> None:
    if result.statusDetails is None:
        result.statusDetails = StatusDetails(message=message)
    else:
        result.statusDetails.message = message


def _keep_last_suite_labels(result) -> None:
    """allure-pytest labels the suites, and sets the title path Allure 3 builds its tree from,
    after the file path (scenarios / stmp / handshake.yaml); the case's own suite labels come
    later and win, so the tree is protocol / family / case."""
    last = {label.name: i for i, label in enumerate(result.labels) if label.name in SUITE_LABELS}
    result.labels = [label for i, label in enumerate(result.labels)
                     if label.name not in SUITE_LABELS or last[label.name] == i]
    suites = {label.name: label.value for label in result.labels if label.name in SUITE_LABELS}
    if len(suites) == len(SUITE_LABELS):
        result.titlePath = [suites[name] for name in SUITE_LABELS]


def register_grade_status() -> GradeStatus:
    plugin = GradeStatus()
    allure_commons.plugin_manager.register(plugin)
    return plugin


def unregister(plugin: GradeStatus) -> None:
    allure_commons.plugin_manager.unregister(plugin)


def suite_commit(root: Path = PROJECT_ROOT) -> str:
    if not (root / ".git").exists():
        return "unknown"
    try:
        run = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"],
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return run.stdout.strip() if run.returncode == 0 and run.stdout.strip() else "unknown"


def _property(value: str) -> str:
    # Properties files read a backslash, ':', '=' and a line break in a value as syntax.
    value = value.replace("\\", "\\\\").replace(":", "\\:").replace("=", "\\=")
    return value.replace("\n", "\\n")


def write_environment(results_dir: Path, *, implementation: str, version: str, protocols: list[str],
                      target: str, commit: str | None = None) -> Path:
    """environment.properties: what Allure's environment widget shows."""
    values = {
        "implementation": implementation,
        "implementation.version": version,
        "protocols": ", ".join(protocols) or "none",
        "target": target,
        "suite.version": conformance.__version__,
        "suite.commit": commit if commit is not None else suite_commit(),
    }
    results_dir.mkdir(parents=True, exist_ok=True)
    path = results_dir / "environment.properties"
    path.write_text("".join(f"{key}={_property(value)}\n" for key, value in values.items()), encoding="utf-8")
    return path
