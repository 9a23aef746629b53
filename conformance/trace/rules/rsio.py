"""rsio from the wire: every message of both roles through the harness's reader (the reference
codec), then the draft's rules a capture shows: a hello with an unsupported version answered
by goodbye and a close, a goodbye acknowledged, and no element beyond the subscriber's demand
(counted with the reference connection's own Demand)."""

from __future__ import annotations

from conformance.trace.rules import Rules as Base
from reference_impl.rsio.connection import Demand

_DELIVERIES = frozenset({"onNext", "onNextPacked", "onNextLastPart"})


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

    def __init__(self, transport: str, params: dict[str, int]) -> None:
        super().__init__(transport, params)
        self.hello: dict[str, int] = {}  # side -> the version its hello carried
        self.goodbye: dict[str, float] = {}  # side -> when it sent goodbye
        self.must_close: tuple[str, str, float] | None = None  # (requirement, why, since): the server must close
        self.demand: dict[int, Demand] = {}  # subscriber id -> what the client asked the server for
        self.prompt = params.get("prompt_ms", 1000) / 1000
        self.reported = False  # the server's missing goodbye: reported once
        self.ended: set[str] = set()

    def on_frame(self, side: str, frame, ts: float):
        f = frame.fields
        kind = f["type"]
        if kind in ("clientHello", "serverHello"):
            self.hello[side] = f["version"]
            if len(self.hello) == 2 and self.hello["client"] != self.hello["server"]:
                # the server's hello shows a version other than the client's: it does not support the client's
                self.must_close = ("rsio-wrong-version-goodbye", f"hellos for different versions (client "
                                   f"{self.hello['client']}, server {self.hello['server']})", ts)
            return []
        if kind == "goodbye":
            self.goodbye[side] = ts
            return []
        if side == "server" and self.must_close and "server" not in self.goodbye and not self.reported:
            self.reported = True
            return [("server", self.must_close[0], f"the server sent {kind} after {self.must_close[1]}, not goodbye")]
        if side == "client":
            if kind == "subscribe":
                self.demand[f["subscriber"]] = Demand(f["initialDemand"])
            elif kind == "request" and f["subscriber"] in self.demand:
                self.demand[f["subscriber"]].add(f["demand"])
            elif kind == "cancel":
                self.demand.pop(f["subscriber"], None)  # elements in flight may still come
            return []
        if kind in ("onComplete", "onError"):
            self.demand.pop(f["subscriber"], None)
        elif kind in _DELIVERIES and f["subscriber"] in self.demand:
            demand = self.demand[f["subscriber"]]
            if not demand.allows(1):
                return [("server", "rsio-reactive-streams-demand",
                         f"{kind} to subscriber {f['subscriber']} beyond the demand the client signalled", "client")]
            demand.take(1)
        return []

    def on_end(self, side: str, ts: float, how: str, pending: int):
        self.ended.add(side)
        if side == "server" and "server" not in self.goodbye and not self.reported:
            self.reported = True
            if "client" in self.goodbye:
                return [("server", "rsio-goodbye-orderly", f"the server closed ({how}) without acknowledging the "
                         "client's goodbye with its own")]
            if self.must_close:
                return [("server", self.must_close[0], f"the server closed ({how}) after {self.must_close[1]} "
                         "without a goodbye")]
        if side != "client" or "server" in self.ended:
            return []
        out = []
        if self.must_close and ts - self.must_close[2] >= self.prompt:
            requirement, why, since = self.must_close
            out.append(("server", requirement, f"the server kept the connection open {ts - since:.3f} s after {why}; "
                        f"the client closed it ({how})"))
        since = self.goodbye.get("client")
        if since is not None and "server" not in self.goodbye and ts - since >= self.prompt:
            out.append(("server", "rsio-goodbye-orderly", f"no goodbye from the server {ts - since:.3f} s after the "
                        f"client's; the client closed ({how})"))
        return out

    def on_gap(self, side: str) -> None:
        if side == "client":
            self.demand.clear()  # requests may be in what is not seen
