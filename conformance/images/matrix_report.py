"""The outcome of a pair from its attempts, and the one-screen summary of `conformance matrix`."""

from __future__ import annotations

from pathlib import Path

GOOD = ("PASSED", "INFORMATIONAL")


def pair_outcome(attempts: list[str]) -> str:
    """passed (first time), flaky (failed, then passed), failing (failed every time), no-cases."""
    if not attempts:
        return "no-cases"
    if attempts[0] in ("passed", "no-cases"):
        return attempts[0]
    return "flaky" if "passed" in attempts[1:] else "failing"


def _cell(pair: dict | None) -> str:
    if pair is None:
        return "-"
    grades = pair.get("grades") or {}
    graded = sum(n for grade, n in grades.items() if grade != "NOT-APPLICABLE")
    good = sum(grades.get(grade, 0) for grade in GOOD)
    tries = f" x{len(pair['attempts'])}" if len(pair["attempts"]) > 1 else ""
    counts = f" {good}/{graded}" if graded else ""
    outcome = pair['outcome'].upper() if pair['outcome'] in ("flaky", "failing") else pair['outcome']
    return f"{outcome}{counts}{tries}"


def print_summary(document: dict, out: Path) -> None:
    protocols = document["protocols"]
    pairs = {(p["implementation"], p["protocol"]): p for p in document["pairs"]}
    names = [impl["name"] for impl in document["implementations"]]
    width = max([len("implementation")] + [len(n) for n in names])
    cells = {key: _cell(pair) for key, pair in pairs.items()}
    column = max([14] + [len(p) for p in protocols] + [len(c) for c in cells.values()])
    print()
    print(f"{'implementation':<{width}}  " + "  ".join(f"{p:<{column}}" for p in protocols))
    for name in names:
        print(f"{name:<{width}}  " + "  ".join(f"{cells.get((name, p), '-'):<{column}}" for p in protocols))
    summary = document["summary"]
    print(f"\n{len(pairs)} pairs in {document['seconds']:.0f}s: " + ", ".join(f"{n} {k}" for k, n in summary.items()))
    print("cells: outcome, PASSED+INFORMATIONAL / graded cases (last attempt), xN = attempts")
    for pair in document["pairs"]:
        if pair["outcome"] in ("flaky", "failing"):
            last = pair["attempts"][-1]
            changed = f"; grade changed: {', '.join(pair['changedCases'][:3])}" if pair["changedCases"] else ""
            print(f"  {pair['outcome']:<8} {pair['implementation']} x {pair['protocol']}: "
                  f"{out / last['records']}{changed}")
    print(f"matrix: {out / 'matrix.json'}")
