"""The static matrix.html page: a template filled from small collected aggregates.

Every string that reaches the page goes through ``esc`` (text and attribute
values) or ``href`` (links). The page needs no server: styles and the
sorting script are inline.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from string import Template
from urllib.parse import quote, urlsplit

from conformance.spec_links import public_spec_url, split_spec_ref
from reports.coverage import Coverage
from reports.grades import COUNT_COLUMN, WORST_FIRST

MISSING_SORT_KEY = len(WORST_FIRST)
NOT_TESTED = "not tested"
NOT_RUN = ("UNSUPPORTED", "NOT-APPLICABLE")  # grades that say why a case did not run
ANY_IMPLEMENTATION = "(any)"
# MUST cases per implementation (reports.compliance); "not tested" holds the
# not-applicable ones too, which alone do not stand in the way of full compliance.
MUST_HEADINGS = {
    "mustCases": "MUST cases",
    "mustPassed": "MUST passed",
    "mustFailed": "MUST failed or error",
    "mustNotTested": "MUST not tested",
    "mustNotApplicable": "of which not applicable",
}

GRADE_STYLE = {  # grade: (text colour, background)
    "PASSED": ("#0f5c2a", "#cdeed6"),
    "FAILED": ("#ffffff", "#c62828"),
    "NON-STRICT": ("#5c3900", "#ffd98a"),
    "INFORMATIONAL": ("#0b3d75", "#d3e5fb"),
    "UNSUPPORTED": ("#3f2a66", "#e3d9f6"),
    "NOT-APPLICABLE": ("#444444", "#e6e6e6"),
    "ERROR": ("#ffffff", "#6a1b4d"),
}

GRADE_MEANING = {
    "PASSED": "meets the requirement",
    "FAILED": "breaks a MUST",
    "NON-STRICT": "breaks a SHOULD",
    "INFORMATIONAL": "behaviour the spec leaves open",
    "UNSUPPORTED": "feature declared not implemented",
    "NOT-APPLICABLE": "case does not apply to this target",
    "ERROR": "the case could not run",
}


@dataclass(frozen=True)
class Cell:
    grade: str
    spec_ref: str
    spec: str
    message: str
    spec_href: str
    wirelog_href: str | None
    attachments: int


@dataclass(frozen=True)
class CaseRow:
    """One matrix row: a case on one transport."""

    family: str
    case: str
    transport: str
    requirement: str


@dataclass
class ProtocolMatrix:
    protocol: str
    implementations: list[str]
    cases: list[CaseRow]
    cells: dict[tuple[str, str, str], Cell]  # (implementation, case, transport) -> cell
    column_notes: dict[str, str] = field(default_factory=dict)  # implementation -> "version, level"
    spec_url: str = ""  # the spec's public page
    profile_href: str = ""  # our docs/profiles page: the reading the grades follow


@dataclass(frozen=True)
class ImplementationRow:
    name: str
    version: str
    level: str
    cells: int  # case x transport
    counts: dict[str, int]  # grade -> cells
    must: dict[str, int]  # mustCases, mustPassed, mustFailed, mustNotTested, mustNotApplicable


@dataclass
class FindingList:
    title: str
    columns: list[str]
    rows: list[list[str]]
    total: int


@dataclass
class MatrixPage:
    generated: str
    records: int
    invalid: int
    runs: int
    implementations: list[ImplementationRow]
    coverage: list[Coverage]
    matrices: list[ProtocolMatrix]
    findings: list[FindingList] = field(default_factory=list)


def esc(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def href(target: str) -> str:
    """A link that can only be relative or http(s): never javascript: or data:."""
    parts = urlsplit(target)
    if parts.scheme and parts.scheme not in ("http", "https", "file"):
        return "#"
    if parts.scheme:
        return esc(target)
    fragment = f"#{quote(parts.fragment, safe='')}" if parts.fragment else ""
    return esc(quote(parts.path, safe="/._-~") + fragment)


def _grade_css() -> str:
    rules = [f".g-{g}{{color:{fg};background:{bg}}} .g-{g} a{{color:{fg}}}" for g, (fg, bg) in GRADE_STYLE.items()]
    return "\n".join(rules)


def _cell(implementation: str, row: CaseRow, cell: Cell | None) -> str:
    attrs = f'data-impl="{esc(implementation)}" data-case="{esc(row.case)}" data-transport="{esc(row.transport)}"'
    if cell is None:
        return f'<td class="cell g-none" {attrs} data-sort="{MISSING_SORT_KEY}">{NOT_TESTED}</td>'
    tooltip = f"{split_spec_ref(cell.spec_ref)[1] or cell.spec_ref}\n{cell.spec}"  # the section, then its sentence
    if cell.message:
        tooltip += f"\n\n{cell.message}"
    log = f' <a class="log" href="{href(cell.wirelog_href)}">log</a>' if cell.wirelog_href else ""
    note = f' <small class="note">{NOT_TESTED}</small>' if cell.grade in NOT_RUN else ""
    clip = (
        f' <span class="att" title="attachments in the Allure result">{cell.attachments}&nbsp;att</span>'
        if cell.attachments
        else ""
    )
    return (
        f'<td class="cell g-{esc(cell.grade)}" {attrs} data-grade="{esc(cell.grade)}" '
        f'data-sort="{WORST_FIRST.index(cell.grade)}" title="{esc(tooltip)}">'
        f'<a href="{href(cell.spec_href)}">{esc(cell.grade)}</a>{note}{log}{clip}</td>'
    )


def _matrix_table(matrix: ProtocolMatrix) -> str:
    heads = "".join(f"<th>{esc(name)}</th>" for name in ["Family", "Case", "Transport", "Requirement"])
    for name in matrix.implementations:
        note = matrix.column_notes.get(name)
        heads += f"<th>{esc(name)}" + (f'<br><small class="note">{esc(note)}</small>' if note else "") + "</th>"
    rows = []
    for row in matrix.cases:
        cells = "".join(_cell(i, row, matrix.cells.get((i, row.case, row.transport))) for i in matrix.implementations)
        heads_of_row = "".join(_td(v) for v in (row.family, row.case, row.transport, row.requirement))
        rows.append(f"<tr>{heads_of_row}{cells}</tr>")
    return (
        f"<h2>Matrix: {esc(matrix.protocol)}</h2>\n{_spec_line(matrix)}"
        f'<table class="matrix sortable" id="matrix-{esc(matrix.protocol)}"><thead><tr>{heads}</tr></thead>\n'
        f"<tbody>\n{chr(10).join(rows)}\n</tbody></table>"
    )


def _spec_line(matrix: ProtocolMatrix) -> str:
    links = [
        f'<a class="{cls}" href="{href(target)}">{label}</a>'
        for cls, target, label in (("spec", matrix.spec_url, "spec"), ("profile", matrix.profile_href, "profile"))
        if target
    ]
    return f'<p class="spec-links">{" · ".join(links)}</p>\n' if links else ""


def _table(table_id: str, headings: list[str], rows: list[str], sortable: bool = True) -> str:
    heads = "".join(f"<th>{esc(h)}</th>" for h in headings)
    css = ' class="sortable"' if sortable else ""
    return f'<table{css} id="{esc(table_id)}"><thead><tr>{heads}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _td(value: object, css: str | None = None) -> str:
    return f'<td class="{esc(css)}">{esc(value)}</td>' if css else f"<td>{esc(value)}</td>"


def _implementations(rows: list[ImplementationRow]) -> str:
    grades = list(COUNT_COLUMN)
    must = list(MUST_HEADINGS)
    body = []
    for r in rows:
        cells = [_td(r.name), _td(r.version), _td(r.level, "lvl-" + r.level.split()[0])]
        cells += [_td(r.must.get(k, 0), "num") for k in must]
        cells += [_td(r.cells, "num"), *(_td(r.counts.get(g, 0), "num") for g in grades)]
        body.append(f"<tr>{''.join(cells)}</tr>")
    headings = ["Implementation", "Version", "Level", *MUST_HEADINGS.values(), "Cells", *grades]
    return _table("implementations", headings, body)


def _spec_cell(protocol: str, spec: str) -> str:
    """The catalogue names the spec by our file name; a user needs its public page."""
    url = public_spec_url(protocol)
    return f'<td><a class="spec" href="{href(url)}">{esc(url)}</a></td>' if url else _td(spec)


def _coverage(rows: list[Coverage]) -> str:
    body = []
    for c in rows:
        if c.status != "known":
            unknown = f'<td colspan="5">unknown: {esc(c.reason)}</td>'
            body.append(f"<tr>{_td(c.protocol)}{_td(ANY_IMPLEMENTATION)}{unknown}</tr>")
            continue
        share = "n/a" if c.coverage is None else f"{c.coverage:.0%}"
        cells = [
            _td(c.protocol), _td(c.implementation or ANY_IMPLEMENTATION), _spec_cell(c.protocol, c.spec),
            _td(f"{c.mustCovered} / {c.mustTotal}", "num"), _td(c.mustUntestable, "num"), _td(share, "num"),
            _td(", ".join(c.uncovered)),
        ]
        body.append(f"<tr>{''.join(cells)}</tr>")
    headings = ["Protocol", "Implementation", "Spec", "MUST tested", "Untestable", "Coverage", "MUST not tested"]
    return _table("coverage", headings, body, sortable=False)


def _finding_list(finding: FindingList, index: int) -> str:
    if not finding.rows:
        return f"<h2>{esc(finding.title)}</h2><p>None.</p>"
    shown = ""
    if finding.total > len(finding.rows):
        shown = f" (first {len(finding.rows)} of {finding.total}; all in the JSON output)"
    body = ["<tr>" + "".join(_td(v) for v in row) + "</tr>" for row in finding.rows]
    title = f"<h2>{esc(finding.title)} <small>{finding.total}{esc(shown)}</small></h2>"
    return title + _table(f"finding-{index}", finding.columns, body)


def _legend() -> str:
    items = "".join(
        f'<span class="legend-item g-{g}" title="{esc(GRADE_MEANING[g])}">{esc(g)}</span> ' for g in WORST_FIRST
    )
    return f'<p class="legend">{items}<span class="legend-item g-none" title="no record">{NOT_TESTED}</span></p>'


_PAGE = Template(
    """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Conformance compliance matrix</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}
