"""11/MTL from the wire: the ZMTP greeting and frames, then MTL messages, through the harness's
ZMTP reader and MTL codec for both roles; codec errors name requirements.  No ordering rule yet."""

from __future__ import annotations

from conformance.trace.rules import Rules as Base


class Rules(Base):
    protocol = "mtl"
    ERRORS = {"bad-boolean": "mtl-boolean", "bad-short-string": "mtl-short-string", "field-range": "mtl-integer"}
    FRAMING = "mtl-request-format"
