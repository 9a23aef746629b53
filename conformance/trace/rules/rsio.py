"""rsio from the wire: every message of both roles through the harness's reader (the reference
codec); codec errors name requirements.  No ordering rule yet (handshake, demand, ids)."""

from __future__ import annotations

from conformance.trace.rules import Rules as Base


class Rules(Base):
    protocol = "rsio"
    ERRORS = {
        "unknown-type": "rsio-serialization-format",
        "unknown-extension-type": "rsio-extension-type-before-hello",
        "not-extension-type": "rsio-extension-type-before-hello",
        "not-fixed-size": "rsio-fixed-size",
        "element-size-mismatch": "rsio-fixed-size",
    }
    FRAMING = "rsio-message-framing"
