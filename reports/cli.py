"""``conformance report``: build the compliance reports from many runs.

conformance report --input RUNS... --out DIR [--baseline RUN_DIR_OR_ID] [--master URL] [--conf K=V]...
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from reports.baseline import BaselineError
from reports.class_archive import ClassArchive
from reports.fs import LocationError, local_path
from reports.pipeline import InputError, ReportOptions, run_report
from reports.spark_session import build_session, java_problem, parse_conf, stop_session
from reports.summary_text import format_summary

EXIT_OK = 0
EXIT_REGRESSIONS = 1  # only with --fail-on-regressions
EXIT_USAGE = 2  # argparse's own code for a bad command line
EXIT_BAD_INPUT = 3
EXIT_SPARK_FAILED = 4

EPILOG = """exit status: 0 report written; 1 regressions found (only with --fail-on-regressions);
2 bad command line; 3 an input or the baseline missing or unreadable, or (with --strict-inputs) a malformed record;
4 Spark could not start or the job failed"""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="conformance report", description=__doc__.splitlines()[0], epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--input",
        nargs="+",
        action="extend",
        required=True,
        metavar="RUNS",
        help="run folders, folders of run folders, records files (JSON lines, .jsonl.gz, or Parquet) or "
        "allure-results folders; local paths or URIs (hdfs://, s3a://, file://)",
    )
    p.add_argument("--out", required=True, help="output folder, local path or URI (tables in it are replaced)")
    p.add_argument(
        "--baseline",
        metavar="RUN_DIR_OR_ID",
        help="run folder, records file or run id to compare the latest grades against",
    )
    p.add_argument(
        "--fail-on-regressions",
        action="store_true",
        help=f"exit {EXIT_REGRESSIONS} when the latest runs regressed against --baseline (for CI gates)",
    )
    p.add_argument(
        "--strict-inputs",
        action="store_true",
        help=f"exit {EXIT_BAD_INPUT} without writing the report when any line is not a valid record "
        "(default: malformed lines are counted and listed with file and line, and the report is written)",
    )
    p.add_argument(
        "--master",
        help="Spark master URL (default: spark-submit's master when launched by it, else embedded local[*])",
    )
    p.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark setting, as spark-submit takes it (repeatable), e.g. spark.executor.memory=4g",
    )
    p.add_argument(
        "--requirements",
        type=Path,
        metavar="DIR",
        help="requirement catalogues folder (default: the project's docs/requirements)",
    )
    p.add_argument(
        "--shuffle-partitions",
        type=int,
        metavar="N",
        help="spark.sql.shuffle.partitions (default: one per core in local mode, where adaptive execution is off; "
        "else 2 per core, at least 8, which adaptive execution coalesces)",
    )
    p.add_argument("--driver-memory", metavar="SIZE", help="JVM heap of the driver, e.g. 4g (local mode: all of Spark)")
    return p


def _missing_local_inputs(inputs: list[str]) -> list[str]:
    """Local inputs that are not there; other schemes are checked once Spark is up."""
    return [raw for raw in inputs if (path := local_path(raw)) is not None and not path.exists()]


def _spark_errors() -> tuple[type[BaseException], ...]:
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    return (PySparkException, Py4JError)


def main(argv: list[str]) -> int:
    p = parser()
    args = p.parse_args(argv)
    try:
        conf = parse_conf(args.conf)
    except ValueError as exc:
        p.error(str(exc))
    if args.fail_on_regressions and not args.baseline:
        p.error("--fail-on-regressions needs --baseline")
    # Checked before Spark starts: a typo should not cost a JVM start-up.
    missing = _missing_local_inputs(args.input)
    if missing:
        print(f"conformance report: inputs not found: {', '.join(missing)}", file=sys.stderr)
        return EXIT_BAD_INPUT

    if problem := java_problem():
        print(f"conformance report: {problem}", file=sys.stderr)
        return EXIT_SPARK_FAILED

    options = ReportOptions(
        inputs=args.input, out=args.out, baseline=args.baseline, strict_inputs=args.strict_inputs
    )
    if args.requirements is not None:
        options.requirements_dir = args.requirements
    spark_errors = _spark_errors()
    archive = ClassArchive()
    # the JVM's start takes seconds with nothing else to show: say so before the report's stages
    print("conformance report: starting Spark ...", file=sys.stderr, flush=True)
    try:
        spark = build_session(
            args.master, args.shuffle_partitions, driver_memory=args.driver_memory, conf=conf, class_archive=archive
        )
    except spark_errors as exc:
        print(f"conformance report: Spark did not start: {exc}", file=sys.stderr)
        return EXIT_SPARK_FAILED
    try:
        summary = run_report(spark, options)
    except (InputError, BaselineError, LocationError) as exc:
        print(f"conformance report: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except spark_errors as exc:
        # summary.json is written last: without it the outputs are partial.
        print(f"conformance report: the Spark job failed, outputs are incomplete: {exc}", file=sys.stderr)
        return EXIT_SPARK_FAILED
    finally:
        stop_session(spark, archive)
    print(format_summary(summary))
    if args.fail_on_regressions and summary["regressions"]["count"]:
        return EXIT_REGRESSIONS
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
