"""Stage progress for long work (image builds, the matrix, the Spark report).

On a terminal, one status line "[3/7] what is running ..." is redrawn in place and cleared when
the next line is printed; in CI (``CI`` set) or when the stream is not a terminal, each stage is
one plain line, so logs stay readable and grep-able.  Pure Python: imported by conformance/ and
reports/ alike, without Spark.
"""

from __future__ import annotations

import os
import sys
import time
from typing import TextIO

_CLEAR = "\r\033[K"


def interactive(stream: TextIO) -> bool:
    if os.environ.get("CI"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class Stages:
    """Numbered stages of one job: ``step(name)`` when one starts, ``line(text)`` for output."""

    def __init__(self, total: int, label: str, stream: TextIO | None = None, live: bool | None = None) -> None:
        self.total = total
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.live = interactive(self.stream) if live is None else live
        self.done = 0
        self.started = time.monotonic()
        self._status = False

    def step(self, name: str) -> None:
        self.done += 1
        text = f"[{self.done}/{self.total}] {self.label}: {name}"
        if self.live:
            self.stream.write(f"{_CLEAR}{text} ...")
            self._status = True
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def clear(self) -> None:
        if self._status:
            self.stream.write(_CLEAR)
            self.stream.flush()
            self._status = False

    def line(self, text: str) -> None:
        """Print a line of the job's own output without it running into the status line."""
        self.clear()
        print(text, flush=True)

    def finish(self) -> None:
        self.clear()
        if not self.live:
            self.stream.write(f"{self.label}: {self.done} stages in {time.monotonic() - self.started:.1f}s\n")
            self.stream.flush()
