"""docs/findings/rsocket.md, "Every case on the three libraries": the per-case table stays honest
without docker. Every rsocket case id of scenarios/rsocket is a row (and no row names a case that is
gone), every grade cell holds real grades, every finding or note a cell names is written up on the
page, every cell that does not pass names what explains it (a FAILED, NON-STRICT or ERROR cell a
finding, whose wire log subsection quotes the frames of a case it covers), and a case that passes
(PASSED or INFORMATIONAL on every transport) on none of the three libraries has a written reason,
while one that passes somewhere has none."""

from __future__ import annotations

import re

import pytest
import yaml

from conformance.paths import docs_dir, scenarios_dir

PAGE = docs_dir() / "findings" / "rsocket.md"
LIBRARIES = ("rsocket-py 0.4.20", "rsocket-js 0.0.27", "rsocket-js 1.0.0-alpha.3")
GRADES = ("PASSED", "FAILED", "NON-STRICT", "INFORMATIONAL", "UNSUPPORTED", "NOT-APPLICABLE", "ERROR")
PASSING = {"PASSED", "INFORMATIONAL"}
REF = r"(?:F|N)-[A-Z0-9]+-\d+"
# a cell: one grade for every transport the case ran on, or "tcp: GRADE; ws: GRADE" when they
# differ; each grade may name the findings (F-...) or notes (N-...) that explain it, in brackets
PART = rf"(?:(?:tcp|ws): )?(?:{'|'.join(GRADES)})(?: \({REF}(?:, {REF})*\))?"
CELL = re.compile(rf"{PART}(?:; {PART})*")


def _cells(line: str) -> list[str]:
    # a table cell ends at a "|" that is not escaped ("\\|" is a pipe inside a cell, GFM)
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip().strip("|"))]


def _table() -> tuple[list[str], dict[str, list[str]]]:
    """(the header's cells, case id -> its row's cells) of the per-case table."""
    text = PAGE.read_text(encoding="utf-8")
    section = text.split("## Every case on the three libraries", 1)
    assert len(section) == 2, "the per-case section is missing"
    header, rows = None, {}
    for line in section[1].split("\n## ", 1)[0].splitlines():
        if not line.startswith("|"):
            continue
        cells = _cells(line)
        if header is None:
            header = cells
        elif match := re.fullmatch(r"`(rsocket/[a-z0-9/-]+)`", cells[0]):
            assert match.group(1) not in rows, f"{match.group(1)} has two rows"
            rows[match.group(1)] = cells
    assert header is not None
    return header, rows


def _case_ids() -> list[str]:
    ids = []
    for path in sorted((scenarios_dir() / "rsocket").glob("*.yaml")):
        ids += [case["id"] for case in yaml.safe_load(path.read_text(encoding="utf-8"))["cases"]]
    assert len(ids) >= 100
    return ids


def test_header_names_the_three_libraries_and_a_reason_column() -> None:
    header, _ = _table()
    assert header[1:4] == list(LIBRARIES)
    assert len(header) == 5


def test_every_case_has_exactly_one_row() -> None:
    _, rows = _table()
    ids = _case_ids()
    assert not set(ids) - set(rows), "cases without a row"
    assert not set(rows) - set(ids), "rows for cases that no longer exist"


def test_cells_hold_grades_and_known_references() -> None:
    _, rows = _table()
    text = PAGE.read_text(encoding="utf-8")
    # a finding is a row of a library's table; a note a "- **N-...**" item of the notes list
    written = set(re.findall(r"^\| (F-[A-Z0-9]+-\d+) \|", text, flags=re.M))
    written |= set(re.findall(r"^- \*\*(N-[A-Z0-9]+-\d+)\*\*", text, flags=re.M))
    for case, cells in rows.items():
        assert len(cells) == 5, case
        for cell in cells[1:4]:
            assert CELL.fullmatch(cell), f"{case}: {cell!r} is not a grade cell"
            assert not set(re.findall(REF, cell)) - written, f"{case}: {cell!r} names what the page does not write up"


def _passes(cell: str) -> bool:
    grades = re.findall("|".join(GRADES), re.sub(r"\([^)]*\)", "", cell))
    return bool(grades) and set(grades) <= PASSING


