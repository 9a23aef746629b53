"""Grades, their order and the compliance levels built from them."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

# Worst first. FAILED outranks ERROR: when one run graded a case twice (say
# over two transports), a definite violation says more than a harness error.
WORST_FIRST = ("FAILED", "ERROR", "NON-STRICT", "UNSUPPORTED", "NOT-APPLICABLE", "INFORMATIONAL", "PASSED")

# Column names for per-grade counts (dashes make awkward column names).
COUNT_COLUMN = {
    "PASSED": "passed",
    "FAILED": "failed",
    "NON-STRICT": "nonStrict",
    "INFORMATIONAL": "informational",
    "UNSUPPORTED": "unsupported",
    "NOT-APPLICABLE": "notApplicable",
    "ERROR": "error",
}

FULLY_COMPLIANT = "fully compliant"
NON_STRICT_FINDINGS = "compliant with non-strict findings"
NON_COMPLIANT = "non-compliant"
LEVELS_BEST_FIRST = (FULLY_COMPLIANT, NON_STRICT_FINDINGS, NON_COMPLIANT)

# The levels judge only the cases that test a MUST or SHOULD sentence.
JUDGED_REQUIREMENTS = ("MUST", "SHOULD")


def severity(grade: Column) -> Column:
    """Higher is worse; unknown grades cannot occur in valid records."""
    result = F.lit(0)
    for rank, name in enumerate(reversed(WORST_FIRST)):
        result = F.when(grade == name, F.lit(rank)).otherwise(result)
    return result


def level(failed_or_error: Column, non_strict: Column) -> Column:
    return (
        F.when(failed_or_error > 0, F.lit(NON_COMPLIANT))
        .when(non_strict > 0, F.lit(NON_STRICT_FINDINGS))
        .otherwise(F.lit(FULLY_COMPLIANT))
    )


def worst_level(levels: list[str]) -> str:
    return max(levels, key=LEVELS_BEST_FIRST.index) if levels else FULLY_COMPLIANT
