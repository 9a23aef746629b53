"""MUST coverage per spec: catalogued MUST sentences that a case actually tested.

A sentence counts as tested when one of its cases ran (graded PASSED,
FAILED, NON-STRICT or INFORMATIONAL) in the matrix, over every
implementation and for each one on its own. A case recorded only as
UNSUPPORTED, NOT-APPLICABLE or ERROR tested nothing; untestable sentences
have no case. Both stay "not tested".
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass

from reports.catalogue import CatalogueSet
from reports.compliance import Cell
from reports.grades import RAN


@dataclass(frozen=True)
class Coverage:
    protocol: str
    implementation: str | None  # None: any implementation in the report
    status: str  # "known", or "unknown" when the protocol has no usable catalogue
    spec: str | None
    mustTotal: int | None
    mustCovered: int | None  # tested by a case that ran
    mustUntestable: int | None
    coverage: float | None  # covered / total
    uncovered: list[str]  # MUST ids not tested (untestable ones included)
    reason: str | None

    def as_row(self) -> dict:
        return asdict(self)


def coverage(cells: Iterable[Cell], catalogues: CatalogueSet) -> list[Coverage]:
    ran: dict[tuple[str, str], set[str]] = defaultdict(set)  # (protocol, case) -> implementations it ran on
    implementations: dict[str, set[str]] = defaultdict(set)
    for c in cells:
        implementations[c["protocol"]].add(c["implementation"])
        if c["grade"] in RAN:
            ran[(c["protocol"], c["case"])].add(c["implementation"])
    result = []
    for protocol in sorted(set(implementations) | set(catalogues.by_protocol) | set(catalogues.problems)):
        catalogue = catalogues.by_protocol.get(protocol)
        if catalogue is None:
            reason = catalogues.problems.get(protocol, "no requirement catalogue")
            result.append(Coverage(protocol, None, "unknown", None, None, None, None, None, [], reason))
            continue
        must = catalogue.must()
        untestable = sum(1 for r in must if r.untestable is not None)
        for implementation in [None, *sorted(implementations[protocol])]:

            def tested(case: str, implementation: str | None = implementation) -> bool:
                on = ran.get((protocol, case), set())
                return bool(on) if implementation is None else implementation in on

            covered = [r.id for r in must if any(tested(case) for case in r.cases)]
            total = len(must)
            result.append(
                Coverage(
                    protocol,
                    implementation,
                    "known",
                    catalogue.spec,
                    total,
                    len(covered),
                    untestable,
                    len(covered) / total if total else None,
                    [r.id for r in must if r.id not in covered],
                    None,
                )
            )
    return result
