"""The MTL wire monitors: ZMTP checked by :mod:`reference_impl.zmtp.monitor`, each message read
with MTL's codecs.

:class:`ControlMonitor` watches the control connection (11/MTL "Control Flow",
reference_impl/mtl/control.py).  The client's REQ sends '' command JSON; the server answers
'' code JSON (three digits 2xx-5xx), one reply per request, in order: a second request before
the reply, or a reply with no request open, breaks REQ's lock-step.

:class:`DataMonitor` watches one data connection (the port a 202 names; "Data Command
Encoding", reference_impl/mtl/codec.py): every command of both sides must decode, and the
server must keep the data flow's order rules:

    mtl-response-without-command  "The server MUST reply with a Response command that echoes the
                                  command sequence used by the client": a Response whose sequence
                                  is no Lease, Summon or Dismiss still awaiting its answer, nor one
                                  of the client's Content sequences so far (docs/profiles/mtl.md:
                                  a Content before the Lease gets Response 403)
    mtl-content-not-summoned      "The server MUST send the Response to a Summon command before any
                                  Content from that resource, and the server MUST NOT send any
                                  Content from a resource after a successful Response to a Dismiss"

Both read the server's direction in the order it sent it, so a Content sent before the 200 to a
Dismiss (in flight when the client dismissed) is no violation.
"""

from __future__ import annotations

from reference_impl.common.errors import CodecError
from reference_impl.common.wire_monitor import Side, Violation
from reference_impl.mtl import codec, control
from reference_impl.zmtp.monitor import ZmtpMonitor

__all__ = ["ControlMonitor", "DataMonitor", "Side", "Violation"]


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


class DataMonitor(ZmtpMonitor):
    def __init__(self) -> None:
        super().__init__(self._check)
        # the client's commands that await a Response, by sequence (the server may answer in any order)
        self._asked: dict[int, codec.Lease | codec.Summon | codec.Dismiss] = {}
        self._summoned: set[str] = set()  # as the server's own Responses say, in the order it sent them
        self._content_seq = 0  # the highest Content sequence the client sent (a refused Content gets a Response)

    def _check(self, side: Side, parts: list[bytes]):
        try:
            command = codec.decode_data(parts)
        except CodecError as exc:
            return [(f"mtl-data-{exc.code}", str(exc))]
        if side is Side.CLIENT:
            if isinstance(command, (codec.Lease, codec.Summon, codec.Dismiss)):
                self._asked[command.seq] = command
            elif isinstance(command, codec.Content):
                self._content_seq = max(self._content_seq, command.seq)
            return []
        if isinstance(command, codec.Response):
            return self._response(command)
        if isinstance(command, codec.Content):
            return self._content(command)
        return []

    def _response(self, response: codec.Response):
        asked = self._asked.pop(response.seq, None)
        if asked is None and 1 <= response.seq <= self._content_seq:
            return []  # an answer to a Content the server refused
        if asked is None:
            return [("mtl-response-without-command",
                     f"Response {response.seq} {response.code}: no Lease, Summon or Dismiss with that sequence "
                     "awaits an answer")]
        if response.code == 200 and isinstance(asked, codec.Summon):
            self._summoned.add(asked.resource)
        elif response.code == 200 and isinstance(asked, codec.Dismiss):
            self._summoned.discard(asked.resource)
        return []

    def _content(self, content: codec.Content):
        # an empty name is allowed when the lease has one resource: then some resource must be summoned
        if content.resource in self._summoned or (not content.resource and self._summoned):
            return []
        return [("mtl-content-not-summoned",
                 f"Content {content.seq} from resource {content.resource!r}, which no successful Summon opened "
                 "(or a successful Dismiss closed)")]
