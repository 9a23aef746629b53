"""`conformance check-trace`: check captured traffic against the protocol cores.

    conformance check-trace --protocol stmp capture.pcapng
    conformance check-trace --port 9000=stmp --port 5555=mc0 a.pcap b.pcapng --records out/passive.jsonl
    conformance check-trace --protocol mc0 --keylog run.pcapng.keys run.pcapng   # open CURVE boxes
    conformance check-trace --protocol rsio --test-services on lo.pcap   # a tcpdump of a conformance run

    conformance check-trace --spark [--master URL] [--conf K=V] --protocol stmp hdfs://.../*.pcap --out DIR

Exit status: 0 no MUST finding (with --strict: no SHOULD finding either), 1 findings,
2 a usage error or a file that could not be checked at all (its message says why).  With
--spark, as `conformance report`: 3 no capture could be read, 4 Spark could not start.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from conformance.trace.findings import GRADE_OF_LEVEL
from conformance.trace.rules import MODULES


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE", help="pcap or pcapng captures")
    parser.add_argument("--protocol", default=None, help="the protocol of connections to ports --port does not name")
    parser.add_argument("--port", action="append", default=[], metavar="PORT=PROTOCOL",
                        help="connections to this server port carry this protocol (repeatable)")
    parser.add_argument("--param", action="append", default=[], metavar="NAME=MS",
                        help="the implementations' timers, e.g. heartbeat_interval_ms=1000")
    parser.add_argument("--records", default=None, metavar="FILE", help="write findings as result records (JSON lines)")
    parser.add_argument("--impl-name", default=None, help="label the records (default: the offending side's address)")
    parser.add_argument("--strict", action="store_true", help="SHOULD findings fail too")
    parser.add_argument("--keylog", action="append", default=[], metavar="FILE",
                        help="a CURVE key log (repeatable): lines 'ROLE TRANSIENT_PUBLIC TRANSIENT_SECRET "
                        "SERVER_PUBLIC' in hex, as `conformance run --pcap FILE` writes to FILE.keys; mc0 "
                        "connections whose HELLO or INITIATE one of its keys matches are decrypted and checked")
    parser.add_argument("--test-services", choices=("auto", "on", "off"), default="auto",
                        help="judge what the profiles' test services promise (e.g. rsio's test/fixed/N/SIZE: N "
                        "elements; test/never: no end): 'on' for traffic of a conformance run, 'off' for any other "
                        "(an application's publisher of that name promises nothing); 'auto' (default): on only for "
                        "a capture `conformance run --pcap` wrote (its pcapng header names it), off for tcpdump's "
                        "and other tools' captures")
    spark = parser.add_argument_group("at scale (the 'report' extra: PySpark, Java)")
    spark.add_argument("--spark", action="store_true",
                       help="split the work by file and connection on Spark; FILES may be URIs (hdfs://, s3a://)")
    spark.add_argument("--master", default=None, help="Spark master URL (default: embedded local[*])")
    spark.add_argument("--conf", action="append", default=[], metavar="K=V", help="a Spark setting (repeatable)")
    spark.add_argument("--out", default="out/check-trace", help="with --spark: folder or URI for records.jsonl and "
                       "summary.json")


def _port_map(entries: list[str], errors: list[str]) -> dict[int, str]:
    found: dict[int, str] = {}
    for entry in entries:
        port, _, protocol = entry.partition("=")
        if not port.isdigit() or not 0 < int(port) < 65536 or not protocol:
            errors.append(f"--port {entry!r}: expected PORT=PROTOCOL, e.g. 9000=stmp")
        elif protocol not in MODULES:
            errors.append(f"--port {entry!r}: unknown protocol {protocol!r}; the protocols are: {', '.join(MODULES)}; "
                          f"connections to port {port} are not checked")
        else:
            found[int(port)] = protocol
    return found


def parse_params(entries: list[str], errors: list[str]) -> dict[str, int]:
    found = {}
    for entry in entries:
        name, _, value = entry.partition("=")
        if not value.isdigit():
            errors.append(f"--param {entry!r}: expected NAME=MS")
        else:
            found[name] = int(value)
    return found


def run(args: argparse.Namespace) -> int:
    from conformance.records import new_run_id, utc_now
    from conformance.trace.check import check_file
    from conformance.trace.sessions import Sessions

    errors: list[str] = []
    ports = _port_map(args.port, errors)
    params = parse_params(args.param, errors)
    if args.protocol is not None and args.protocol not in MODULES:
        print(f"conformance check-trace: unknown protocol {args.protocol!r}; the protocols are: {', '.join(MODULES)}",
              file=sys.stderr)
        return 2
    for error in errors:
        print(f"conformance check-trace: {error}", file=sys.stderr)
    if not ports and args.protocol is None:
        print("conformance check-trace: nothing to check: give --protocol P or --port PORT=P", file=sys.stderr)
        return 2
    from conformance.trace.keylog import KeyLogError, read
    try:
        keys = read(args.keylog)
    except KeyLogError as exc:
        print(f"conformance check-trace: --keylog {exc}", file=sys.stderr)
        return 2
    if args.spark:
        from conformance.trace.spark import run_spark
        code = run_spark(args, ports, params, keys)
        return code if code != 0 else (2 if errors else 0)
    run_id, started = new_run_id(), utc_now()
    records = Path(args.records) if args.records else None
    if records:
        records.parent.mkdir(parents=True, exist_ok=True)
        records.write_text("")
    failing = {"MUST"} | ({"SHOULD"} if args.strict else set())
    status = 2 if errors else 0
    worst = 0
    sessions = Sessions()
    for name in args.files:
        result = check_file(Path(name), ports, args.protocol, params, keys, args.test_services)
        for problem in result.problems:
            print(f"problem: {problem}", file=sys.stderr)
        if result.problems and not result.connections:
            status = 2
        print(f"{name}: {result.connections} connections, {result.frames} frames checked, "
              f"{len(result.findings)} findings, {len(result.notes)} parts not checkable")
        for finding in result.findings:
            print(f"  {GRADE_OF_LEVEL[finding.level]} {finding}")
            if finding.level in failing:
                worst = 1
        for note in result.notes:
            print(f"  {note}")
        sessions.add(name, result.facts)
        _write_records(records, [(name, item) for item in [*result.findings, *result.notes]], run_id, started, args)
    across = sessions.findings()
    if across:
        print(f"across connections: {len(across)} findings")
    for capture, finding in across:
        print(f"  {GRADE_OF_LEVEL[finding.level]} {finding} ({capture})")
        if finding.level in failing:
            worst = 1
    _write_records(records, across, run_id, started, args)
    if records:
        print(f"records: {records}")
    return worst or status


def _write_records(records: Path | None, items, run_id: str, started: str, args) -> None:
    from conformance.record_format import SCHEMA_VERSION
    from conformance.trace.findings import record_of
    if records and items:
        with records.open("a", encoding="utf-8") as fh:
            for source, item in items:
                record = record_of(item, run=run_id, time=started, source=source, implementation=args.impl_name)
                fh.write(json.dumps({"schemaVersion": SCHEMA_VERSION, **record}, sort_keys=True) + "\n")
