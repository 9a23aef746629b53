"""RSocket from the wire: every frame of both roles through the harness's reader (the reference
codec, fragments joined; TCP length-prefixed or one frame per WebSocket message), codec errors
naming requirements, and rules a capture shows at once: the client's first frame is SETUP or
RESUME; each side opens streams of its own parity; an ERROR's code sits on the stream its kind
needs (connection errors on 0, stream errors above); a KEEPALIVE answer echoes the data of the
one that asked for it.  Credits and leases are not checked passively yet."""

from __future__ import annotations

from conformance.trace.rules import Rules as Base

_REQUESTS = frozenset({"REQUEST_RESPONSE", "REQUEST_FNF", "REQUEST_STREAM", "REQUEST_CHANNEL"})
_PARITY = {"client": "odd", "server": "even"}
# ERROR codes (Protocol.md, Error Codes) -> the requirement naming the stream they belong on
_ON_ZERO = {0x001: "rsocket-setup-error-stream-zero", 0x002: "rsocket-unsupported-setup-stream-zero",
            0x003: "rsocket-setup-error-stream-zero", 0x004: "rsocket-rejected-resume-stream-zero",
            0x101: "rsocket-connection-error-stream-zero", 0x102: "rsocket-connection-error-stream-zero"}
_ON_STREAM = {0x201: "rsocket-application-error-stream", 0x202: "rsocket-rejected-canceled-stream",
              0x203: "rsocket-rejected-canceled-stream", 0x204: "rsocket-invalid-stream"}


class Rules(Base):
    protocol = "rsocket"
    ERRORS = {"frame-too-short": "rsocket-frame-length-prefix", "truncated": "rsocket-frame-length-prefix",
              "trailing-bytes": "rsocket-frame-length-prefix", "frame-too-large": "rsocket-max-frame-size",
              "mime-not-ascii": "rsocket-mime-ascii", "extended-type-zero": "rsocket-ext-type-positive"}
    FRAMING = "rsocket-frame-length-prefix"

    def __init__(self, transport: str, params: dict[str, int]) -> None:
        super().__init__(transport, params)
        self.first_seen = False
        self.opened: dict[str, set[int]] = {"client": set(), "server": set()}
        self.keepalive_asked: dict[str, list[bytes]] = {"client": [], "server": []}  # data each side asked back

    def on_error(self, side: str, exc, ts: float):
        if getattr(exc, "ignorable", False):
            return []  # a frame the spec lets the receiver drop (the IGNORE flag)
        return super().on_error(side, exc, ts)

    def on_frame(self, side: str, frame, ts: float):
        f = frame.fields
        out = []
        if side == "client" and not self.first_seen:
            self.first_seen = True
            if f["type"] not in ("SETUP", "RESUME") or f["stream"] != 0:
                out.append(("client", "rsocket-first-frame-setup",
                            f"the client's first frame is {f['type']} on stream {f['stream']}, not SETUP or RESUME on 0"))
        if f["type"] in _REQUESTS and f["stream"] not in self.opened["client" if side == "server" else "server"]:
            self.opened[side].add(f["stream"])
            if f["parity"] != _PARITY[side]:
                out.append((side, "rsocket-stream-id-parity",
                            f"the {side} opened stream {f['stream']} with {f['type']}: {_PARITY[side]} IDs are its own"))
        if f["type"] == "ERROR":
            out += self._error(side, f)
        elif f["type"] == "KEEPALIVE":
            out += self._keepalive(side, f)
        return out

    def _error(self, side: str, f):
        code, stream = f["code"], f["stream"]
        if code in _ON_ZERO and stream != 0:
            return [(side, _ON_ZERO[code], f"ERROR {code:#x} on stream {stream}: its stream is 0")]
        if code in _ON_STREAM and stream == 0:
            return [(side, _ON_STREAM[code], f"ERROR {code:#x} on stream 0: it belongs to a stream above 0")]
        return []

    def _keepalive(self, side: str, f):
        peer = "server" if side == "client" else "client"
        if f["respond"]:
            self.keepalive_asked[side].append(bytes(f.get("data") or b""))
            return []
        asked = self.keepalive_asked[peer]
        if not asked:
            return []  # an unasked KEEPALIVE (or one answering what the capture did not show)
        wanted = asked.pop(0)
        if bytes(f.get("data") or b"") != wanted:
            return [(side, "rsocket-keepalive-echo", f"the KEEPALIVE answering the {peer}'s carries "
                     f"{len(f.get('data') or b'')} bytes of data, not the {len(wanted)} it was sent", peer)]
        return []
