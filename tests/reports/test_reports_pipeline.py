"""The report over the fixed runs of report_fixtures.py, against hand-worked answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed: pip install .[report]")

from report_fixtures import (  # noqa: E402
    EXPECTED_MATRIX,
    INTERVAL,
    OK,
    UNSUP,
    read_json_table,
    record,
    write_run,
)

from reports import tables  # noqa: E402
from reports.baseline import BaselineError, baseline_records  # noqa: E402
from reports.load_records import read_records  # noqa: E402
from reports.pipeline import InputError, ReportOptions, run_report  # noqa: E402
from reports.record_schema import load_schema  # noqa: E402
from reports.summary_text import format_summary  # noqa: E402


def test_matrix_holds_the_latest_run_per_implementation_and_case(report) -> None:
    _, out = report
    rows = read_json_table(out, "matrix")
    assert {(r["implementation"], r["case"], r["transport"]): (r["grade"], r["run"]) for r in rows} == EXPECTED_MATRIX
    assert len(rows) == len(EXPECTED_MATRIX)


def test_compliance_levels_and_grade_counts(report) -> None:
    summary, _ = report
    by_impl = {i["implementation"]: i for i in summary["implementations"]}
    assert {name: i["level"] for name, i in by_impl.items()} == {
        "alpha": "non-compliant",
        # Its SHOULD finding would make it "compliant with non-strict findings", but the stmp
        # catalogue lists two MUST cases (not-in-any-run, x/other) that beta never ran.
        "beta": "not fully tested",
        "gamma": "fully compliant",  # its ERROR is on an INFO case, UNSUPPORTED on a MAY case
    }
    # stmp MUST cases: version-ok and version-unsupported (recorded) and the two catalogued ones.
    assert {name: i["must"] for name, i in by_impl.items()} == {
        "alpha": {"mustCases": 4, "mustPassed": 0, "mustFailed": 2, "mustNotTested": 2, "mustNotApplicable": 0},
        "beta": {"mustCases": 4, "mustPassed": 2, "mustFailed": 0, "mustNotTested": 2, "mustNotApplicable": 0},
        "gamma": {"mustCases": 1, "mustPassed": 1, "mustFailed": 0, "mustNotTested": 0, "mustNotApplicable": 0},
    }
    nonzero = {name: {g: n for g, n in i["grades"].items() if n} for name, i in by_impl.items()}
    assert nonzero == {
        "alpha": {"ERROR": 1, "FAILED": 1, "PASSED": 1, "INFORMATIONAL": 1},
        "beta": {"PASSED": 3, "NON-STRICT": 1, "INFORMATIONAL": 1},
        "gamma": {"PASSED": 2, "UNSUPPORTED": 1, "ERROR": 1},
    }
    assert by_impl["alpha"]["version"] == "1.1"
    assert {g: n for g, n in summary["gradeCounts"].items() if n} == {
        "PASSED": 6,
        "FAILED": 1,
        "NON-STRICT": 1,
        "INFORMATIONAL": 2,
        "UNSUPPORTED": 1,
        "ERROR": 2,
    }


def test_regressions_and_new_passes_against_baseline_folder(report) -> None:
    _, out = report
    regressions = {
        (r["implementation"], r["case"], r["baselineGrade"], r["grade"]) for r in read_json_table(out, "regressions")
    }
    assert regressions == {("alpha", OK, "PASSED", "ERROR"), ("alpha", UNSUP, "PASSED", "FAILED")}
    new_passes = {(r["implementation"], r["case"], r["baselineGrade"]) for r in read_json_table(out, "new_passes")}
    assert new_passes == {("alpha", INTERVAL, "NON-STRICT")}


def test_baseline_given_as_run_id_gives_the_same_findings(spark, fixture_root: Path) -> None:
    schema = load_schema()
    records = read_records(spark, sorted((fixture_root / "runs").glob("*/records.jsonl")), schema)
    valid = records.where("error IS NULL")
    matrix = tables.matrix(valid, None)
    base = baseline_records(spark, "a1", valid, schema)
    assert {(r.case, r.grade) for r in tables.regressions(matrix, base).collect()} == {(OK, "ERROR"), (UNSUP, "FAILED")}
    assert {r.case for r in tables.new_passes(matrix, base).collect()} == {INTERVAL}
    with pytest.raises(BaselineError, match="no-such-run"):
        baseline_records(spark, "no-such-run", valid, schema)


@pytest.mark.parametrize("broadcast_keys", [tables.MIXED_KEYS_BROADCAST, 0])
def test_flaky_equals_its_definition_on_random_records(spark, monkeypatch, broadcast_keys) -> None:
    """Flaky by its definition, in plain Python: per implementation version, case and transport, the runs'
    worst grades (a run may grade a case more than once) are not all one grade. Both ways of taking the keys
    with two grades (sent whole, or joined by shuffle) give it."""
    import random

    from reports.grades import WORST_FIRST

    monkeypatch.setattr(tables, "MIXED_KEYS_BROADCAST", broadcast_keys)
    rng = random.Random(17)
    key_names = ["implementation", "implementationVersion", "protocol", "case", "transport"]
    rows = []
    for _ in range(3000):
        key = (rng.choice("ab"), rng.choice(["1.0", "2.0"]), "stmp", f"stmp/x/c{rng.randrange(40)}", rng.choice(["tcp", "ws"]))
        grade = rng.choice(["PASSED"] * 6 + ["FAILED", "ERROR", "NON-STRICT"])
        rows.append((*key, f"r{rng.randrange(6)}", grade, "x"))
    frame = spark.createDataFrame(rows, [*key_names, "run", "grade", "family"])
    worst: dict[tuple, dict[str, str]] = {}
    for *key, run, grade, _family in rows:
        per_run = worst.setdefault(tuple(key), {})
        if run not in per_run or WORST_FIRST.index(grade) < WORST_FIRST.index(per_run[run]):
            per_run[run] = grade
    expected = {key: (len(runs), sorted(set(runs.values()))) for key, runs in worst.items() if len(set(runs.values())) > 1}
    got = {tuple(r[k] for k in key_names): (r["runs"], list(r["grades"])) for r in tables.flaky(frame).collect()}
    assert got == expected and len(expected) > 10


def test_flaky_cases_are_grade_changes_within_one_version(report) -> None:
    _, out = report
    flaky = [
        (r["implementation"], r["implementationVersion"], r["case"], r["grades"], r["runs"])
        for r in read_json_table(out, "flaky")
    ]
    # alpha 1.0 version-ok and interval kept their grades; the changes at 1.1
    # are a new version; beta's two interval grades are in one run.
    assert flaky == [("alpha", "1.0", UNSUP, ["FAILED", "PASSED"], 2)]


def test_duration_median_and_p95(report) -> None:
    _, out = report
    rows = {(r["implementation"], r["case"]): r for r in read_json_table(out, "durations")}
    ok = rows[("alpha", OK)]
    # 10, 20, 40 ms: median 20; p95 at rank 1.9 is 20 + 0.9 * (40 - 20).
    assert (ok["samples"], ok["medianMs"], ok["p95Ms"], ok["maxMs"]) == (3, 20.0, pytest.approx(38.0), 40.0)
    assert rows[("beta", INTERVAL)]["samples"] == 2


def test_must_coverage_from_the_catalogue(report) -> None:
    summary, out = report
    cov = {(c["protocol"], c["implementation"]): c for c in summary["coverage"]}
    stmp = cov[("stmp", None)]
    assert (stmp["status"], stmp["mustTotal"], stmp["mustCovered"], stmp["mustUntestable"]) == ("known", 4, 2, 1)
    assert stmp["coverage"] == 0.5
    assert stmp["uncovered"] == ["STMP-2", "STMP-3"]
    # alpha's version-ok cell is an ERROR: the case did not run, so STMP-1 is not tested on alpha.
    assert (cov[("stmp", "alpha")]["mustCovered"], cov[("stmp", "alpha")]["uncovered"]) == (
        1, ["STMP-1", "STMP-2", "STMP-3"],
    )
    assert cov[("stmp", "beta")]["uncovered"] == ["STMP-2", "STMP-3"]
    assert (cov[("micromessage2", None)]["status"], cov[("micromessage2", None)]["mustTotal"]) == ("unknown", None)
    rsio = cov[("rsio", None)]
    assert rsio["status"] == "unknown" and "level must be one of" in rsio["reason"]
    assert {(r["protocol"], r["implementation"]): r["status"] for r in read_json_table(out, "coverage")} == {
        ("stmp", None): "known",
        ("stmp", "alpha"): "known",
        ("stmp", "beta"): "known",
        ("micromessage2", None): "unknown",
        ("rsio", None): "unknown",
    }


def test_cells_link_to_their_allure_result_in_the_same_run(report) -> None:
    summary, out = report
    cells = {(r["implementation"], r["case"]): r for r in read_json_table(out, "matrix")}
    unsup = cells[("alpha", UNSUP)]
    assert (unsup["allureUuid"], unsup["attachments"]) == ("u-unsup", 2)  # one on the result, one in a nested step
    assert unsup["allureFile"].endswith("/a2/allure-results/u-unsup-result.json")
    # a2 has an Allure result for version-ok too, but the cell comes from a3.
    assert (cells[("alpha", OK)]["allureUuid"], cells[("alpha", OK)]["attachments"]) == (None, 0)
    assert summary["allure"]["results"] == 2 and summary["allure"]["unreadable"] == 0


def test_outputs_on_disk(report, spark) -> None:
    summary, out = report
    assert json.loads((out / "summary.json").read_text(encoding="utf-8"))["records"] == {
        "valid": 19,
        "invalid": 0,
        "files": 5,
    }
    assert summary["runs"] == 5
    for table in ("matrix", "compliance", "durations", "flaky", "regressions", "new_passes", "coverage", "runs"):
        assert (out / "parquet" / table / "_SUCCESS").is_file(), table
        assert list((out / "json" / table).glob("part-*.json")), table
    assert sorted(p.name for p in (out / "parquet" / "matrix").glob("protocol=*")) == [
        "protocol=micromessage2",
        "protocol=stmp",
    ]
    stmp = spark.read.parquet(str(out / "parquet" / "matrix")).where("protocol = 'stmp'")
    assert stmp.count() == 9
    assert (out / "matrix.html").is_file()


def test_malformed_records_are_reported_with_path_and_line(spark, tmp_path: Path) -> None:
    good = record("m1", "2026-02-01T00:00:00Z", "delta", "1", OK, "PASSED")
    no_case = {k: v for k, v in good.items() if k != "case"}
    run = write_run(tmp_path / "runs", "m1", [good, no_case], extra_lines={2: "{oops"})
    summary = run_report(spark, ReportOptions([str(run)], tmp_path / "out", requirements_dir=None, profiles_dir=None))
    path = str(run / "records.jsonl")
    assert summary["records"] == {"valid": 1, "invalid": 2, "files": 1}
    assert summary["invalidRecords"] == [
        {"file": path, "line": 2, "error": "not valid JSON"},
        {"file": path, "line": 3, "error": "missing required field 'case'"},
    ]
    text = format_summary(summary)
    assert f"invalid record {path}:2: not valid JSON" in text
    assert "delta 1: fully compliant" in text
    assert {(r["sourceFile"], r["line"]) for r in read_json_table(tmp_path / "out", "invalid_records")} == {
        (path, 2),
        (path, 3),
    }


def test_inputs_must_exist(spark, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not-there"):
        run_report(spark, ReportOptions([str(tmp_path / "not-there")], tmp_path / "out"))


def test_tcp_only_server_is_judged_on_tcp_and_unsupported_musts_are_not_tested(spark, tmp_path: Path) -> None:
    """A target without WebSocket records every case NOT-APPLICABLE on ws (the plugin does so)."""
    tcp_only = []
    for case in (OK, UNSUP):
        tcp_only.append(record("t1", "2026-03-01T10:00:00Z", "tcponly", "1", case, "PASSED"))
        # Later than the tcp record, so neither the time nor the grade order may pick it.
        tcp_only.append(record("t1", "2026-03-01T10:00:05Z", "tcponly", "1", case, "NOT-APPLICABLE", transport="ws"))
    declines = [
        record("d1", "2026-03-01T11:00:00Z", "declines", "1", OK, "PASSED"),
        record("d1", "2026-03-01T11:00:01Z", "declines", "1", UNSUP, "UNSUPPORTED"),
    ]
    runs = [write_run(tmp_path / "runs", "t1", tcp_only), write_run(tmp_path / "runs", "d1", declines)]
    out = tmp_path / "out"
    options = ReportOptions([str(r) for r in runs], out, requirements_dir=None, profiles_dir=None)
    summary = run_report(spark, options)
    by_impl = {i["implementation"]: i for i in summary["implementations"]}
    assert by_impl["tcponly"]["level"] == "fully compliant"
    assert {g: n for g, n in by_impl["tcponly"]["grades"].items() if n} == {"PASSED": 2, "NOT-APPLICABLE": 2}
    assert by_impl["tcponly"]["must"]["mustPassed"] == 2
    # Nothing failed, but one MUST case did not run: no claim of full compliance.
    assert by_impl["declines"]["level"] == "not fully tested"
    assert by_impl["declines"]["must"]["mustNotTested"] == 1
    cells = {(r["implementation"], r["case"], r["transport"]): r["grade"] for r in read_json_table(out, "matrix")}
    assert cells[("tcponly", OK, "tcp")] == "PASSED" and cells[("tcponly", OK, "ws")] == "NOT-APPLICABLE"
    levels = {(r["implementation"], r["protocol"]): r["level"] for r in read_json_table(out, "compliance")}
    assert levels == {("tcponly", "stmp"): "fully compliant", ("declines", "stmp"): "not fully tested"}
    assert "tcponly 1: fully compliant (MUST cases 2: 2 passed" in format_summary(summary)


def test_runs_are_counted_once_whatever_the_protocols_they_cover(spark, tmp_path: Path) -> None:
    """The main job: one `run all` over two protocols and one single-protocol run are 2 runs
    (the runs table keeps a row per protocol of a run: 3 rows)."""
    mm2 = "micromessage2/handshake/hello"
    everything = [record("all1", "2026-04-01T10:00:00Z", "ref", "1", OK, "PASSED"),
                  record("all1", "2026-04-01T10:00:01Z", "ref", "1", mm2, "PASSED")]
    third = [record("one1", "2026-04-01T11:00:00Z", "peer", "1", OK, "PASSED")]
    runs = [write_run(tmp_path / "runs", "all1", everything), write_run(tmp_path / "runs", "one1", third)]
    out = tmp_path / "out"
    summary = run_report(spark, ReportOptions([str(r) for r in runs], out, requirements_dir=None, profiles_dir=None))
    assert summary["runs"] == 2
    assert "2 runs" in format_summary(summary)
    assert "valid records in 2 runs;" in (out / "matrix.html").read_text(encoding="utf-8")
    assert len(read_json_table(out, "runs")) == 3


def test_the_report_names_its_stages_on_stderr(spark, fixture_root: Path, tmp_path: Path, capsys) -> None:
    run_report(spark, ReportOptions(inputs=[str(fixture_root / "runs")], out=tmp_path / "out",
                                    baseline=str(fixture_root / "runs" / "a1"),
                                    requirements_dir=fixture_root / "requirements", profiles_dir=None))
    steps = [line for line in capsys.readouterr().err.splitlines() if line.startswith("[")]
    assert [line.split(": ", 1)[1].split(" ")[0] for line in steps] == [
        "reading", "matrix,", "baseline:", "compliance", "summary", "matrix"]
    assert steps[0].startswith("[1/6] report: ") and steps[-1].startswith("[6/6] report: ")
