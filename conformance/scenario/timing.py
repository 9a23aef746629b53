"""The suite's own waits: named, so a user can set each with ``--param NAME=MS``, and one
``--time-scale F`` that stretches every wait on the target for a slow one (a loaded CI runner,
a JVM warming up).

A wait is an upper bound on how long the suite gives the target: a silence window, a
``within_ms``, a sleep before checking, the case deadline.  Stretching one can only let a slow
target catch up; it never shortens what the target must wait out.  Two kinds of duration are
therefore never stretched: a lower bound the target must respect (``not_before_ms``) and the
pace of the suite's own keep-alive traffic (``keep_alive``'s ``every_ms``), which must stay
shorter than the target's real timers however slow its replies are.
"""

from __future__ import annotations

#: Defaults of the suite's waits shared by every protocol (each adapter adds ``silence_ms``, how long
#: "nothing (more) arrives" is watched, and ``reply_ms``, how long a provoked reply may take).
SUITE_WAITS = {
    "expect_ms": 5000,     # an expect with no within_ms of its own
    "close_ms": 3000,      # a close the spec requires, after the frame that calls for it
    "prompt_ms": 1000,     # what should follow at once (observed behaviour, a NOOP for a short TTL)
    "transfer_ms": 10000,  # a reply carrying a megabyte or more
    "keepalive_ms": 1000,  # keep_alive's pace: at most a second, shorter than any timer a spec allows
}
#: of those, the suite's own pacing, which --time-scale never stretches
UNSCALED_WAITS = frozenset({"keepalive_ms"})
#: the waits each protocol's adapter adds (its ``params``), stretched like the suite's
ADAPTER_WAITS = frozenset({"silence_ms", "reply_ms"})


def parse_time_scale(text: str) -> float:
    """A positive, finite factor; the caller turns the ValueError into its usage error."""
    scale = float(text)
    if not 0 < scale < float("inf"):
        raise ValueError(f"the time scale is a number above 0, got {text!r}")
    return scale