th,td{border:1px solid #bbb;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f0f0f0;cursor:pointer;user-select:none;position:sticky;top:0}
th[aria-sort=ascending]::after{content:" \\25B2"} th[aria-sort=descending]::after{content:" \\25BC"}
td.num{text-align:right} td.cell{white-space:nowrap;font-weight:600}
.legend-item{display:inline-block;padding:2px 8px;margin:2px;border-radius:3px;font-weight:600}
.g-none{color:#999;background:#fff}
.lvl-fully{color:#0f5c2a;font-weight:600} .lvl-compliant{color:#8a5300;font-weight:600}
.lvl-non-compliant{color:#c62828;font-weight:600} .lvl-not{color:#6a1b4d;font-weight:600}
a.log,span.att{font-weight:400;font-size:85%}
.meta{color:#555} small.note{font-weight:400;color:#555}
$grade_css
</style>
</head>
<body>
<h1>Conformance compliance matrix</h1>
<p class="meta">Generated $generated from $records valid records in $runs runs;
$invalid invalid records (listed in summary.json). Each cell is the grade of the implementation's latest run
of the case on one transport; hover for the spec sentence, click for the spec section. Click a column heading to sort.
UNSUPPORTED, NOT-APPLICABLE and missing cells are not tested. An implementation is fully compliant only when every
MUST case that applies to it ran and passed.</p>
<h2>Implementations</h2>
$implementations
<h2>Legend</h2>
$legend
$matrices
<h2>MUST coverage</h2>
$coverage
$findings
<script>
(function () {
  function key(cell) {
    var k = cell.getAttribute("data-sort");
    return k !== null ? k : cell.textContent.trim();
  }
  function compare(a, b) {
    var x = Number(a), y = Number(b);
    if (a !== "" && b !== "" && !isNaN(x) && !isNaN(y)) { return x - y; }
    return a.localeCompare(b);
  }
  function sortTable(table, column, direction) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (r1, r2) { return direction * compare(key(r1.cells[column]), key(r2.cells[column])); });
    rows.forEach(function (row) { body.appendChild(row); });
    table.querySelectorAll("th").forEach(function (th, i) {
      if (i === column) { th.setAttribute("aria-sort", direction > 0 ? "ascending" : "descending"); }
      else { th.removeAttribute("aria-sort"); }
    });
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    table.querySelectorAll("th").forEach(function (th, column) {
      th.addEventListener("click", function () {
        var direction = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
        sortTable(table, column, direction);
        var order = direction > 0 ? "asc" : "desc";
        history.replaceState(null, "", "#sort=" + encodeURIComponent(table.id) + ":" + column + ":" + order);
      });
    });
  });
  // A sorted view can be shared as matrix.html#sort=<table id>:<column>:<asc|desc>.
  var wanted = /^#sort=([^:]+):([0-9]+):(asc|desc)$$/.exec(location.hash);
  if (wanted) {
    var table = document.getElementById(decodeURIComponent(wanted[1]));
    if (table) { sortTable(table, Number(wanted[2]), wanted[3] === "asc" ? 1 : -1); }
  }
  document.body.setAttribute("data-js", "ready");
})();
</script>
</body>
</html>
"""
)


def render(page: MatrixPage) -> str:
    return _PAGE.substitute(
        grade_css=_grade_css(),
        generated=esc(page.generated),
        records=page.records,
        runs=page.runs,
        invalid=page.invalid,
        legend=_legend(),
        implementations=_implementations(page.implementations),
        coverage=_coverage(page.coverage),
        matrices="\n".join(_matrix_table(m) for m in page.matrices),
        findings="\n".join(_finding_list(f, i) for i, f in enumerate(page.findings)),
    )
