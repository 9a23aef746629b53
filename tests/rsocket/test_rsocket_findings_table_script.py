"""scripts/rsocket_findings_table.py: which cases it runs again on a fresh container, and which grade
a cell then shows (records written here by hand; no docker)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "rsocket_findings_table.py"
_spec = importlib.util.spec_from_file_location("rsocket_findings_table", SCRIPT)
table = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(table)


def _record(case: str, transport: str, grade: str) -> dict:
    return {"case": f"rsocket/{case}", "transport": transport, "grade": grade}


def test_suspects_are_errors_and_the_failed_case_before_them_on_that_transport() -> None:
    records = [_record("a", "tcp", "PASSED"), _record("a", "ws", "FAILED"),
               _record("b", "tcp", "FAILED"), _record("b", "ws", "PASSED"),   # the server died here
               _record("c", "tcp", "ERROR"), _record("c", "ws", "PASSED"),
               _record("d", "tcp", "ERROR"), _record("e", "ws", "FAILED")]
    assert table.suspects(records) == ["rsocket/b", "rsocket/c", "rsocket/d"]


def test_a_passing_case_before_an_error_is_not_run_again() -> None:
    records = [_record("a", "tcp", "PASSED"), _record("b", "tcp", "ERROR")]
    assert table.suspects(records) == ["rsocket/b"]


def _write(folder: Path, records: list[dict]) -> None:
    folder.mkdir(parents=True)
    (folder / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def test_a_rerun_replaces_the_first_grade_unless_it_is_an_error(tmp_path: Path) -> None:
    _write(tmp_path / "lib", [_record("b", "tcp", "FAILED"), _record("c", "tcp", "ERROR"),
                              _record("d", "tcp", "ERROR")])
    _write(tmp_path / "lib.rerun-00", [_record("b", "tcp", "PASSED"), _record("b", "ws", "PASSED")])
    _write(tmp_path / "lib.rerun-01", [_record("c", "tcp", "FAILED")])
    _write(tmp_path / "lib.rerun-02", [_record("d", "tcp", "ERROR")])
    assert table.grades(tmp_path, "lib") == {"rsocket/b": {"tcp": "PASSED", "ws": "PASSED"},
                                             "rsocket/c": {"tcp": "FAILED"}, "rsocket/d": {"tcp": "ERROR"}}


def test_a_rerun_grades_only_the_case_it_was_for(tmp_path: Path) -> None:
    # -k rsocket/b also ran rsocket/b-long, whose first run's grade stands
    _write(tmp_path / "lib", [_record("b", "tcp", "ERROR"), _record("b-long", "tcp", "FAILED")])
    _write(tmp_path / "lib.rerun-00", [_record("b", "tcp", "PASSED"), _record("b-long", "tcp", "PASSED")])
    (tmp_path / "lib.rerun-00" / table.RERUN_CASE).write_text("rsocket/b")
    assert table.grades(tmp_path, "lib") == {"rsocket/b": {"tcp": "PASSED"}, "rsocket/b-long": {"tcp": "FAILED"}}


def test_a_cell_names_its_references_beside_every_grade_but_passed() -> None:
    assert table.cell_text({"tcp": "FAILED", "ws": "FAILED"}, ["F-X-1"]) == "FAILED (F-X-1)"
    assert table.cell_text({"tcp": "FAILED", "ws": "PASSED"}, ["F-X-1"]) == "tcp: FAILED (F-X-1); ws: PASSED"
    assert table.cell_text({"tcp": "INFORMATIONAL"}, ["N-X-1"]) == "INFORMATIONAL (N-X-1)"
    assert table.cell_text({"tcp": "PASSED"}, ["F-X-1"]) == "PASSED"


def test_a_variant_run_grades_the_cases_it_ran_in_its_library_column(tmp_path: Path) -> None:
    column = "rsocket-js 1.0.0-alpha.3"
    (name, _), [(variant, image, keyword)] = table.LIBRARIES[column], table.VARIANTS[column]
    assert variant != name and "resume" in image and keyword == "rsocket/handshake/resume-"
    _write(tmp_path / name, [_record("handshake/resume-requested", "tcp", "UNSUPPORTED"),
                             _record("handshake/setup-then-request", "tcp", "PASSED")])
    _write(tmp_path / variant, [_record("handshake/resume-requested", "tcp", "PASSED"),
                                _record("handshake/resume-after-setup", "tcp", "ERROR")])
    _write(tmp_path / f"{variant}.rerun-00", [_record("handshake/resume-after-setup", "tcp", "NON-STRICT")])
    assert table.column_grades(tmp_path, column) == {
        "rsocket/handshake/resume-requested": {"tcp": "PASSED"},
        "rsocket/handshake/setup-then-request": {"tcp": "PASSED"},
        "rsocket/handshake/resume-after-setup": {"tcp": "NON-STRICT"}}
    # each run in order, the variant right after its library's, with its -k expression
    runs = table._runs()
    at = runs.index((column, name, table.LIBRARIES[column][1], None))
    assert runs[at + 1] == (column, variant, image, keyword)


def test_whether_a_cell_passes_ignores_the_references_in_brackets() -> None:
    assert table._passes("PASSED") and table._passes("INFORMATIONAL (N-JS0-2)")
    assert table._passes("tcp: PASSED; ws: INFORMATIONAL (N-X-1)")
    assert not table._passes("UNSUPPORTED (N-JS1-1, F-JS1-11)") and not table._passes("tcp: PASSED; ws: FAILED (F-X-1)")
    assert not table._passes("")


def test_run_k_selects_cases_and_narrows_a_variant_to_them(tmp_path: Path, monkeypatch) -> None:
    calls = []
    monkeypatch.setattr(table, "_conformance", lambda *args: calls.append(args) or 0)
    table.run(tmp_path, "rsocket-js 1.0.0-alpha.3", "new-case")
    keywords = [args[args.index("-k") + 1] if "-k" in args else None for args in calls]
    assert keywords == ["new-case", "(rsocket/handshake/resume-) and (new-case)"]
    calls.clear()
    table.run(tmp_path, "rsocket-py", None)  # no -k: the whole suite, as before
    assert len(calls) == 1 and "-k" not in calls[0]
