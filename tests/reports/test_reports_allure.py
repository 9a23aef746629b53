"""The Allure 3 report: categories, history across two generations, the matrix link."""

from __future__ import annotations

import base64
import json
import re
import shutil
from pathlib import Path

import pytest
from report_fixtures import allure_result

from reports import allure


@pytest.fixture(scope="module")
def allure_cli() -> None:
    try:
        allure._npx(allure.PROJECT_ROOT)
    except allure.AllureUnavailable as exc:
        pytest.skip(f"Allure 3 CLI not available: {exc}")


def _results(folder: Path, ok_status: str) -> Path:
    folder.mkdir(parents=True)
    ok_message = "" if ok_status == "passed" else "conformance.plugin.CaseFailed: FAILED: no version reply"
    ok_grade = [{"name": "grade", "value": "PASSED" if ok_status == "passed" else "FAILED"}]
    cases = [
        allure_result("stmp/handshake/version-ok", f"ok-{ok_status}", ok_status, ok_message, 0, 0, labels=ok_grade),
        allure_result(
            "stmp/handshake/version-unsupported",
            f"unsup-{ok_status}",
            "failed",
            "conformance.plugin.CaseFailed: FAILED: server accepted version 9.9",
            1,
            1,
            labels=[{"name": "grade", "value": "FAILED"}],
        ),
        allure_result(
            "stmp/ping/interval",
            f"interval-{ok_status}",
            "passed",
            "",
            0,
            0,
            labels=[{"name": "grade", "value": "NON-STRICT"}],
        ),
        allure_result(
            "stmp/ping/feature",
            f"feature-{ok_status}",
            "skipped",
            "Skipped: UNSUPPORTED: the target declares no heartbeat",
            0,
            0,
            labels=[{"name": "grade", "value": "UNSUPPORTED"}],
        ),
    ]
    for case in cases:
        (folder / f"{case['uuid']}-result.json").write_text(json.dumps(case), encoding="utf-8")
    return folder


def _embedded(report_dir: Path) -> dict[str, bytes]:
    """The files a single-file Allure page carries inside it, by the path the page reads them at."""
    page = (report_dir / "index.html").read_text(encoding="utf-8")
    return {path: base64.b64decode(data) for path, data in re.findall(r'd\("([^"]+)","([A-Za-z0-9+/=]*)"\)', page)}


def _test_result(report_dir: Path, name: str) -> dict:
    for path, data in _embedded(report_dir).items():
        if path.startswith("data/test-results/"):
            result = json.loads(data)
            if result["name"] == name:
                return result
    raise AssertionError(f"no test result named {name}")


def test_report_keeps_history_and_trend_across_generations(allure_cli, tmp_path: Path) -> None:
    history = tmp_path / "history"
    matrix = tmp_path / "reports" / "matrix.html"
    report = tmp_path / "report"
    first = allure.generate(
        [_results(tmp_path / "run1" / "allure-results", "failed")], report, history, matrix_page=str(matrix)
    )
    first_uuid = json.loads((report / "summary.json").read_text(encoding="utf-8"))["meta"]["reportId"]
    # The same output folder again: the old report is replaced, not nested.
    second = allure.generate(
        [_results(tmp_path / "run2" / "allure-results", "passed")], report, history, matrix_page=str(matrix)
    )
    assert first == second == report / "index.html" and second.is_file()
    assert not (report / "awesome").exists()
    # one page, no data folder beside it for the page to fetch (a page opened from disk cannot)
    assert not (report / "data").exists() and not (report / "widgets").exists()
    entries = [json.loads(line) for line in (history / allure.HISTORY_FILE).read_text(encoding="utf-8").splitlines()]
    assert [e["uuid"] for e in entries][:1] == [first_uuid] and len(entries) == 2
    # The second report carries the first generation as history, as a whole and per test.
    embedded = _embedded(report)
    assert [p for p in embedded if p.startswith("data/history/")] == [f"data/history/{first_uuid}.json"]
    ok = _test_result(report, "version-ok")
    assert ok["status"] == "passed"
    assert [h["status"] for h in ok["history"]] == ["failed"]
    page = second.read_text(encoding="utf-8")
    assert '"reportUrl":"../reports/matrix.html"' in page
    assert "googletagmanager" not in page


