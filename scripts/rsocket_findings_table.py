"""Re-run the RSocket suite against the three third-party images and rewrite the grade cells of
docs/findings/rsocket.md's per-case table ("Every case on the three libraries") from the records.

    python scripts/rsocket_findings_table.py run --out out/rsocket-images [--library rsocket-py] [-k EXPR]
    python scripts/rsocket_findings_table.py table --runs out/rsocket-images [--write]
    python scripts/rsocket_findings_table.py wire --runs out/rsocket-images rsocket-py CASE [tcp|ws]

`run` runs `conformance run rsocket --target docker:IMAGE --jobs 1` for one library at a time (both
roles, TCP and WebSocket), then runs again on a fresh container each case that ended in ERROR and
the failed case just before such an ERROR (a server process that died takes the cases after it
with it, and may have died during the one before: rsocket-js 1.0's F-JS1-2 and F-JS1-11,
rsocket-js 0.0.27's F-JS0-4); the table holds the re-runs' grades. A library may have a variant
image that runs some cases only (rsocket-js 1.0 with its server's resumption on runs the server
resume cases, `rsocket/handshake/resume-`): its grades replace the library's for those cases.
`run -k EXPR` runs only the cases that pytest's -k expression selects (a variant's cases: those
both select); `table` then rewrites the cells of those cases only and keeps every other cell.
`table` reads the records and prints how each cell's grades differ from the page; with --write it
rewrites the grades. What a cell names (findings F-..., notes N-...) and the reason column are the
page's own prose and are kept: the script only reports a non-passing cell that names nothing, and
a reason left on a case that now passes somewhere. Needs the images (`conformance images build
--protocol rsocket`) and a docker engine.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "findings" / "rsocket.md"
SECTION = "## Every case on the three libraries"
# page column -> (the run folder's name, the image)
LIBRARIES = {
    "rsocket-py 0.4.20": ("rsocket-py", "conformance-thirdparty-rsocket-py:latest"),
    "rsocket-js 0.0.27": ("rsocket-js-0.0", "conformance-thirdparty-rsocket-js-0.0:latest"),
    "rsocket-js 1.0.0-alpha.3": ("rsocket-js-1.0", "conformance-thirdparty-rsocket-js-1.0:latest"),
}
PASSING = {"PASSED", "INFORMATIONAL"}
RERUN_CASE = "rerun-case.txt"  # in a re-run's folder: the case it was for
# page column -> (run folder's name, image, the -k expression of the cases it runs instead of the
# library's image): the same library in another mode of its public API
VARIANTS = {
    "rsocket-js 1.0.0-alpha.3": (("rsocket-js-1.0-resume", "conformance-thirdparty-rsocket-js-1.0-resume:latest",
                                  "rsocket/handshake/resume-"),),
}
REF = re.compile(r"(?:F|N)-[A-Z0-9]+-\d+")


def _conformance(*args: str) -> int:
    command = [sys.executable, "-m", "conformance.cli", "run", "rsocket", *args]
    print("$", " ".join(command), flush=True)
    return subprocess.run(command, cwd=ROOT, env={"PYTHONPATH": str(ROOT), **_env()}).returncode


def _env() -> dict[str, str]:
    import os
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def _records(folder: Path) -> list[dict]:
    path = folder / "records.jsonl"
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _runs() -> list[tuple[str, str, str, str | None]]:
    """(page column, run folder's name, image, -k expression or None) of every run, in order."""
    found = []
    for column, (name, image) in LIBRARIES.items():
        found.append((column, name, image, None))
        found += [(column, *variant) for variant in VARIANTS.get(column, ())]
    return found


def run(out: Path, only: str | None, selection: str | None = None) -> None:
    for column, name, image, keyword in _runs():
        if only and only not in (name, column):
            continue
        if selection:
            keyword = f"({keyword}) and ({selection})" if keyword else selection
        folder = out / name
        _conformance("--target", f"docker:{image}", "--impl-name", name, "--jobs", "1", "--out", str(folder),
                     *(["-k", keyword] if keyword else []))
        for i, case in enumerate(suspects(_records(folder))):
            # a fresh container per case: the ERROR may be a server that an earlier case killed
            rerun = out / f"{name}.rerun-{i:02d}"
            _conformance("--target", f"docker:{image}", "--impl-name", name, "--jobs", "1",
                         "-k", case, "--out", str(rerun))
            rerun.mkdir(parents=True, exist_ok=True)  # a run that failed early may not have made it
            (rerun / RERUN_CASE).write_text(case)  # -k matches other ids that contain this one


def _rerun_records(folder: Path) -> list[dict]:
    """A re-run's records of the case it was for (``-k`` is a substring match)."""
    marker = folder / RERUN_CASE
    case = marker.read_text() if marker.exists() else None
    return [r for r in _records(folder) if case is None or r["case"] == case]


def suspects(records: list[dict]) -> list[str]:
    """The cases to run again on a fresh container: every case that ended in ERROR (the server may
    have died before it), and the case run just before a run of ERRORs on the same transport, if
    it did not pass (the server may have died during it)."""
    found: dict[str, None] = {}
    previous: dict[str, dict] = {}
    for record in records:
        transport = record["transport"]
        before = previous.get(transport)
        if record["grade"] == "ERROR":
            found[record["case"]] = None
            if before is not None and before["grade"] not in PASSING | {"ERROR"}:
                found[before["case"]] = None
        previous[transport] = record
    return sorted(found)


def grades(out: Path, name: str) -> dict[str, dict[str, str]]:
    """case -> transport -> grade; a re-run's grade (on a fresh container) replaces the first
    run's, unless the re-run itself ended in ERROR."""
    result: dict[str, dict[str, str]] = {}
    for record in _records(out / name):
        result.setdefault(record["case"], {})[record["transport"]] = record["grade"]
    for folder in sorted(out.glob(f"{name}.rerun-*")):
        for record in _rerun_records(folder):
            cell = result.setdefault(record["case"], {})
            if record["grade"] != "ERROR" or record["transport"] not in cell:
                cell[record["transport"]] = record["grade"]
    return result


def column_grades(out: Path, column: str) -> dict[str, dict[str, str]]:
    """A page column's grades: its library's run, where a variant's run replaces the cases it ran."""
    result = grades(out, LIBRARIES[column][0])
    for name, _, _ in VARIANTS.get(column, ()):
        result.update(grades(out, name))
    return result


def cell_text(by_transport: dict[str, str], refs: list[str]) -> str:
    def part(grade: str) -> str:  # an INFORMATIONAL grade keeps the note that says what was seen
        return grade if grade == "PASSED" or not refs else f"{grade} ({', '.join(refs)})"
    values = {by_transport[t] for t in by_transport}
    if len(values) == 1:
        return part(values.pop())
    return "; ".join(f"{t}: {part(g)}" for t, g in sorted(by_transport.items()))


def _passes(cell: str) -> bool:
    """Whether a cell's grades, outside the brackets that name findings, are all passing ones."""
    found = re.findall(r"PASSED|FAILED|NON-STRICT|INFORMATIONAL|UNSUPPORTED|NOT-APPLICABLE|ERROR",
                       re.sub(r"\([^)]*\)", "", cell))
    return bool(found) and set(found) <= PASSING


def _split(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]


def table(out: Path, write: bool) -> int:
    text = PAGE.read_text(encoding="utf-8")
    head, rest = text.split(SECTION, 1)
    body, sep, tail = rest.partition("\n## ")
    runs = {column: column_grades(out, column) for column in LIBRARIES}
    problems, lines = 0, []
    for line in body.split("\n"):
        match = re.match(r"\| `(rsocket/[a-z0-9/-]+)` \|", line)
        if not match:
            lines.append(line)
            continue
        case = match.group(1)
        cells = _split(line)
        new = [cells[0]]
        for column, old in zip(LIBRARIES, cells[1:4]):
            refs = list(dict.fromkeys(REF.findall(old)))
            by_transport = runs[column].get(case)
            if not by_transport:
                print(f"{case} / {column}: no record (kept {old!r})")
                new.append(old)
                continue
            cell = cell_text(by_transport, refs)
            if cell != old:
                print(f"{case} / {column}: {old!r} -> {cell!r}")
            if set(by_transport.values()) - PASSING and not refs:
                print(f"  NO FINDING: {case} / {column}: {cell}")
                problems += 1
            new.append(cell)
        # read from the new cells: a column with no record keeps the page's cell (a partial run)
        passes_somewhere = any(_passes(cell) for cell in new[1:4])
        reason = "" if passes_somewhere else cells[4]
        if not passes_somewhere and not reason:
            print(f"  NO REASON: {case} passes on no library")
            problems += 1
        new.append(reason)
        lines.append("| " + " | ".join(new) + " |")
    if write:
        PAGE.write_text(head + SECTION + "\n".join(lines) + sep + tail, encoding="utf-8")
    print(f"{problems} cell(s) to write up")
    return 1 if problems else 0


def _frames(lines: list[str]) -> list[str]:
    """The log's event lines ("--"); bytes that no "decoded" line of their direction follows (a
    frame the suite's encoder would not write, or one its decoder refused) are shown as hex."""
    result, raw = [], None  # raw: (time, direction, hex chunks) of the last bytes block

    def flush() -> None:
        if raw and raw[2]:
            result.append(f"{raw[0]} {raw[1]} raw {''.join(raw[2])}")

    for line in lines:
        line = line.strip()
        if match := re.match(r"([\d.]+ms) (>>|<<) bytes\[", line):
            if raw and raw[1] != match.group(2):
                flush()
                raw = None
            raw = (match.group(1), match.group(2), raw[2] if raw else [])
        elif raw is not None and re.match(r"[0-9a-f]{8}  ", line):
            raw[2].append(line[10:58].replace(" ", ""))
        elif " -- " in line:
            if raw and not line.split(" -- ", 1)[1].startswith(f"{raw[1]} decoded"):
                flush()
            raw = None
            result.append(line)
    flush()
    return result


def _short(line: str) -> str:
    """`12.3ms -- << decoded: rsocket PAYLOAD ...` -> `<< PAYLOAD ...`: the excerpt a finding quotes."""
    event = re.sub(r"^[\d.]+ms (-- )?", "", line)
    event = re.sub(r"^(>>|<<) decoded: (rsocket )?", r"\1 ", event)
    return re.sub(r"type='([A-Z_]+)'", r"\1", event).replace(" fragments=1", "")


def wire(out: Path, name: str, case: str, transport: str) -> None:
    """The decoded frames (both directions) and the grade message of one case's record: the
    excerpt a finding quotes."""
    found = None  # as in grades(): a re-run's record replaces the first run's, unless it is an ERROR
    for folder in [out / name, *sorted(out.glob(f"{name}.rerun-*"))]:
        for record in _records(folder) if folder == out / name else _rerun_records(folder):
            if record["case"] == case and record["transport"] == transport and record.get("wirelog") \
                    and (found is None or record["grade"] != "ERROR"):
                found = (folder, record)
    if found is None:
        print(f"no wire log for {name} {case} [{transport}]")
        return
    folder, record = found
    print(f"# {case} [{transport}] {record['grade']}: {record['message']}")
    log = (folder / record["wirelog"]).read_text(encoding="utf-8", errors="replace")
    for line in _frames(log.split("\n--- container", 1)[0].splitlines()):
        print(_short(line))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run_p = sub.add_parser("run", help="run the suite against each image, one library at a time")
    run_p.add_argument("--out", type=Path, required=True)
    run_p.add_argument("--library", help="one library: its run folder name or page column")
    run_p.add_argument("-k", dest="keyword", help="pytest -k expression: run these cases only")
    table_p = sub.add_parser("table", help="compare (and with --write rewrite) the page's grade cells")
    table_p.add_argument("--runs", type=Path, required=True)
    table_p.add_argument("--write", action="store_true")
    wire_p = sub.add_parser("wire", help="print one case's decoded frames from its wire log")
    wire_p.add_argument("--runs", type=Path, required=True)
    wire_p.add_argument("library", help="run folder name: " + ", ".join(name for _, name, _, _ in _runs()))
    wire_p.add_argument("case")
    wire_p.add_argument("transport", nargs="?", default="tcp")
    args = parser.parse_args()
    if args.command == "wire":
        wire(args.runs, args.library, args.case, args.transport)
        return 0
    if args.command == "run":
        run(args.out, args.library, args.keyword)
        return 0
    return table(args.runs, args.write)


if __name__ == "__main__":
    sys.exit(main())
