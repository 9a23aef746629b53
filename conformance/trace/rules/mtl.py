"""11/MTL from the wire: the ZMTP greeting and frames, then MTL messages, through the harness's
ZMTP reader for both roles (the client's control requests decoded by the reference control
codec, everything else by the harness's MTL reader); codec errors name requirements.  No
ordering rule yet (Connection.Open first, leases, confirms)."""

from __future__ import annotations

from conformance.protocols.base import Frame
from conformance.protocols.mtl import new_reader, to_frame
from conformance.protocols.zmtp_channel import ZmtpReader
from conformance.trace.rules import Rules as Base
from reference_impl.mtl import control


def _client_frame(parts: list[bytes]) -> Frame:
    """A control request (REQ envelope: an empty first frame), else a data command."""
    if parts and parts[0] == b"":
        request = control.decode_request(parts[1:])
        return Frame({"kind": "request", "command": request.command}, f"MTL request {request.command}")
    return to_frame(parts)


class Rules(Base):
    protocol = "mtl"
    ERRORS = {"bad-boolean": "mtl-boolean", "bad-short-string": "mtl-short-string", "field-range": "mtl-integer",
              "bad-json": "mtl-json"}
    FRAMING = "mtl-request-format"

    def new_reader(self, side: str):
        return ZmtpReader(_client_frame) if side == "client" else new_reader(self.transport)

    def on_error(self, side: str, exc, ts: float):
        found = super().on_error(side, exc, ts)
        if side == "server" and exc.code not in self.ERRORS:
            return [(side, "mtl-reply-format", message) for _, _, message in found]
        return found
