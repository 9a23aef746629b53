"""A peer the profile pins to take every valid frame (a test service, a test client): its refusal
(an ERROR, a goodbye) right after a valid frame that exercises a rule, nothing on the connection
owing one, refused that frame.

``sent`` notes each frame of the other side: what it exercises (its requirement and what it was),
or None for one that ends that watch, while ``keep`` frames (valid ones the peer serves) leave it
as it is; ``spoil`` is for anything that may owe a refusal (invalid bytes, a finding against the
sender, a duty to close), after which nothing on the connection is judged.  A refusal later than
``window`` after the frame may be the peer's timeout on something else, so it is not judged."""

from __future__ import annotations


class Refusal:
    def __init__(self, refuser: str, refusal: str, window: float) -> None:
        self.refuser, self.refusal, self.window = refuser, refusal, window
        self.last: tuple[float, str, str] | None = None  # (when, requirement, what) of the frame watched
        self.spoiled = False

    def spoil(self) -> None:
        self.spoiled, self.last = True, None

    def spoil_if(self, findings, owed: bool = False) -> None:
        """Spoils the watch when one of ``findings`` is against the watched side (something wrong it
        sent may owe the refusal), or when ``owed`` (something else on the connection may)."""
        if owed or any(o[0] != self.refuser for o in findings):
            self.spoil()

    def sent(self, ts: float, exercises: tuple[str, str] | None) -> None:
        self.last = None if self.spoiled or exercises is None else (ts, *exercises)

    def refused(self, ts: float, how: str | None = None):
        """The refuser's refusal (``how``: another way it gave up, such as its close)."""
        last, self.last = self.last, None
        if last is None or self.spoiled or ts - last[0] > self.window:
            return []
        self.spoiled = True  # once: the refusal ends the connection
        return [(self.refuser, last[1], f"the {self.refuser} {how or 'answered ' + self.refusal} {ts - last[0]:.3f} s "
                 f"after {last[2]}, a valid frame it takes: the profile pins it to refuse only what the profile "
                 "names")]
