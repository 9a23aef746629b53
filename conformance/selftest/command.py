"""`conformance selftest [PROTOCOL ...]`: how many one-bug targets the suite catches, and with what."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING

from conformance.paths import scenarios_dir
from conformance.protocols import adapter_for, available
from conformance.selftest.catalog import MODULES, catalog

if TYPE_CHECKING:
    from conformance.scenario.loader import Case
    from conformance.selftest.engine import Finding

# the loader and the engine are imported when the command runs: `conformance` builds
# this command's arguments for every other command too (0.25 s of each `conformance run`)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("protocols", nargs="*", help="protocols (default: all)")
    parser.add_argument("--bug", action="append", default=[], help="only this bug (repeatable)")
    parser.add_argument("--exhaustive", action="store_true",
                        help="grade every bug on every case of its role, not only the cases meant to catch it")


def _cases(protocol: str) -> dict[str, Case]:
    from conformance.scenario.loader import Case, load_file
    check = adapter_for(protocol).frame_check
    cases: dict[str, Case] = {}
    for path in sorted((scenarios_dir() / protocol).glob("*.yaml")):
        for case in load_file(path, check).cases:
            if isinstance(case, Case):
                cases[case.id] = case
    return cases


def run(args: argparse.Namespace) -> int:
    from conformance.selftest.engine import examine
    protocols = args.protocols or [p for p in available() if p in MODULES]
    unknown = [p for p in protocols if p not in MODULES]
    if unknown:
        print(f"conformance selftest: no one-bug targets for {', '.join(unknown)} "
              f"(known: {', '.join(sorted(MODULES))})", file=sys.stderr)
        return 2
    findings: list[Finding] = []
    for protocol in protocols:
        cases = _cases(protocol)
        for one in catalog(protocol):
            if args.bug and one.bug not in args.bug:
                continue
            missing = [c for c in one.cases if c not in cases]
            if missing:
                print(f"conformance selftest: {protocol} {one.role} bug {one.bug!r} names unknown cases {missing}",
                      file=sys.stderr)
                return 2
            finding = asyncio.run(examine(one, cases, exhaustive=args.exhaustive))
            findings.append(finding)
            _print_finding(finding)
    _print_table(findings)
    return 0 if findings and all(f.caught for f in findings) else 1


def _print_finding(f: Finding) -> None:
    one = f.one
    if f.caught:
        by = ", ".join(f"{case} ({grade.value})" for case, grade, _ in f.caught_by)
        print(f"caught  {one.protocol:<14} {one.role:<6} {one.bug:<40} by {by}", flush=True)
    else:
        print(f"MISSED  {one.protocol:<14} {one.role:<6} {one.bug:<40} no case catches it", flush=True)
    for case, grade, message in f.twin_problems:
        print(f"        (the correct twin is {grade.value} on {case} too, so that case does not count: {message[:160]})")
    for case, message in f.errors:
        print(f"        (ERROR on {case}: {message[:160]})")


def _print_table(findings: list[Finding]) -> None:
    print()
    print(f"{'protocol':<15}{'role':<8}{'bugs':>6}{'caught':>8}")
    keys = sorted({(f.one.protocol, f.one.role) for f in findings})
    for protocol, role in keys:
        mine = [f for f in findings if (f.one.protocol, f.one.role) == (protocol, role)]
        print(f"{protocol:<15}{role:<8}{len(mine):>6}{sum(f.caught for f in mine):>8}")
    print(f"{'all':<23}{len(findings):>6}{sum(f.caught for f in findings):>8}")
