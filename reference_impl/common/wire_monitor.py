"""What a passive two-sided wire monitor reports, shared by every protocol's monitor.

The interop matrix names the side that broke the spec, whatever the protocol, so every
monitor speaks of sides and violations in these same terms.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Side(Enum):
    CLIENT = "client"
    SERVER = "server"

    @property
    def other(self) -> "Side":
        return Side.SERVER if self is Side.CLIENT else Side.CLIENT


@dataclass(frozen=True)
class Violation:
    side: Side  # the side that sent the offending frame (or bytes)
    rule: str
    frame: int  # index of the frame among the frames of both directions, from 0
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.side.value} broke {self.rule} (frame {self.frame}){': ' + self.detail if self.detail else ''}"
