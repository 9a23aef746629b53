"""Findings of the passive checker, and the result records they become (docs/records.md).

A finding names a requirement of docs/requirements/<protocol>.yaml: its id, level (MUST or
SHOULD) and quoted text, where on the wire it was seen (connection, sender, frame index, byte
offset) and why.  Notes are what could not be checked (a gap, an encrypted session): recorded
as INFORMATIONAL, never as a violation.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import yaml

from conformance.paths import docs_dir

GRADE_OF_LEVEL = {"MUST": "FAILED", "SHOULD": "NON-STRICT"}
#: a rule's violation may carry this among its extra items: the finding is graded at SHOULD level
SHOULD = "SHOULD"


@dataclass(frozen=True)
class Requirement:
    id: str
    level: str
    text: str
    spec: str


@lru_cache(maxsize=None)
def requirements(protocol: str) -> dict[str, Requirement]:
    path = docs_dir() / "requirements" / f"{protocol}.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return {r["id"]: Requirement(r["id"], r["level"], str(r.get("text", "")), str(data.get("spec", "")))
            for r in data["requirements"]}


@dataclass(frozen=True)
class Finding:
    protocol: str
    requirement: str  # a requirement id of the protocol's catalogue
    sender: str  # "client" or "server": the side that broke it
    connection: str
    endpoint: str  # address:port of the side that broke it
    frame: int | None  # index of the frame among those the sender sent (0-based), None: not a frame
    offset: int | None  # byte offset in the sender's stream (where the frame, or the bad bytes, start)
    message: str
    transport: str = "tcp"
    offset_end: int | None = None  # set when the frame lies somewhere in [offset, offset_end): several
    # frames completed in one segment are located by that segment's span
    # "SHOULD" where the profile grades this breach of a MUST requirement NON-STRICT (STMP: an unknown
    # ACTION's error status other than NotFound), as the active case that tests it does
    graded: str | None = None

    @property
    def level(self) -> str:
        return self.graded or requirements(self.protocol)[self.requirement].level

    def __str__(self) -> str:
        where = f"frame {self.frame}" if self.frame is not None else "stream"
        if self.offset is not None and self.offset_end is not None:
            where += f" in bytes {self.offset}-{self.offset_end - 1}"
        elif self.offset is not None:
            where += f" at byte {self.offset}"
        return (f"{self.level} {self.requirement}: {self.connection} {self.sender} {self.endpoint}, "
                f"{where}: {self.message}")


@dataclass(frozen=True)
class Note:
    """Part of a connection that could not be checked, and why."""

    protocol: str
    connection: str
    sender: str
    offset: int
    reason: str
    transport: str = "tcp"

    def __str__(self) -> str:
        return f"not checkable: {self.connection} {self.sender} from byte {self.offset}: {self.reason}"


def record_of(item: Finding | Note, *, run: str, time: str, source: str, implementation: str | None) -> dict[str, Any]:
    """A result record (conformance/schemas/record.schema.json), labelled passive."""
    if isinstance(item, Finding):
        req = requirements(item.protocol)[item.requirement]
        grade, level, case = GRADE_OF_LEVEL[item.level], item.level, f"{item.protocol}/passive/{item.requirement}"
        spec, spec_ref = req.text, f"{req.spec}#{item.requirement}"
        extra = {"requirementId": item.requirement, "sender": item.sender, "frameIndex": item.frame,
                 "byteOffset": item.offset, "byteOffsetEnd": item.offset_end}
        impl = implementation or item.endpoint
    else:
        grade, level, case, spec, spec_ref = "INFORMATIONAL", "INFO", f"{item.protocol}/passive/not-checkable", "", ""
        extra = {"sender": item.sender, "byteOffset": item.offset}
        impl = implementation or item.connection.split(" -> ")[-1]
    return {
        "run": run, "time": time, "implementation": impl, "implementationVersion": "unknown",
        "target": f"capture:{source}", "protocol": item.protocol, "family": "passive", "case": case,
        "transport": item.transport, "requirement": level, "grade": grade, "exchangeGrade": grade,
        "closeGrade": None, "message": str(item), "spec": spec, "specRef": spec_ref, "durationMs": 0,
        "wirelog": None, "passive": True, "capture": source, "connection": item.connection, **extra,
    }
