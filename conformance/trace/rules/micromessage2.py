"""Micromessage2 from the wire: every frame of both roles through the harness's reader (the
reference codec, with the handshakes and large-frame joining; the client's side reads its
hello and its final handshake), codec errors naming requirements, and the one close rule a
capture shows plainly: a peer that receives an ERROR frame closes (the reference connection
goes CLOSED on it) and sends nothing more.  Handshake contents and acknowledgement windows are
not checked passively yet."""

from __future__ import annotations

from conformance.protocols.micromessage2 import new_reader
from conformance.trace.rules import Rules as Base, other


class Rules(Base):
    protocol = "micromessage2"
    ERRORS = {
        "reserved-flags": "mm2-flags-byte",
        "conflicting-kind": "mm2-frame-kind",
        "zero-extension-id": "mm2-extension-index",
        "zero-sequence": "mm2-ack-number",
        "fragment-order": "mm2-continued",
        "fragment-mismatch": "mm2-continued",
        "non-ascii": "mm2-field-restrictions",
        "field-too-long": "mm2-field-restrictions",
    }
    FRAMING = "mm2-payload-length"

    def __init__(self, transport: str, params: dict[str, int]) -> None:
        super().__init__(transport, params)
        self.error_at: dict[str, float] = {}  # side -> when it received an ERROR frame
        self.reported: set[str] = set()
        self.ended: set[str] = set()
        self.prompt = params.get("prompt_ms", 1000) / 1000

    def new_reader(self, side: str):
        reader = new_reader(self.transport)
        reader.target_is_client = side == "client"  # a client sends two handshakes: hello, then final
        return reader

    def on_frame(self, side: str, frame, ts: float):
        if frame.fields.get("frame") == "error":
            self.error_at.setdefault(other(side), ts)
            return []
        if side in self.error_at and side not in self.reported:
            self.reported.add(side)
            return [(side, "mm2-error-frame", f"the {side} sent a {frame.fields.get('frame')} frame after it had "
                     "received an ERROR frame: it must close")]
        return []

    def on_end(self, side: str, ts: float, how: str, pending: int):
        self.ended.add(side)
        peer = other(side)
        since = self.error_at.get(peer)
        if since is None or peer in self.ended or peer in self.reported or ts - since < self.prompt:
            return []
        self.reported.add(peer)
        return [(peer, "mm2-error-frame", f"the {peer} kept the connection open {ts - since:.3f} s after it received "
                 f"an ERROR frame; the {side} closed it ({how})")]
