"""The main job's last step: the Allure HTML report, the compliance report and a summary.

    python -m conformance.finish --run out/main/run --out out/main [--interop out/main/interop]

With --interop, the summary names each interop matrix (INTEROP/<protocol>/interop.html, written
by conformance.images.interop_job) or the one line saying why there is none, and the compliance
matrix page links the matrices.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

from conformance.extras import missing_extra
from conformance.grading import Grade
from conformance.records import grade_table


def summarize(records: Path) -> tuple[Counter, set[tuple[str, str]]]:
    """Results per (protocol, grade), and the (protocol, case) pairs they came from."""
    counts: Counter = Counter()
    cases: set[tuple[str, str]] = set()
    if records.exists():
        for line in records.read_text().splitlines():
            if line.strip():
                rec = json.loads(line)
                counts[(rec["protocol"], rec["grade"])] += 1
                cases.add((rec["protocol"], rec["case"]))
    return counts, cases


def allure_html(results: Path, out: Path, history: Path, matrix: Path | None = None) -> str:
    from reports.allure import AllureFailed, AllureUnavailable, generate
    try:
        generate([results], out, history, matrix_page=str(matrix) if matrix and matrix.is_file() else None)
    except AllureUnavailable as exc:
        return f"skipped ({exc})"
    except AllureFailed as exc:
        return f"failed ({exc})"
    except subprocess.TimeoutExpired as exc:
        return f"failed (no answer from {' '.join(map(str, exc.cmd[:3]))} ... in {exc.timeout:.0f}s)"
    except OSError as exc:  # e.g. the output folder holds something else: never replaced
        return f"failed ({exc})"
    return f"{out / 'index.html'} (one page: open it from disk or serve it)"


def compliance(runs: list[Path], out: Path) -> str:
    try:
        from reports.cli import main as report_main
        from reports.spark_session import java_problem
    except ModuleNotFoundError as exc:
        error = missing_extra(exc, "report", "the compliance report")
        if error is None:
            raise
        return f"skipped ({error})"
    if problem := java_problem():
        return f"skipped ({problem})"
    code = report_main(["--input", *map(str, runs), "--out", str(out)])
    return str(out / "matrix.html") if code == 0 else f"failed (exit {code})"


def interop_pages(folder: Path) -> list[tuple[str, Path]]:
    """(protocol, interop.html) of each matrix the interop step wrote."""
    return sorted((page.parent.name, page) for page in folder.glob("*/interop.html"))


def interop_summary(folder: Path) -> list[str]:
    skipped = folder / "skipped.txt"
    if skipped.is_file():
        return [f"interop matrices:  {skipped.read_text().strip()}"]
    pages = interop_pages(folder)
    if not pages:
        return [f"interop matrices:  none written (see {folder / 'interop.log'})"]
    return [f"interop {protocol + ':':<10} {page} (client x server)" for protocol, page in pages]


INTEROP_LINKS_ID = "interop-matrices"


def link_interop(matrix_page: Path, pages: list[tuple[str, Path]]) -> None:
    """A line of links to the interop matrices at the end of the compliance matrix page."""
    if not pages or not matrix_page.is_file():
        return
    text = matrix_page.read_text()
    if f'id="{INTEROP_LINKS_ID}"' in text or "</body>" not in text:
        return
    links = " · ".join(
        f'<a href="{html.escape(os.path.relpath(page, matrix_page.parent))}">{html.escape(protocol)}</a>'
        for protocol, page in pages)
    line = f'<p id="{INTEROP_LINKS_ID}">Interop matrices (client x server): {links}</p>\n'
    head, _, tail = text.rpartition("</body>")
    matrix_page.write_text(head + line + "</body>" + tail)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--run", type=Path, required=True, help="the run folder (records.jsonl, allure-results)")
    parser.add_argument("--also", type=Path, action="append", default=[],
                        help="further run folders (other implementations) for the compliance matrix")
    parser.add_argument("--interop", type=Path, help="the interop step's folder (<protocol>/interop.html)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    counts, cases = summarize(args.run / "records.jsonl")
    report = compliance([args.run, *(p for p in args.also if (p / "records.jsonl").exists())], args.out / "compliance")
    if args.interop is not None:
        link_interop(args.out / "compliance" / "matrix.html", interop_pages(args.interop))
    # outside the run folder, which the main job replaces: each run adds to the trend kept here
    allure = allure_html(args.run / "allure-results", args.out / "allure-report", args.out / "allure-history",
                         args.out / "compliance" / "matrix.html")
    grades = [g.value for g in Grade if any(g.value == seen for _, seen in counts)]
    print("\n== conformance: cases, and results per grade ==")
    print("\n".join(grade_table(counts, cases, grades)))
    print(f"\nrecords:           {args.run / 'records.jsonl'}")
    print(f"junit:             {args.run / 'junit.xml'}")
    print(f"allure report:     {allure}")
    print(f"compliance report: {report}")
    if args.interop is not None:
        print("\n".join(interop_summary(args.interop)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
