"""Reading records: line numbers, validation, and agreement with the JSON schema."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import jsonschema
import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed: pip install .[report]")

from report_fixtures import record  # noqa: E402

from reports.load_records import checkpointed, read_records  # noqa: E402
from reports.record_schema import default_schema_path, load_schema  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def _good(i: int = 0) -> dict:
    return record("r1", f"2026-01-01T10:00:{i % 60:02d}Z", "alpha", "1.0", "stmp/handshake/version-ok", "PASSED")


def _errors(spark, files: list[Path]) -> dict[tuple[str, int], str | None]:
    rows = read_records(spark, files, load_schema()).select("sourceFile", "line", "error").collect()
    return {(r.sourceFile, r.line): r.error for r in rows}


def test_bad_lines_are_kept_with_file_line_and_reason(spark, tmp_path: Path) -> None:
    missing_grade = _good()
    del missing_grade["grade"]
    lines = [
        json.dumps(_good()),  # 1
        "",  # 2: blank, not a record
        '{"schemaVersion": 1, "run": ',  # 3: truncated JSON
        json.dumps(missing_grade),  # 4
        json.dumps({**_good(), "grade": 7}),  # 5
        json.dumps([1, 2]),  # 6
        json.dumps({**_good(), "durationMs": -3}),  # 7
        json.dumps(_good()) + " trailing",  # 8
        json.dumps(_good()) + json.dumps(_good()),  # 9: two records run together
        json.dumps(_good()).replace('"', "'"),  # 10: not JSON, though Spark's reader allows it
    ]
    path = tmp_path / "run a+b" / "records.jsonl"
    path.parent.mkdir()
    path.write_text("\r\n".join(lines) + "\r\n", encoding="utf-8")
    errors = _errors(spark, [path])
    f = str(path)
    assert set(errors) == {(f, n) for n in (1, 3, 4, 5, 6, 7, 8, 9, 10)}
    assert errors[(f, 1)] is None
    assert errors[(f, 3)] == "not valid JSON"
    assert errors[(f, 4)] == "missing required field 'grade'"
    assert errors[(f, 5)] == "field 'grade' 7: expected string"
    assert errors[(f, 6)] == "not a JSON object (got array<bigint>)"
    assert errors[(f, 7)] == "field 'durationMs' -3: less than 0"
    assert errors[(f, 8)] == errors[(f, 9)] == errors[(f, 10)] == "not valid JSON"


def test_records_are_kept_and_only_the_rare_lines_meet_the_full_checks(spark, tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    extra = json.dumps({**_good(2), "extra": 1})  # valid, but not as the writers write it: the full checks take it
    path.write_text(json.dumps(_good()) + "\nnot json\n" + json.dumps(_good(1)) + "\n" + extra + "\n", encoding="utf-8")
    kept = []

    def keep(frame):
        kept.append(frame)
        return checkpointed(frame)

    records = read_records(spark, [path], load_schema(), keep=keep)

    def plan(frame) -> str:
        return frame._jdf.queryExecution().analyzed().toString()

    # The plan the later queries build on no longer holds the validation (its JSON parses).
    assert "from_json" not in plan(records)
    # The pass over every line parses each once, into strings; the VARIANT parse, the per-field
    # JSON types and the trailing-garbage check are in the frame of the lines it did not take.
    every_line, rare_lines = kept
    assert "from_json" in plan(every_line)
    assert all(f not in plan(every_line) for f in ("variant", "_single"))
    assert all(f in plan(rare_lines) for f in ("schema_of_variant", "_single"))
    assert sorted((r.line, r.error, r.grade) for r in records.select("line", "error", "grade").collect()) == [
        (1, None, "PASSED"), (2, "not valid JSON", None), (3, None, "PASSED"), (4, None, "PASSED")
    ]
    assert sorted(r.line for r in rare_lines.select("line").collect()) == [2, 4]


def test_line_numbers_survive_files_split_into_many_chunks(spark, tmp_path: Path) -> None:
    bad_lines = {"first": {7, 150, 199}, "second": {1, 42}}
    files = []
    for name, bad in bad_lines.items():
        lines = ["not json" if n in bad else json.dumps(_good(n)) for n in range(1, 201)]
        path = tmp_path / name / "records.jsonl"
        path.parent.mkdir()
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        files.append(path)
    # Small splits put each file into many chunks, read by different tasks.
    spark.conf.set("spark.sql.files.maxPartitionBytes", "4096")
    spark.conf.set("spark.sql.files.openCostInBytes", "1024")
    try:
        assert read_records(spark, files, load_schema()).rdd.getNumPartitions() > 20
        errors = _errors(spark, files)
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
        spark.conf.unset("spark.sql.files.openCostInBytes")
    for path, (name, bad) in zip(files, bad_lines.items(), strict=True):
        numbered = {line: err for (f, line), err in errors.items() if f == str(path)}
        assert sorted(numbered) == list(range(1, 201)), name
        assert {line for line, err in numbered.items() if err is not None} == bad, name


def _variants() -> list[dict]:
    """Records that probe each keyword the schema uses, valid and not."""
    base = _good()
    out = [base]
    for field in base:
        missing = dict(base)
        del missing[field]
        out.append(missing)
    changes = {
        "schemaVersion": [2, "1", 1.0, 1.5, None],
        "run": ["", 5, None],
        "time": ["2026-01-01T10:00:00.123+02:00", "2026-01-01 10:00:00", "yesterday", 20260101],
        "implementationVersion": ["", "unknown"],
        "protocol": ["mtl", "http", "STMP"],
        "requirement": ["MAY", "INFO", "must", None],
        "grade": ["NON-STRICT", "NOT-APPLICABLE", "passed", True],
        "closeGrade": [None, "ERROR", "BOGUS", 3],
        "message": ["", ["a"], {"a": 1}],
        "durationMs": [0, 0.25, 1e6, -0.001, "12", None],
        "wirelog": [None, "wirelogs/x.log", 1, False],
        "case": ["", "stmp/x/y"],
        "extraField": ["newer writers may add fields"],
    }
    for field, values in changes.items():
        for value in values:
            changed = copy.deepcopy(base)
            changed[field] = value
            out.append(changed)
    return out


# The ways a records line is written: schema order (as the dict is built), sorted keys (as
# conformance.records writes), compact with raw non-ASCII. The first two take the fast path.
_WRITERS = {
    "schema order": json.dumps,
    "sorted": lambda v: json.dumps(v, sort_keys=True),
    "compact": lambda v: json.dumps(v, separators=(",", ":"), ensure_ascii=False),
}


@pytest.mark.parametrize("writer", list(_WRITERS))
def test_spark_validation_agrees_with_jsonschema(spark, tmp_path: Path, writer: str) -> None:
    schema = json.loads(default_schema_path().read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    variants = [*_variants(), {**_good(), "message": 'quote " backslash \\ tab \t \u00e9 \u2028 \U0001f600'}]
    path = tmp_path / "records.jsonl"
    path.write_text("\n".join(_WRITERS[writer](v) for v in variants) + "\n", encoding="utf-8")
    errors = _errors(spark, [path])
    expected_valid = [validator.is_valid(v) for v in variants]
    got_valid = [errors[(str(path), i + 1)] is None for i in range(len(variants))]
    mismatches = [
        (variants[i], errors[(str(path), i + 1)]) for i in range(len(variants)) if expected_valid[i] != got_valid[i]
    ]
    assert mismatches == []
    # Both kinds are present, so the comparison above means something.
    assert 10 < sum(expected_valid) < len(variants) - 30


def test_impossible_dates_are_rejected_like_format_date_time(spark, tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    path.write_text(json.dumps({**_good(), "time": "2026-13-01T10:00:00Z"}) + "\n", encoding="utf-8")
    assert _errors(spark, [path])[(str(path), 1)] == "field 'time' \"2026-13-01T10:00:00Z\": not a valid date-time"


def test_schema_declares_exactly_the_fields_of_docs_records_md() -> None:
    doc = (REPO / "docs" / "records.md").read_text(encoding="utf-8")
    documented = re.findall(r"^\| `(\w+)` \|", doc, flags=re.MULTILINE)
    schema = load_schema()
    assert len(documented) == 19
    assert list(schema["properties"]) == documented
    assert schema["required"] == documented


def test_unsupported_schema_keywords_are_refused(tmp_path: Path) -> None:
    schema = json.loads(default_schema_path().read_text(encoding="utf-8"))
    schema["properties"]["run"]["maxLength"] = 10
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(schema), encoding="utf-8")
    from reports.record_schema import record_error

    with pytest.raises(ValueError, match="maxLength"):
        record_error(load_schema(path), "_f", "value")


def test_fast_path_takes_well_formed_lines_and_only_them(spark) -> None:
    """The whole-line pattern accepts a record as the writers write it, and sends anything unusual to
    the full checks (which the jsonschema agreement above holds to the schema)."""
    from pyspark.sql import functions as F

    from reports.record_schema import fast_line_pattern

    good = _good()
    lines = {
        "schema order": (json.dumps(good), True),
        "sorted keys": (json.dumps(good, sort_keys=True), True),
        "compact": (json.dumps(good, separators=(",", ":")), True),
        "escapes": (json.dumps({**good, "message": 'a "b" \\ \u00e9'}), True),
        "escapes only": (json.dumps({**good, "message": '\\"\\'}), True),
        "raw control character": (json.dumps(good).replace('"message": "', '"message": "\t'), False),
        "unknown escape": (json.dumps(good).replace('"message": "', '"message": "\\x'), False),
        "short unicode escape": (json.dumps(good).replace('"message": "', '"message": "\\u12'), False),
        "extra field": (json.dumps({**good, "extra": 1}), False),
        "trailing junk": (json.dumps(good) + " x", False),
        "two records": (json.dumps(good) * 2, False),
        "number as string": (json.dumps({**good, "durationMs": "5"}), False),
        "string as number": (json.dumps({**good, "run": 5}), False),
        "null where not allowed": (json.dumps({**good, "grade": None}), False),
        "missing field": (json.dumps({k: v for k, v in good.items() if k != "wirelog"}), False),
        "duplicate key": (json.dumps(good)[:-1] + ', "wirelog": null}', False),
        "single quotes": (json.dumps(good).replace('"', "'"), False),
    }
    pattern = fast_line_pattern(load_schema())
    frame = spark.createDataFrame([(name, line) for name, (line, _) in lines.items()], "name string, line string")
    got = {r.name: r.fast for r in frame.select("name", F.col("line").rlike(pattern).alias("fast")).collect()}
    assert got == {name: expected for name, (_, expected) in lines.items()}


def _layouts(record: dict) -> dict[str, str]:
    """A record as the writers lay it out (the fast path's exact comparison knows these two)."""
    return {
        "compact, schema order": json.dumps(record, separators=(",", ":"), ensure_ascii=False),
        "json.dumps(sort_keys=True)": json.dumps(record, sort_keys=True),
    }


def _shapes(spark, lines: list[str]) -> list[tuple[bool, bool]]:
    """Per line: (the layout comparison proves it, the whole-line pattern accepts it)."""
    from pyspark.sql import functions as F

    from reports.load_records import _staged
    from reports.record_schema import _texts, fast_layout_match, fast_line_pattern

    schema = load_schema()
    frame = spark.createDataFrame([(i, line) for i, line in enumerate(lines)], "i int, value string")
    staged = _staged(frame, _texts(schema, "value")).select(
        "i", F.expr(fast_layout_match(schema, "value")).alias("layout"),
        F.col("value").rlike(fast_line_pattern(schema)).alias("pattern"))
    return [(r.layout, r.pattern) for r in sorted(staged.collect())]


def test_layout_comparison_takes_the_writers_lines(spark) -> None:
    good = _good()
    lines = [*_layouts(good).values(), *_layouts({**good, "closeGrade": "PASSED", "durationMs": 0.25}).values(),
             *_layouts({**good, "message": "caf\u00e9 \U0001f600", "durationMs": 1200}).values()]
    # json.dumps escapes non-ASCII (ensure_ascii): a line with escapes is left to the pattern
    assert _shapes(spark, lines) == [(True, True)] * 5 + [(False, True)]


def test_layout_comparison_never_proves_what_the_pattern_refuses(spark) -> None:
    """Each field given values of every JSON type (and strings that read as other types), in both
    layouts, plus lines broken around the record: whatever the comparison proves, the whole-line
    pattern (the proof it replaces on the common path) proves too, and for the writers' lines of
    well-typed records it does prove it."""
    good = _good()
    odd_values = [5, -0.5, 1.0, 1e-05, 12345678901234567890, True, False, None, [], ["a"], {}, {"a": 1},
                  "", "5", "-0.5", "true", "null", "[1]", '{"a":1}', 'a"b', "a\\b", "caf\u00e9", "x,\"y\":1"]
    records = [{**good, field: value} for field in good for value in odd_values]
    records += [{k: v for k, v in good.items() if k != field} for field in good]
    records += [{**good, "extra": 1}, {"extra": 1, **good}]
    lines = [line for record in records for line in _layouts(record).values()]
    for line in _layouts(good).values():
        lines += [line + " ", " " + line, line + line, line + "x", line[:-1] + ',"wirelog":null}',
                  line[:-1] + ', "wirelog": "w"}', line.replace("{", "[", 1), line.replace(":", " :", 1)]
    shapes = _shapes(spark, lines)
    wrongly_proven = [line for line, (layout, pattern) in zip(lines, shapes) if layout and not pattern]
    assert wrongly_proven == []
    # the comparison does its job: most well-typed variants are proven by it, not only by the pattern
    assert 100 < sum(layout for layout, _ in shapes) < sum(pattern for _, pattern in shapes) + 1