def test_categories_split_failed_non_strict_and_unsupported(allure_cli, tmp_path: Path) -> None:
    results = _results(tmp_path / "run" / "allure-results", "failed")
    index = allure.generate([results], tmp_path / "report", tmp_path / "history")
    written = json.loads((results / "categories.json").read_text(encoding="utf-8"))
    assert [c["name"].split(":")[0] for c in written] == ["FAILED", "NON-STRICT", "ERROR", "UNSUPPORTED",
                                                             "NOT-APPLICABLE", "INFORMATIONAL"]
    tree = json.loads(_embedded(index.parent)["widgets/categories.json"])
    members: dict[str, set[str]] = {}
    for node_id in tree["roots"]:
        category = tree["nodes"][node_id]
        found: set[str] = set()
        stack = list(category.get("childrenIds", []))
        while stack:
            node = tree["nodes"][stack.pop()]
            if node["type"] == "tr":
                found.add(node["name"])
            stack.extend(node.get("childrenIds", []))
        members[category["name"].split(":")[0]] = found
    assert members == {
        "FAILED": {"version-ok", "version-unsupported"},
        "NON-STRICT": {"interval"},
        "UNSUPPORTED": {"feature"},
    }


def test_a_folder_that_is_not_a_report_is_never_replaced(allure_cli, tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(FileExistsError, match="refusing"):
        allure.generate([_results(tmp_path / "results", "passed")], tmp_path / "out", tmp_path / "history")
    assert (tmp_path / "out" / "notes.txt").read_text(encoding="utf-8") == "mine"


def test_missing_cli_is_a_clear_error(tmp_path: Path) -> None:
    if shutil.which("npx") is None:
        expected = "npx not found"
    else:
        expected = "npm ci"
    with pytest.raises(allure.AllureUnavailable, match=expected):
        allure.generate([tmp_path], tmp_path / "out", tmp_path / "history", project_root=tmp_path)


def test_environment_widget_shows_the_runs_entries_and_the_matrix(allure_cli, tmp_path: Path) -> None:
    first = _results(tmp_path / "run1" / "allure-results", "passed")
    second = _results(tmp_path / "run2" / "allure-results", "failed")
    (first / "environment.properties").write_text("implementation=acme\ntarget=tcp\\://127.0.0.1\\:9000\n")
    (second / "environment.properties").write_text("implementation=beta\ntarget=tcp\\://127.0.0.1\\:9000\n")
    report = tmp_path / "report"
    allure.generate([first, second], report, tmp_path / "history", matrix_page="https://example.org/matrix.html")
    widget = {e["name"]: e["values"] for e in json.loads(_embedded(report)["widgets/allure_environment.json"])}
    assert widget == {"implementation": ["acme, beta"], "target": ["tcp://127.0.0.1:9000"],
                      "compliance-matrix": ["https://example.org/matrix.html"]}


def test_tree_is_protocol_then_family_then_case(allure_cli, tmp_path: Path) -> None:
    results = tmp_path / "allure-results"
    results.mkdir()
    suites = [{"name": "parentSuite", "value": "stmp"}, {"name": "suite", "value": "handshake"},
              {"name": "subSuite", "value": "stmp/handshake/one-version"}]
    case = allure_result("stmp/handshake/one-version", "u1", "passed", "", 0, 0, labels=suites)
    case["titlePath"] = ["scenarios", "stmp", "handshake.yaml"]  # what allure-pytest would give
    (results / "u1-result.json").write_text(json.dumps(case), encoding="utf-8")
    report = tmp_path / "report"
    allure.generate([results], report, tmp_path / "history")
    tree = json.loads(_embedded(report)["widgets/tree.json"])
    groups, path = tree["groupsById"], []
    level = tree["root"]
    while level.get("groups"):
        (only,) = level["groups"]
        level = groups[only]
        path.append(level["name"])
    assert path == ["stmp", "handshake", "stmp/handshake/one-version"]
