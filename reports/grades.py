"""Grades, their order and the compliance levels built from them (no Spark here)."""

from __future__ import annotations

# Worst first. FAILED outranks ERROR: when one run graded a case twice on one
# transport, a definite violation says more than a harness error.
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

# Grades given after the case exercised the target: what it did was judged.
# UNSUPPORTED and NOT-APPLICABLE say why a case did not run, ERROR that it
# could not; none of them is evidence that a requirement is met.
RAN = ("PASSED", "FAILED", "NON-STRICT", "INFORMATIONAL")

FULLY_COMPLIANT = "fully compliant"
NON_STRICT_FINDINGS = "compliant with non-strict findings"
NOT_FULLY_TESTED = "not fully tested"
NON_COMPLIANT = "non-compliant"
LEVELS_BEST_FIRST = (FULLY_COMPLIANT, NON_STRICT_FINDINGS, NOT_FULLY_TESTED, NON_COMPLIANT)

# FAILED or ERROR on a case of these levels makes an implementation non-compliant.
JUDGED_REQUIREMENTS = ("MUST", "SHOULD")


def worst_level(levels: list[str]) -> str:
    # Nothing judged is nothing tested, never a claim of compliance.
    return max(levels, key=LEVELS_BEST_FIRST.index) if levels else NOT_FULLY_TESTED
