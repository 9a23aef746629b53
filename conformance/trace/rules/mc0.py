"""mc0 from the wire: ZMTP 3 greeting and CURVE handshake (RFC 25: HELLO, WELCOME, INITIATE,
READY, in that order), read by the harness's ZMTP reader for both roles.  What follows is
encrypted: without the session keys it is reported as not checkable, never skipped silently."""

from __future__ import annotations

from conformance.protocols.mc0 import message_frame
from conformance.protocols.zmtp_channel import ZmtpReader
from conformance.trace.rules import Rules as Base

_ORDER = [("client", "HELLO"), ("server", "WELCOME"), ("client", "INITIATE"), ("server", "READY")]


class Rules(Base):
    protocol = "mc0"
    FRAMING = "mc0-zmtp3"

    def __init__(self, transport: str, params: dict[str, int]) -> None:
        super().__init__(transport, params)
        self.mechanism: dict[str, str] = {}
        self.step = 0  # how far the CURVE handshake went
        self.encrypted = {"client": 0, "server": 0}

    def new_reader(self, side: str):
        return ZmtpReader(message_frame)

    def on_frame(self, side: str, frame, ts: float):
        f = frame.fields
        if f.get("kind") == "greeting":
            self.mechanism[side] = f["mechanism"]
            out = []
            if f["major"] < 3:
                out.append((side, "mc0-zmtp3", f"a ZMTP {f['version']} greeting, not ZMTP 3"))
            if f["mechanism"] != "CURVE":
                out.append((side, "mc0-curve", f"the greeting's mechanism is {f['mechanism']}, not CURVE"))
            return out
        if self.mechanism.get(side) != "CURVE":
            return []
        if self.step < len(_ORDER):
            expected_side, expected = _ORDER[self.step]
            name = f.get("command", f.get("kind"))
            if (side, name) != (expected_side, expected):
                self.step = len(_ORDER)  # out of step: the rest is not the handshake we know
                return [(side, "mc0-curve", f"{side} sent {name} where the CURVE handshake has the "
                         f"{expected_side}'s {expected}")]
            self.step += 1
            return []
        self.encrypted[side] += 1
        return []

    def notes(self):
        return [(side, f"{n} frames after the CURVE handshake are encrypted: not checkable without the session keys")
                for side, n in self.encrypted.items() if n]
