"""What one build step did, for the CLI's report and the cache tests."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal

Log = Callable[[str], None]


class ImageBuildError(RuntimeError):
    """A build step failed; the message carries the tail of its output."""


@dataclass(frozen=True)
class BuildOutcome:
    what: str  # image name:tag, or a host-side artefact such as the package set
    action: Literal["built", "reused"]
    seconds: float

    def line(self) -> str:
        return f"{self.action:>6}  {self.what}  ({self.seconds:.1f}s)"


def tail(text: str, lines: int = 30) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])
