"""11/MTL from the wire: the ZMTP greeting and frames, then MTL messages, through the harness's
ZMTP reader for both roles (the client's control requests decoded by the reference control
codec, everything else by the harness's MTL reader), and what a capture shows of the server:
an ill-formed control request is dropped, not answered (SHOULD); no Content from a resource
after a successful Response to its Dismiss; a second Summon of a summoned resource is refused.
Authentication, leases and confirms are not checked passively yet."""

from __future__ import annotations

from reference_impl.common.errors import CodecError
from reference_impl.mtl import control

from conformance.protocols.base import Frame
from conformance.protocols.mtl import new_reader, to_frame
from conformance.protocols.zmtp_channel import ZmtpReader
from conformance.trace.rules import Rules as Base


def _client_frame(parts: list[bytes]) -> Frame:
    """A control request (REQ envelope: an empty first frame), else a data command.  An
    ill-formed message becomes a frame of its own: ZMTP framing still holds after it."""
    try:
        if parts and parts[0] == b"":
            request = control.decode_request(parts[1:])
            return Frame({"kind": "request", "command": request.command}, f"MTL request {request.command}")
        return to_frame(parts)
    except CodecError as exc:
        control_request = bool(parts) and parts[0] == b""
        return Frame({"kind": "ill-formed", "error": exc, "control": control_request}, f"ill-formed: {exc}")


class Rules(Base):
    protocol = "mtl"
    ERRORS = {"bad-boolean": "mtl-boolean", "bad-short-string": "mtl-short-string", "field-range": "mtl-integer",
              "bad-json": "mtl-json"}
    FRAMING = "mtl-request-format"

    def __init__(self, transport: str, params: dict[str, int]) -> None:
        super().__init__(transport, params)
        self.requests = 0  # well-formed control requests not yet answered
        self.ill_formed = 0  # ill-formed control requests since
        self.commands: dict[int, tuple[str, str]] = {}  # seq -> (kind, resource) of the client's Summon/Dismiss
        self.summoned: set[str] = set()
        self.dismissed: set[str] = set()

    def new_reader(self, side: str):
        return ZmtpReader(_client_frame) if side == "client" else new_reader(self.transport)

    def on_error(self, side: str, exc, ts: float):
        found = super().on_error(side, exc, ts)
        if side == "server" and exc.code not in self.ERRORS:
            return [(side, "mtl-reply-format", message) for _, _, message in found]
        return found

    def on_frame(self, side: str, frame, ts: float):
        f = frame.fields
        kind = f.get("kind")
        if side == "client":
            return self._client(f, kind)
        if kind == "reply":
            if self.requests:
                self.requests -= 1
            elif self.ill_formed:
                self.ill_formed -= 1
                return [("server", "mtl-control-drop-ill-formed",
                         f"the server answered an ill-formed request ({f.get('code')}) instead of dropping it", "client")]
        elif kind == "response" and f.get("seq") in self.commands:
            return self._response(f)
        elif kind == "content" and f.get("resource") in self.dismissed:
            return [("server", "mtl-no-content-after-dismiss",
                     f"Content from {f['resource']!r} after the successful Response to its Dismiss", "client")]
        return []

    def _client(self, f, kind):
        if kind == "ill-formed":
            error: CodecError = f["error"]
            if f["control"]:
                self.ill_formed += 1
            return [("client", self.ERRORS.get(error.code, self.FRAMING), f"an ill-formed message: {error}")]
        if kind == "request":
            self.requests += 1
        elif kind in ("summon", "dismiss"):
            self.commands[f["seq"]] = (kind, f.get("resource", ""))
        return []

    def _response(self, f):
        kind, resource = self.commands.pop(f["seq"])
        ok = 200 <= int(f.get("code", 0)) < 300
        if kind == "dismiss" and ok:
            self.dismissed.add(resource)
            self.summoned.discard(resource)
        elif kind == "summon" and ok:
            if resource in self.summoned:
                return [("server", "mtl-summon-response",
                         f"a second Summon of {resource!r}, summoned already, was answered {f.get('code')}, "
                         "not refused", "client")]
            self.summoned.add(resource)
            self.dismissed.discard(resource)
        return []

    def on_gap(self, side: str) -> None:
        if side == "client":
            self.commands.clear()