@pytest.mark.parametrize("case", _case_ids())
def test_a_case_passing_nowhere_has_a_reason(case: str) -> None:
    cells = _table()[1][case]
    reason = cells[4]
    if any(_passes(cell) for cell in cells[1:4]):
        assert not reason, f"{case} passes on a library: the reason column stays empty"
    else:
        assert len(reason) >= 20, f"{case} passes on none of the three libraries: say why"


def _wire_logs() -> dict[str, str]:
    """finding id -> the text of its "#### F-... wire log" subsection."""
    text = PAGE.read_text(encoding="utf-8")
    parts = re.split(r"^#### (F-[A-Z0-9]+-\d+) wire log$", text, flags=re.M)
    return {parts[i]: parts[i + 1].split("\n## ", 1)[0].split("\n### ", 1)[0] for i in range(1, len(parts), 2)}


def _parts(cell: str) -> list[tuple[str, set[str]]]:
    """(grade, the references beside it) for each transport part of a cell."""
    return [(m.group(1), set(re.findall(REF, m.group(2) or "")))
            for m in re.finditer(rf"({'|'.join(GRADES)})(?: \(([^)]*)\))?", cell)]


def test_every_cell_that_does_not_pass_names_a_finding_or_note() -> None:
    _, rows = _table()
    for case, cells in rows.items():
        for library, cell in zip(LIBRARIES, cells[1:4]):
            for grade, refs in _parts(cell):
                if grade in PASSING:
                    continue
                assert refs, f"{case} / {library}: {grade} names no finding or note"
                if grade in ("FAILED", "NON-STRICT", "ERROR"):
                    assert any(r.startswith("F-") for r in refs), \
                        f"{case} / {library}: {grade} names no finding (F-...), only notes"


def test_every_finding_a_cell_names_has_a_wire_log_of_its_cases() -> None:
    _, rows = _table()
    logs = _wire_logs()
    named: dict[str, set[str]] = {}
    for case, cells in rows.items():
        for cell in cells[1:4]:
            for ref in re.findall(r"F-[A-Z0-9]+-\d+", cell):
                named.setdefault(ref, set()).add(case)
    assert named
    for ref, cases in named.items():
        assert ref in logs, f"{ref} is named in the table but has no wire log subsection"
        log = logs[ref]
        blocks = re.findall(r"```text\n(.*?)```", log, flags=re.S)
        assert blocks, f"{ref}: the wire log subsection has no ```text block"
        frames = "\n".join(blocks)
        # frames on the wire, and the record of a case the finding covers
        assert re.search(r"^(>>|<<) ", frames, flags=re.M), f"{ref}: no frame in the wire log"
        quoted = set(re.findall(r"^# (rsocket/[a-z0-9/-]+) \[", frames, flags=re.M))
        assert quoted & cases, f"{ref}: the wire log quotes none of the cases that name it ({sorted(cases)})"
        for case in cases:
            assert f"`{case.split('/', 1)[1]}`" in log, f"{ref}: the wire log's case list leaves out {case}"


def test_every_finding_has_a_wire_log_with_frames_both_ways_or_a_silence() -> None:
    text = PAGE.read_text(encoding="utf-8")
    findings = set(re.findall(r"^\| (F-[A-Z0-9]+-\d+) \|", text, flags=re.M))
    logs = _wire_logs()
    assert findings == set(logs), f"findings without a wire log: {sorted(findings - set(logs))}; " \
                                  f"wire logs without a finding: {sorted(set(logs) - findings)}"
    for ref, log in logs.items():
        frames = "\n".join(re.findall(r"```text\n(.*?)```", log, flags=re.S))
        # the library's side: a frame it sent, its close, or the record saying nothing arrived
        assert re.search(r"^<< |peer closed|nothing arrived|cannot connect|Error: ", frames, flags=re.M), \
            f"{ref}: the wire log shows nothing from the library's side"
        assert re.search(r"library bug|peer-program limit|spec ambiguity", log), \
            f"{ref}: the wire log does not say what kind of finding it is"
