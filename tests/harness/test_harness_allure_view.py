"""What Allure shows of each grade: a status that is never a green pass for a grade that is not
PASSED, the grade by name, the tree protocol / family / case, links, environment, wire log."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from allure_commons import model2

from conformance.allure_view import GradeStatus, Verdict, write_environment
from conformance.grading import Grade

ROOT = Path(__file__).resolve().parents[2]

# Allure's statuses are passed, failed, broken, skipped and unknown (allure-python-commons
# model2.Status); "broken" is Allure's word for a test that could not run.
EXPECTED_STATUS = {
    Grade.PASSED: "passed",
    Grade.FAILED: "failed",
    Grade.ERROR: "broken",
    Grade.NON_STRICT: "unknown",
    Grade.INFORMATIONAL: "unknown",
    Grade.UNSUPPORTED: "skipped",
    Grade.NOT_APPLICABLE: "skipped",
}


def _graded(grade: Grade, pytest_status: str, strict: bool = False) -> model2.TestResult:
    result = model2.TestResult(name="stmp/ping/x [tcp]", status=pytest_status, labels=[
        model2.Label(name="parentSuite", value="scenarios.stmp"), model2.Label(name="suite", value="ping"),
        model2.Label(name="parentSuite", value="stmp"), model2.Label(name="suite", value="ping"),
        model2.Label(name="subSuite", value="stmp/ping/x")])
    plugin = GradeStatus()
    plugin.expect(result.name, Verdict(grade, "what happened", "wirelogs/x.log", strict))
    plugin.report_result(result)
    return result


def test_every_grade_gets_its_own_status_and_names_itself() -> None:
    # the status pytest gives each grade: a pass for PASSED, INFORMATIONAL, NON-STRICT
    pytest_status = {Grade.FAILED: "failed", Grade.ERROR: "failed", Grade.UNSUPPORTED: "skipped",
                     Grade.NOT_APPLICABLE: "skipped"}
    for grade in Grade:
        result = _graded(grade, pytest_status.get(grade, "passed"))
        assert result.status == EXPECTED_STATUS[grade], grade
        if grade is not Grade.PASSED:
            assert result.statusDetails.message.startswith(f"{grade.value}: what happened"), grade
            assert "wire log: wirelogs/x.log" in result.statusDetails.message


def test_strict_non_strict_stays_failed_and_tree_is_protocol_family_case() -> None:
    result = _graded(Grade.NON_STRICT, "failed", strict=True)
    assert result.status == "failed"
    assert [(label.name, label.value) for label in result.labels] == [
        ("parentSuite", "stmp"), ("suite", "ping"), ("subSuite", "stmp/ping/x")]
    assert result.titlePath == ["stmp", "ping", "stmp/ping/x"]  # Allure 3 draws its tree from this


def test_environment_file_escapes_values(tmp_path: Path) -> None:
    path = write_environment(tmp_path, implementation="acme", version="2.1", protocols=["mc0", "stmp"],
                             target="tcp://127.0.0.1:9000", commit="abc123")
    assert path.read_text().splitlines() == [
        "implementation=acme", "implementation.version=2.1", "protocols=mc0, stmp",
        "target=tcp\\://127.0.0.1\\:9000", "suite.version=0.1.0", "suite.commit=abc123"]


def test_a_run_writes_grades_links_tree_and_environment(tmp_path: Path) -> None:
    # a "server" that accepts and never answers: tcp FAILED, ws NOT-APPLICABLE (no ws endpoint)
    silent = (f"cmd:{sys.executable} -c \"import socket,time;s=socket.socket();"
              f"s.bind(('127.0.0.1',{{port}}));s.listen();c=s.accept();time.sleep(60)\"")
    run = subprocess.run([sys.executable, "-m", "conformance.cli", "run", "stmp", "--target", silent,
                          "--impl-name", "silent", "--impl-version", "0.9", "--out", str(tmp_path),
                          "-k", "stmp/handshake/one-version"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 1, run.stdout[-2000:]
    folder = tmp_path / "allure-results"
    results = {r["name"]: r for r in (json.loads(p.read_text()) for p in folder.glob("*-result.json"))}
    failed = results["stmp/handshake/one-version [tcp] FAILED"]
    skipped = results["stmp/handshake/one-version [ws] NOT-APPLICABLE"]
    assert failed["status"] == "failed" and skipped["status"] == "skipped"
    labels = [(label["name"], label["value"]) for label in failed["labels"]]
    assert [lv for lv in labels if lv[0] in ("parentSuite", "suite", "subSuite")] == [
        ("parentSuite", "stmp"), ("suite", "handshake"), ("subSuite", "stmp/handshake/one-version")]
    assert failed["titlePath"] == ["stmp", "handshake", "stmp/handshake/one-version"]
    assert ("grade", "FAILED") in labels and ("tag", "FAILED") in labels
    assert ("grade", "NOT-APPLICABLE") in [(label["name"], label["value"]) for label in skipped["labels"]]
    links = {link["name"].split(":")[0]: link["url"] for link in failed["links"]}
    # the one table of public spec homes (docs/profiles/stmp.md names the same article)
    from conformance.spec_links import PUBLIC_SPECS
    assert links["spec"].startswith(PUBLIC_SPECS["stmp"].url)
    assert links["requirement"].startswith("file://") and links["requirement"].endswith("/docs/profiles/stmp.md")
    assert links["compliance matrix"] == "../compliance/matrix.html#matrix-stmp"
    record = next(r for r in map(json.loads, (tmp_path / "records.jsonl").read_text().splitlines())
                  if r["transport"] == "tcp")
    assert f"wire log: {record['wirelog']}" in failed["statusDetails"]["message"]
    environment = (folder / "environment.properties").read_text().splitlines()
    assert {"implementation=silent", "implementation.version=0.9", "protocols=stmp"} <= set(environment)
    assert any(line.startswith("suite.commit=") for line in environment)


def test_finish_names_the_one_page_that_opens_from_disk(tmp_path: Path) -> None:
    import pytest

    from conformance.finish import allure_html
    from reports import allure
    try:
        allure._npx(allure.PROJECT_ROOT)
    except allure.AllureUnavailable as exc:
        pytest.skip(f"Allure 3 CLI not available: {exc}")
    results = tmp_path / "allure-results"
    write_environment(results, implementation="acme", version="1", protocols=["stmp"], target="ref", commit="c")
    (results / "a-result.json").write_text(json.dumps({
        "uuid": "a", "historyId": "h", "name": "stmp/x/y [tcp]", "fullName": "f", "status": "passed",
        "start": 1, "stop": 2, "labels": [{"name": "grade", "value": "PASSED"}]}))
    matrix = tmp_path / "compliance" / "matrix.html"
    matrix.parent.mkdir()
    matrix.write_text("<html></html>")
    line = allure_html(results, tmp_path / "allure-report", tmp_path / "history", matrix)
    page = tmp_path / "allure-report" / "index.html"
    assert line == f"{page} (one page: open it from disk or serve it)"
    assert page.is_file() and not (tmp_path / "allure-report" / "data").exists()
    assert '"reportUrl":"../compliance/matrix.html"' in page.read_text()  # as allure_view.MATRIX_PAGE links it
