"""The MTL control-connection monitor: ZMTP checked by :mod:`reference_impl.zmtp.monitor`, each
message read with the control codec (11/MTL "Control Flow", reference_impl/mtl/control.py).

The client's REQ sends '' command JSON; the server answers '' code JSON (three digits 2xx-5xx),
one reply per request, in order: a second request before the reply, or a reply with no request
open, breaks REQ's lock-step.  Data connections (the port a 202 names) are not monitored here.
"""

from __future__ import annotations

from reference_impl.common.errors import CodecError
from reference_impl.mtl import control
from reference_impl.common.wire_monitor import Side, Violation
from reference_impl.zmtp.monitor import ZmtpMonitor

__all__ = ["ControlMonitor", "Side", "Violation"]


class ControlMonitor(ZmtpMonitor):
    def __init__(self) -> None:
        super().__init__(self._check)
        self._open = 0  # requests without a reply yet

    def _check(self, side: Side, parts: list[bytes]):
        try:
            _, frames = control.split_envelope(parts)
            if side is Side.CLIENT:
                control.decode_request(frames)
            else:
                control.decode_reply(frames)
        except CodecError as exc:
            return [(f"mtl-{exc.code}", str(exc))]
        if side is Side.CLIENT:
            self._open += 1
            return [("mtl-request-before-reply", "REQ sends one request at a time")] if self._open > 1 else []
        if self._open == 0:
            return [("mtl-reply-without-request", "")]
        self._open -= 1
        return []
