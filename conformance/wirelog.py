"""Per-case wire log: every byte in both directions, with timestamps."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

SENT, RECEIVED, NOTE = ">>", "<<", "--"
_MAX_LOGGED = 4096  # bytes of one chunk shown in full; the rest is summarised


@dataclass
class WireEntry:
    t: float
    direction: str
    data: bytes | str

    def render(self, t0: float) -> str:
        stamp = f"{(self.t - t0) * 1000:9.3f}ms {self.direction}"
        if self.direction == NOTE:
            return f"{stamp} {self.data}"
        if isinstance(self.data, str):
            text = self.data if len(self.data) <= _MAX_LOGGED else self.data[:_MAX_LOGGED] + "..."
            return f"{stamp} text[{len(self.data)}] {text!r}"
        return f"{stamp} bytes[{len(self.data)}]\n{hexdump(self.data)}"


@dataclass
class WireLog:
    entries: list[WireEntry] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)

    def sent(self, data: bytes | str) -> None:
        self.entries.append(WireEntry(time.monotonic(), SENT, data))

    def received(self, data: bytes | str) -> None:
        self.entries.append(WireEntry(time.monotonic(), RECEIVED, data))

    def note(self, text: str) -> None:
        self.entries.append(WireEntry(time.monotonic(), NOTE, text))

    def render(self) -> str:
        return "\n".join(e.render(self.started) for e in self.entries) + "\n"


def hexdump(data: bytes, width: int = 16) -> str:
    shown = data[:_MAX_LOGGED]
    lines = []
    for offset in range(0, len(shown), width):
        chunk = shown[offset:offset + width]
        hexpart = " ".join(f"{b:02x}" for b in chunk)
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"    {offset:08x}  {hexpart:<{width * 3}} {text}")
    if len(data) > len(shown):
        lines.append(f"    ... {len(data) - len(shown)} more bytes")
    return "\n".join(lines)
