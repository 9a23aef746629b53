"""MUST coverage per spec: catalogued MUST sentences with a case in the records."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from reports.catalogue import CatalogueSet, must_case_rows


@dataclass(frozen=True)
class Coverage:
    protocol: str
    status: str  # "known", or "unknown" when the protocol has no usable catalogue
    spec: str | None
    mustTotal: int | None
    mustCovered: int | None
    mustUntestable: int | None
    coverage: float | None  # covered / total
    uncovered: list[str]  # MUST ids without a recorded case (untestable ones included)
    reason: str | None

    def as_row(self) -> dict:
        return asdict(self)


def coverage(spark: SparkSession, valid: DataFrame, catalogues: CatalogueSet) -> list[Coverage]:
    seen_cases = valid.select("protocol", "case").distinct().withColumn("seen", F.lit(True))
    rows = must_case_rows(catalogues)
    per_requirement: dict[tuple[str, str], tuple[bool, bool]] = {}
    if rows:
        pairs = spark.createDataFrame(rows, "protocol string, requirement string, case string, untestable boolean")
        joined = (
            pairs.join(seen_cases, ["protocol", "case"], "left")
            .groupBy("protocol", "requirement")
            .agg(F.max(F.coalesce("seen", F.lit(False))).alias("covered"), F.max("untestable").alias("untestable"))
        )
        # Collected: one row per catalogued MUST sentence, a few hundred at most.
        per_requirement = {(r.protocol, r.requirement): (r.covered, r.untestable) for r in joined.collect()}
    # Collected: the distinct protocol names in the records (five at most).
    recorded = {r.protocol for r in valid.select("protocol").distinct().collect()}
    result = []
    for protocol in sorted(recorded | set(catalogues.by_protocol) | set(catalogues.problems)):
        catalogue = catalogues.by_protocol.get(protocol)
        if catalogue is None:
            reason = catalogues.problems.get(protocol, "no requirement catalogue")
            result.append(Coverage(protocol, "unknown", None, None, None, None, None, [], reason))
            continue
        must = catalogue.must()
        covered = [r.id for r in must if per_requirement.get((protocol, r.id), (False, False))[0]]
        total = len(must)
        result.append(
            Coverage(
                protocol,
                "known",
                catalogue.spec,
                total,
                len(covered),
                sum(1 for r in must if r.untestable is not None),
                len(covered) / total if total else None,
                [r.id for r in must if r.id not in covered],
                None,
            )
        )
    return result
