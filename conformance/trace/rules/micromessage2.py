"""Micromessage2 from the wire: every frame of both roles through the harness's reader (the
reference codec, with the handshake and large-frame joining); codec errors name requirements.
No ordering rule yet: the handshake's and acknowledgements' sequence are not checked passively."""

from __future__ import annotations

from conformance.trace.rules import Rules as Base


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
