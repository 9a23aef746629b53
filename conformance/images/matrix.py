"""`conformance matrix`: every implementation image x its protocols x every case.

    conformance matrix [--out DIR] [--protocol P ...] [--image IMAGE[=P1,P2] ...] [-k EXPR]
                       [--pair-timeout SECONDS] [--build]

Each pair runs `conformance run P --target docker:IMAGE --impl-name NAME --out DIR/NAME/P`
(records, JUnit, allure-results and run.log).  A failed pair is run once more into
DIR/NAME/P/attempt-2: failed then passed is "flaky", failed twice is "failing".
DIR/matrix.json holds implementations, protocols, and per pair its outcome, attempts
and paths; a one-screen summary is printed.  Exit 1 if any pair is failing.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from conformance.images.implementations import (PAIR_OVERHEAD_SECONDS, Implementation, SelectionError, cases_of,
                                                discover, explicit, role_filter, suite_params)
from conformance.images.matrix_report import pair_outcome, print_summary
from conformance.images.pair_run import Attempt, run_attempt, run_command
from reports.progress import Stages

ATTEMPTS = 2  # a failed pair is run once more, never more


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    from conformance.images.engine import EngineUnavailableError, docker_client
    from conformance.images.results import ImageBuildError
    try:
        if args.build:
            from conformance.images.build import build_images
            build_images(args.protocols, log=lambda line: print(line, flush=True))
        client = docker_client(timeout=60)
        try:
            impls = [explicit(client, spec) for spec in args.images] if args.images else discover(client)
        finally:
            client.close()
        _check_protocols(args.protocols)
    except (EngineUnavailableError, ImageBuildError, SelectionError) as exc:
        print(f"conformance matrix: {exc}", file=sys.stderr)
        return 2
    if not impls:
        print("conformance matrix: no image labelled conformance.protocols; build them with "
              "`conformance images build` or name one with --image IMAGE=P1,P2", file=sys.stderr)
        return 2
    return run_matrix(impls, Path(args.out), protocols=args.protocols, keyword=args.keyword,
                      pair_timeout=args.pair_timeout)


def _check_protocols(protocols: list[str] | None) -> None:
    from conformance.protocols import available
    unknown = sorted(set(protocols or []) - set(available()))
    if unknown:
        raise SelectionError(f"no scenarios for {', '.join(unknown)} (known: {', '.join(available())})")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="conformance matrix", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="out/matrix", help="folder for matrix.json and one run folder per pair")
    parser.add_argument("--protocol", action="append", dest="protocols", metavar="P",
                        help="only this protocol (repeatable); default: every protocol an image declares")
    parser.add_argument("--image", action="append", dest="images", default=[], metavar="IMAGE[=P1,P2]",
                        help="only this image (repeatable); default: every local image labelled conformance.protocols")
    parser.add_argument("-k", dest="keyword", default=None, help="pytest -k expression applied to every pair")
    parser.add_argument("--pair-timeout", type=float, default=None, metavar="SECONDS",
                        help="bound on one attempt of a pair; default: the sum of its cases' deadlines "
                             f"+ {PAIR_OVERHEAD_SECONDS}s")
    parser.add_argument("--build", action="store_true", help="`conformance images build` first (cached)")
    return parser


def run_matrix(impls: list[Implementation], out: Path, *, protocols: list[str] | None = None,
               keyword: str | None = None, pair_timeout: float | None = None) -> int:
    from conformance.protocols import available
    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    known = set(available())
    wanted = set(protocols) if protocols else known

    def chosen(protocol: str) -> bool:
        return protocol in known and protocol in wanted
    impls = [impl for impl in impls if any(map(chosen, impl.protocols))]
    all_protocols = sorted({p for impl in impls for p in impl.protocols if chosen(p)})
    started = time.monotonic()
    todo = [(impl, protocol) for impl in impls for protocol in impl.protocols if protocol in all_protocols]
    stages = Stages(len(todo), "matrix")
    pairs = []
    try:
        for impl, protocol in todo:
            stages.step(f"{impl.name} x {protocol}")
            pairs.append(_run_pair(impl, protocol, out, keyword, pair_timeout, stages.line))
    finally:
        stages.finish()
    document = {
        "schemaVersion": 1,
        "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "seconds": round(time.monotonic() - started, 1),
        "selection": {"protocols": protocols, "images": [impl.image for impl in impls], "keyword": keyword,
                      "pairTimeoutSeconds": pair_timeout, "attempts": ATTEMPTS},
        "implementations": [impl.as_json() for impl in impls],
        "protocols": all_protocols,
        "pairs": pairs,
    }
    document["summary"] = {outcome: sum(pair["outcome"] == outcome for pair in pairs)
                           for outcome in ("passed", "flaky", "failing", "no-cases")}
    (out / "matrix.json").write_text(json.dumps(document, indent=1) + "\n")
    print_summary(document, out)
    return 1 if document["summary"]["failing"] else 0


def _run_pair(impl: Implementation, protocol: str, out: Path, keyword: str | None,
              pair_timeout: float | None, say: Callable[[str], None] = print) -> dict:
    pair_dir = out / impl.name / protocol
    shutil.rmtree(pair_dir, ignore_errors=True)  # this matrix's own output of an earlier run
    roles, budget = cases_of(protocol)
    selected = role_filter(roles, impl.roles)
    timeout = pair_timeout or PAIR_OVERHEAD_SECONDS + sum(budget.get(role, 0.0) for role in impl.roles)
    params = suite_params(impl, protocol)
    result = {"implementation": impl.name, "image": impl.image, "protocol": protocol, "params": params,
              "timeoutSeconds": round(timeout, 1)}
    if selected == "":  # e.g. a client-only image and a protocol without client-role cases
        pair_dir.mkdir(parents=True, exist_ok=True)
        return {**result, "outcome": "no-cases", "keyword": None, "attempts": [],
                "note": f"no {'/'.join(impl.roles)}-role case in scenarios/{protocol}"}
    expression = " and ".join(f"({part})" for part in (keyword, selected) if part) or None
    attempts: list[Attempt] = []
    for number in range(1, ATTEMPTS + 1):
        attempt_dir = pair_dir if number == 1 else pair_dir / f"attempt-{number}"
        command = run_command(protocol, impl.image, impl.name, attempt_dir, params, expression)
        attempt = run_attempt(number, command, attempt_dir, timeout)
        attempts.append(attempt)
        say(f"   {impl.name} x {protocol} attempt {number}: {attempt.outcome} ({attempt.seconds:.0f}s) "
            f"{' '.join(f'{g}={n}' for g, n in attempt.grades.items())}")
        if attempt.outcome in ("passed", "no-cases"):
            break
    changed = sorted(case for case in attempts[0].case_grades
                     if len({a.case_grades.get(case) for a in attempts}) > 1) if len(attempts) > 1 else []
    return {**result, "outcome": pair_outcome([a.outcome for a in attempts]), "keyword": expression,
            "grades": attempts[-1].grades, "changedCases": changed,
            "attempts": [a.as_json(out) for a in attempts]}


if __name__ == "__main__":
    sys.exit(main())
