"""``conformance report``: build the compliance reports from many runs.

conformance report --input RUNS... --out DIR [--baseline RUN_DIR_OR_ID] [--master URL]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from reports.baseline import BaselineError
from reports.pipeline import InputError, ReportOptions, run_report
from reports.spark_session import build_session, java_problem
from reports.summary_text import format_summary

EXIT_OK = 0
EXIT_BAD_INPUT = 1
EXIT_NO_JAVA = 2


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="conformance report", description=__doc__.splitlines()[0])
    p.add_argument(
        "--input",
        nargs="+",
        action="extend",
        required=True,
        metavar="RUNS",
        help="run folders, folders of run folders, records .jsonl files or allure-results folders",
    )
    p.add_argument("--out", required=True, type=Path, help="output folder (created; tables in it are replaced)")
    p.add_argument(
        "--baseline",
        metavar="RUN_DIR_OR_ID",
        help="run folder, records file or run id to compare the latest grades against",
    )
    p.add_argument("--master", default="local[*]", help="Spark master URL (default: embedded, local[*])")
    p.add_argument(
        "--requirements",
        type=Path,
        metavar="DIR",
        help="requirement catalogues folder (default: the project's docs/requirements)",
    )
    p.add_argument("--shuffle-partitions", type=int, metavar="N", help="spark.sql.shuffle.partitions")
    p.add_argument("--driver-memory", metavar="SIZE", help="JVM heap of the driver, e.g. 4g (local mode: all of Spark)")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    # Checked before Spark starts: a typo should not cost a JVM start-up.
    missing = [p for p in args.input if not Path(p).exists()]
    if missing:
        print(f"conformance report: inputs not found: {', '.join(missing)}", file=sys.stderr)
        return EXIT_BAD_INPUT

    if problem := java_problem():
        print(f"conformance report: {problem}", file=sys.stderr)
        return EXIT_NO_JAVA

    options = ReportOptions(inputs=args.input, out=args.out, baseline=args.baseline)
    if args.requirements is not None:
        options.requirements_dir = args.requirements
    # the JVM's start takes seconds with nothing else to show: say so before the report's stages
    print("conformance report: starting Spark ...", file=sys.stderr, flush=True)
    spark = build_session(args.master, args.shuffle_partitions, driver_memory=args.driver_memory)
    try:
        summary = run_report(spark, options)
    except (InputError, BaselineError) as exc:
        print(f"conformance report: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    finally:
        spark.stop()
    print(format_summary(summary))
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
