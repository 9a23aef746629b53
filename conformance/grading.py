"""Grades of docs/profiles/README.md ("Grades"), in the style of Autobahn|Testsuite and h2spec.

A case has an exchange grade and, when it checks one, a close grade; the
overall grade is the worse of the two.
"""

from __future__ import annotations

from enum import Enum


class Grade(str, Enum):
    PASSED = "PASSED"
    INFORMATIONAL = "INFORMATIONAL"
    NOT_APPLICABLE = "NOT-APPLICABLE"
    UNSUPPORTED = "UNSUPPORTED"
    NON_STRICT = "NON-STRICT"
    FAILED = "FAILED"
    ERROR = "ERROR"

    @property
    def severity(self) -> int:
        return _SEVERITY[self]

    def is_failure(self, *, strict: bool) -> bool:
        if self in (Grade.FAILED, Grade.ERROR):
            return True
        return strict and self is Grade.NON_STRICT


_SEVERITY = {
    Grade.PASSED: 0,
    Grade.INFORMATIONAL: 1,
    Grade.NOT_APPLICABLE: 2,
    Grade.UNSUPPORTED: 3,
    Grade.NON_STRICT: 4,
    Grade.FAILED: 5,
    Grade.ERROR: 6,
}

LEVELS = ("MUST", "SHOULD", "MAY", "INFO")


def grade_for_violation(level: str) -> Grade:
    """What breaking a requirement of this level costs."""
    if level == "MUST":
        return Grade.FAILED
    if level == "SHOULD":
        return Grade.NON_STRICT
    return Grade.INFORMATIONAL


def worst(*grades: Grade | None) -> Grade:
    present = [g for g in grades if g is not None]
    return max(present, key=lambda g: g.severity) if present else Grade.PASSED
