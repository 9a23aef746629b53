"""The observer: one TCP connection's two directions fed, in capture order, through a protocol's
own frame readers (the harness adapters' readers, on the reference codecs) into its rules.

The rules (rules/<protocol>.py) see every frame of both roles in order and say which requirement
a frame, a codec error, or the way a side closed breaks.  A direction whose bytes stop being
checkable (a capture gap, a codec error after which frame boundaries are lost, an encrypted
session) gets a note with the reason, and the rules hear no more of it.
"""

from __future__ import annotations

from reference_impl.common.errors import CodecError

from conformance.trace.findings import SHOULD, Finding, Note, requirements
from conformance.trace.tcp import CLIENT, SERVER
from conformance.trace.websocket import NotWebSocket, WsDirection


class Observer:
    def __init__(self, protocol: str, transport: str, client: tuple[str, int], server: tuple[str, int],
                 rules) -> None:
        self.protocol, self.transport = protocol, transport
        self.endpoints = {CLIENT: f"{client[0]}:{client[1]}", SERVER: f"{server[0]}:{server[1]}"}
        self.connection = f"{self.endpoints[CLIENT]} -> {self.endpoints[SERVER]}"
        self.rules = rules
        self.readers = {side: rules.new_reader(side) for side in (CLIENT, SERVER)}
        self.ws = {side: WsDirection(side) for side in (CLIENT, SERVER)} if transport == "ws" else None
        self.count = {CLIENT: 0, SERVER: 0}  # frames each side sent
        self.boundary = {CLIENT: 0, SERVER: 0}  # stream offset where the side's next frame begins
        self.dead = {CLIENT: False, SERVER: False}
        self.findings: list[Finding] = []
        # findings that rest on having seen every frame of the other side (a reply to a request
        # never seen): kept at the end only if that side's frames were all seen
        self.provisional: list[tuple[str, Finding]] = []
        self.notes: list[Note] = []
        self.frames_checked = 0
        self.facts: list[tuple[str, str, dict]] = []  # (protocol, session key, fact): see trace/sessions

    # -- the Sink interface (conformance.trace.tcp) --------------------------------------------

    def data(self, sender: str, ts: float, offset: int, data: bytes) -> None:
        self.rules.last_data[sender] = ts
        if self.dead[sender]:
            return
        end = offset + len(data)
        if self.ws is None:
            self._decode(sender, ts, data, end)
            return
        try:
            messages = self.ws[sender].feed(data)
        except NotWebSocket as exc:
            self._stop(sender, offset, f"not a WebSocket stream: {exc}")
            return
        for kind, payload in messages:
            if kind in ("text", "binary"):
                self._decode(sender, ts, payload, None, offset)
            else:
                self._report(sender, self.rules.on_ws(sender, kind, payload, ts), offset)
            if self.dead[sender]:
                return

    def gap(self, sender: str, offset: int, reason: str) -> None:
        if not self.dead[sender]:
            self._stop(sender, offset, reason)

    def end(self, sender: str, ts: float, how: str) -> None:
        pending = self._pending(sender)
        if pending:
            self._report(sender, [(sender, self.rules.FRAMING, f"the {sender} ended its stream ({how}) inside a frame: "
                                   f"{pending} bytes of it were sent, not the rest")],
                         self.boundary[sender], frame=self.count[sender])
        self._report(sender, self.rules.on_end(sender, ts, how, pending), self.boundary[sender])

    def abort(self, sender: str, ts: float) -> None:
        self._report(sender, self.rules.on_abort(sender, ts), self.boundary[sender])

    def finish(self) -> None:
        self._report(SERVER, self.rules.on_finish(), None)
        for (frame, offset, span), violation in self.rules.on_finish_at():
            self._report(violation[0], [violation], offset, frame=frame, span=span)
        self.findings += [f for peer, f in self.provisional if not self.dead[peer]]
        self.provisional = []
        for side, reason in self.rules.notes():
            self.notes.append(Note(self.protocol, self.connection, side, self.boundary[side], reason, self.transport))
        # a session lives on one server: the same key at another address is another session
        where = {"connection": self.connection, "endpoints": self.endpoints, "transport": self.transport}
        self.facts = [(self.protocol, f"{self._server_of(fact)} {key}",
                       {**{k: v for k, v in fact.items() if k not in ("server_port", "host_wide")}, **where})
                      for key, fact in self.rules.session_facts()]

    def _server_of(self, fact: dict) -> str:
        """The server address a fact's session lives at: this connection's, the same host at the
        port the fact names (``server_port``: an MTL lease a control connection granted is the
        session of the data port its 202 named), or the host alone (``host_wide``: what crosses
        every port of the server, such as MTL Contents routed from writers to readers)."""
        host = self.endpoints[SERVER].rsplit(':', 1)[0]
        if fact.get("host_wide"):
            return host
        port = fact.get("server_port")
        return self.endpoints[SERVER] if port is None else f"{host}:{port}"

    # -- decoding ------------------------------------------------------------------------------

    def _pending(self, sender: str) -> int:
        if self.dead[sender]:
            return 0
        reader = self.readers[sender]
        return getattr(reader, "pending", 0) or 0

    def _decode(self, sender: str, ts: float, data: bytes | str, end: int | None, ws_offset: int = 0) -> None:
        start = self.boundary[sender] if end is not None else ws_offset
        try:
            frames = self.readers[sender].feed(data)
        except CodecError as exc:
            self._report(sender, self.rules.on_error(sender, exc, ts), start, frame=self.count[sender])
            self._stop(sender, start, f"invalid bytes ({exc.code}): the rest of this side is not checked")
            return
        span = end if end is not None and len(frames) > 1 else None
        on_frame = self.rules.on_frame
        for frame in frames:
            self.frames_checked += 1
            self.rules.at = (self.count[sender], start, span)  # where a session fact places this frame
            found = on_frame(sender, frame, ts)
            if found:
                self._report(sender, found, start, frame=self.count[sender], span=span)
            self.count[sender] += 1
        if end is not None:
            self.boundary[sender] = end - self._pending(sender)
        # a reader that fails after frames it returned raises on its next feed (see StreamDecoder)
        if end is not None and frames and self._pending(sender):
            try:
                self.readers[sender].feed(b"")
            except CodecError as exc:
                at = self.boundary[sender]
                self._report(sender, self.rules.on_error(sender, exc, ts), at, frame=self.count[sender])
                self._stop(sender, at, f"invalid bytes ({exc.code}): the rest of this side is not checked")

    def _stop(self, sender: str, offset: int, reason: str) -> None:
        self.dead[sender] = True
        self.rules.on_gap(sender)  # rules that need this side's frames stop judging the other side by them
        self.notes.append(Note(self.protocol, self.connection, sender, offset, reason, self.transport))

    def _report(self, sender: str, violations, offset: int | None, frame: int | None = None,
                span: int | None = None) -> None:
        for who, requirement, message, *extra in violations or ():
            known = requirements(self.protocol)
            if requirement not in known:
                raise KeyError(f"rules name {requirement!r}, not a requirement of {self.protocol}")
            # extra: the side whose frames it rests on, and/or SHOULD (the profile grades it NON-STRICT)
            needs = [x for x in extra if x in (CLIENT, SERVER)]
            graded = SHOULD if SHOULD in extra else None
            finding = Finding(self.protocol, requirement, who, self.connection, self.endpoints[who],
                              frame if who == sender else None, offset if who == sender else None,
                              message, self.transport, span if who == sender else None, graded)
            if needs:  # (side, requirement, message, the side whose frames it rests on)
                self.provisional.append((needs[0], finding))
            else:
                self.findings.append(finding)
