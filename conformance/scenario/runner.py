"""Run one case against one endpoint and grade it.

Every wait is bounded: each expectation has its own deadline and the whole
case has a backstop deadline, so a target that hangs, drips bytes or floods
the suite ends the case with a grade, never a hang.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Awaitable, Callable
from urllib.parse import urlsplit, urlunsplit

from conformance.channels import Channel, ChannelError, Deadline, TcpChannel, WsChannel
from conformance.faultproxy import FaultProxy
from conformance.grading import Grade, grade_for_violation, worst
from conformance.protocols.base import Frame, ProtocolAdapter, TargetFault
from conformance.protocols.frame_specs import EXPECT_OPTIONS
from conformance.scenario.loader import Case
from conformance.scenario.timing import SUITE_WAITS
from conformance.scenario.values import ValueError_, has_expression, millis, substitute, unique_payloads
from conformance.suite_server import SuiteServer
from conformance.wirelog import RECEIVED, SENT, WireLog
from reference_impl.common.errors import CodecError

CONNECT_TIMEOUT = 5.0
MAX_MACRO_DEPTH = 4
WS_MAX_MESSAGE = 64 * 1024 * 1024
_YIELD_EVERY = 256

ClientLauncher = Callable[[str, str], Awaitable[int]]


@dataclass
class CaseResult:
    grade: Grade
    exchange: Grade
    close: Grade | None
    message: str
    log: WireLog
    duration_ms: float
    client_exit: int | None = None
    notes: list[str] = field(default_factory=list)


class _CaseOver(Exception):
    """Ends the exchange early with the grade it has: an optional ``accept`` that got no connection
    (what the steps after it check can only happen on one)."""


class _Verdict(Exception):
    """Ends the exchange with a grade.

    ``departure`` marks a verdict about the target going away (it closed, or went quiet)
    rather than about something it sent: a client that exits 127 may still call the case
    unsupported after a departure, never after a violation."""

    def __init__(self, grade: Grade, message: str, departure: bool = False) -> None:
        super().__init__(message)
        self.grade = grade
        self.message = message
        self.departure = departure


_SUMMARY_VALUE = 120  # characters of one field shown in a sent frame's summary
# A wait the suite noticed ending this much later than its deadline: its loop stalled meanwhile.
LATE_DEADLINE_MS = 100
LATE_READ_S = 1.0  # bound on reading what is already there (it never waits that long)
LATE_GRACE_S = 0.05  # lets the loop finish taking in what came during a stall: no new wait
_CREDENTIAL_KEYS = ("password", "secret", "token")


def _spec_summary(spec: dict[str, Any]) -> str:
    """A frame the suite sent, as its scenario step names it (the fields it was encoded from)."""
    def show(key: str, value: Any) -> str:
        if any(word in key.lower() for word in _CREDENTIAL_KEYS):
            return "***"  # also masked when rendered (wirelog.redact); not even its length here
        text = repr(value)
        return text if len(text) <= _SUMMARY_VALUE else text[:_SUMMARY_VALUE] + "..."
    return " ".join(f"{key}={show(key, value)}" for key, value in spec.items())


class _FrameStream:
    def __init__(self, channel: Channel, adapter: ProtocolAdapter, transport: str) -> None:
        self.channel = channel
        self.reader = adapter.new_reader(transport)
        self.frames: deque[Frame] = deque()
        self.closed = False
        self.close_accepted = False  # an expectation took the target's close as its answer
        self.popped = 0
        self.log: WireLog | None = None

    async def next(self, deadline: float) -> Frame | None:
        """The next frame, or None once the target closed.  Raises Deadline."""
        while not self.frames:
            if self.closed:
                return None
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise Deadline()
            try:
                data = await self.channel.recv(remaining)
                if data is None:
                    self.closed = True
                    continue
                await self._take_in(data)
            except CodecError as exc:
                raise _Verdict(Grade.FAILED, f"the target sent bytes that are not valid: {exc}") from None
        self.popped += 1
        if self.popped % _YIELD_EVERY == 0:
            await asyncio.sleep(0)  # a flood of buffered frames must not starve the case deadline
        return self.frames.popleft()

    async def _take_in(self, data: bytes | str) -> list[Frame]:
        """``data``'s frames, queued and logged. Raises CodecError."""
        frames = self.reader.feed(data)
        if self.log is not None:
            for frame in frames:
                self.log.decoded(RECEIVED, frame.__str__)  # made only if the log keeps it
        self.frames.extend(frames)
        # a session reader (ZMTP) answers by itself: handshake commands, PONGs
        reply = self.reader.outgoing() if hasattr(self.reader, "outgoing") else b""
        if reply:
            await self.channel.send(reply)
        return frames

    async def late_arrival(self, deadline: float, what: str,
                           could_answer: Callable[[Frame | None], bool]) -> "_Verdict | None":
        """After a Deadline: an ERROR verdict when the suite noticed the deadline late (its event
        loop stalled: a busy machine) and what had arrived by then could have answered the wait
        (``could_answer``: a frame, or None for the close). It may have come in time, so neither a
        pass nor a failure can be told. Noise (a flood of pings) keeps the verdict: only what has
        arrived is looked at, one read's worth, and it is kept for any later step."""
        late_ms = (time.monotonic() - deadline) * 1000
        if late_ms < LATE_DEADLINE_MS or self.frames or self.closed:
            return None
        await asyncio.sleep(0)  # one more turn of the loop takes in what arrived during the stall
        if not await self.channel.arrived():
            return None
        try:
            data = await self.channel.recv(LATE_READ_S)  # there already: no wait
            frames = await self._take_in(data) if data is not None else []
        except (Deadline, CodecError):
            return None  # not an answer: the verdict stands (the next read reports bad bytes)
        self.closed = self.closed or data is None
        if not any(map(could_answer, [*frames, *([None] if data is None else [])])):
            return None
        return _fell_behind(what, late_ms, "the target had sent what may have answered it in time")


def _fell_behind(what: str, late_ms: float, there: str) -> _Verdict:
    """No verdict on the target: the suite noticed the end of its wait late, with ``there`` by then."""
    return _Verdict(Grade.ERROR, f"the suite fell behind: it noticed the end of its wait for {what} "
                                 f"{late_ms:.0f} ms late (a busy machine?), and by then {there}")


class CaseRunner:
    def __init__(self, case: Case, adapter: ProtocolAdapter, transport: str, params: dict[str, int],
                 time_scale: float = 1.0) -> None:
        self.case = case
        self.adapter = adapter
        self.transport = transport
        self.params = {**SUITE_WAITS, **params}
        self.time_scale = time_scale
        self.log = WireLog()
        self.noise = [adapter.normalize(n) for n in (case.noise if case.noise is not None else adapter.default_noise)]
        self.close_grade: Grade | None = None
        self.close_message = ""
        self.observed: list[str | Frame] = []
        self._waits: dict[int | str, int] = {}
        self.stream: _FrameStream | None = None
        # named channels (`connect` / `use` steps) and values saved from matched frames (`save`)
        self.streams: dict[str, _FrameStream] = {}
        self.vars: dict[str, Any] = {}
        self._target_url: str | None = None
        self._extra: list[Any] = []  # channels and fault proxies opened by `connect` or `accept`, closed with the case
        self._suite_server: SuiteServer | None = None  # client role: the listener `accept` takes connections from
        # client role: the client's task, when it ended, and the timeline it is judged against
        self.client: asyncio.Future | None = None
        self.client_exited_at: float | None = None
        self.last_send_at: float | None = None
        self.step_done_at = 0.0
        self.violation = False  # the target sent or did something a case grades as wrong
        self.fell_behind: str | None = None  # a keep_alive's own gap reached the target timer it keeps clear of

    # -- entry points -------------------------------------------------------

    async def against_server(self, url: str) -> CaseResult:
        started = time.monotonic()
        proxy = None
        self._target_url = url
        try:
            if self.case.fault:
                proxy = await FaultProxy.start(url, self.case.fault, self.log)
                url = proxy.url_for(url)
            channel = await self._open(url)
        except ChannelError as exc:
            if proxy:
                await proxy.close()
            return self._result(Grade.ERROR, str(exc), started)
        try:
            result = await self._run(channel, started)
            unreachable = [p.upstream_error for p in (proxy, *self._extra)
                           if isinstance(p, FaultProxy) and p.upstream_error]
            # the suite saw a close, but the target never took part: not the target's verdict
            return self._result(Grade.ERROR, unreachable[0], started) if unreachable else result
        finally:
            await channel.close()
            for extra in reversed(self._extra):
                await extra.close()
            if proxy:
                await proxy.close()

    async def against_client(self, launch: ClientLauncher) -> CaseResult:
        started = time.monotonic()
        server = self._suite_server = await SuiteServer.start(self.transport, self.log, WS_MAX_MESSAGE)
        client = self.client = asyncio.ensure_future(launch(self.case.client_testcase or "", server.url))
        client.add_done_callback(self._client_ended)
        try:
            accepted = asyncio.ensure_future(server.accept(CONNECT_TIMEOUT * 2 * self.time_scale))
            await asyncio.wait({accepted, client}, return_when=asyncio.FIRST_COMPLETED)
            if not accepted.done():
                code = client.result() if not client.cancelled() and client.exception() is None else None
                accepted.cancel()
                if code == 127:
                    return self._result(Grade.UNSUPPORTED, f"the client answered 127: test case {self.case.client_testcase!r} unsupported", started, client_exit=code)
                return self._result(Grade.ERROR, f"the client exited ({code}) without connecting", started, client_exit=code)
            try:
                channel = accepted.result()
            except ChannelError as exc:
                return self._result(Grade.ERROR, str(exc), started)
            try:
                return await self._run(channel, started, client=client)
            finally:  # a cancelled run too: the client must not wait on a connection nobody reads
                await channel.close()
        finally:
            for extra in reversed(self._extra):  # connections taken by accept steps
                await extra.close()
            if not client.done():
                client.cancel()  # the launcher kills the client by the PID it started
                await asyncio.gather(client, return_exceptions=True)
            await server.close()

    def _client_ended(self, _client: asyncio.Future) -> None:
        self.client_exited_at = time.monotonic()

    # -- the exchange -------------------------------------------------------

    def _wait_ms(self, value: int | str) -> int:
        """A wait on the target (a window, a within_ms, a sleep, the case deadline), stretched by
        --time-scale.  Lower bounds and the suite's own pacing are read with millis() unscaled."""
        if not isinstance(value, (int, str)):
            return round(millis(value, self.params) * self.time_scale)
        known = self._waits.get(value)  # the parameters do not change during a case: each text once
        if known is None:
            known = self._waits[value] = round(millis(value, self.params) * self.time_scale)
        return known

    async def _open(self, url: str) -> Channel:
        timeout = CONNECT_TIMEOUT * self.time_scale
        if url.startswith("ws://"):
            return await WsChannel.open(url, self.log, timeout, WS_MAX_MESSAGE)
        return await TcpChannel.open(url, self.log, timeout)

    async def _run(self, channel: Channel, started: float, client: asyncio.Future | None = None) -> CaseResult:
        self.stream = self._new_stream(channel)
        self.streams["main"] = self.stream
        exchange, message, deadline_ms = Grade.PASSED, "", 0
        self.step_done_at = time.monotonic()
        try:
            deadline_ms = self._wait_ms(self.case.timeout_ms)  # may follow the target's timers
            with unique_payloads(self.case.id):
                await asyncio.wait_for(self._steps(self.case.steps, {}, 0), deadline_ms / 1000)
        except _CaseOver:
            pass
        except _Verdict as verdict:
            exchange, message = verdict.grade, verdict.message
            self.violation = verdict.grade in (Grade.FAILED, Grade.NON_STRICT) and not verdict.departure
        except asyncio.TimeoutError:
            exchange = grade_for_violation(self.case.requirement)
            message = f"no verdict within the case deadline of {deadline_ms} ms"
        except (ValueError_, CodecError) as exc:
            exchange, message = Grade.ERROR, f"the case itself is broken: {exc}"
        client_exit = None
        if client is not None:
            exchange, message, client_exit = await self._client_outcome(
                client, exchange, message, started + deadline_ms / 1000, deadline_ms)
        if self.fell_behind and exchange in (Grade.FAILED, Grade.NON_STRICT):
            # the target may rightly have timed the suite out: no verdict on it either way
            exchange, message = Grade.ERROR, f"{self.fell_behind}; the verdict would have been {exchange.value}: {message}"
            self.violation = False
        if self.case.requirement in ("MAY", "INFO") and exchange is not Grade.ERROR:
            message = "observed: " + (message or "; ".join(map(str, self.observed)) or "the behaviour described")
            exchange = Grade.INFORMATIONAL
        if self.close_grade not in (None, Grade.PASSED):
            message = "; ".join(m for m in (message, self.close_message) if m)
        return self._result(exchange, message, started, client_exit=client_exit)

    async def _client_outcome(self, client: asyncio.Future, exchange: Grade, message: str,
                              case_deadline: float, deadline_ms: int):
        """The exchange's grade, corrected by what the client process did.

        A case with ``client_exit`` waits for the client until the case deadline and fails a
        client that is still running then; other cases give it a moment to report 127."""
        if self.close_grade in (Grade.FAILED, Grade.NON_STRICT):
            self.violation = True
        wait = max(case_deadline - time.monotonic(), 1.0)
        if self.case.client_exit is None:
            wait = min(wait, 5.0 * self.time_scale)
        if self.violation:
            wait = min(wait, 1.0 * self.time_scale)  # the verdict stands whatever the client does next
        try:
            code = await asyncio.wait_for(asyncio.shield(client), wait)
        except asyncio.TimeoutError:
            if self.case.client_exit is not None and exchange is not Grade.ERROR and not self.violation:
                return (grade_for_violation(self.case.requirement),
                        f"the client did not exit within the case deadline of {deadline_ms} ms "
                        f"(expected exit code {self.case.client_exit}); it was killed", None)
            return exchange, message, None
        except Exception as exc:  # the client target crashed: that is its grade, not ours
            return Grade.ERROR, f"client target raised {exc!r}", None
        if code == 127 and not self.violation:
            return Grade.UNSUPPORTED, f"the client answered 127: test case {self.case.client_testcase!r} unsupported", code
        if code == 127:
            message = f"{message}; the client then answered 127 (unsupported), too late: it had already broken the case"
        if exchange is not Grade.PASSED:
            return exchange, message, code
        level = grade_for_violation(self.case.requirement)
        if (self.last_send_at is not None and self.client_exited_at is not None
                and self.client_exited_at < self.last_send_at):
            return level, (f"the client exited ({code}) before the suite sent its last message: "
                           "it ended the case before completing it"), code
        if self.case.client_exit is not None and code != self.case.client_exit:
            return level, f"client exited {code}, expected {self.case.client_exit}", code
        return exchange, message, code

    def _new_stream(self, channel: Channel) -> _FrameStream:
        stream = _FrameStream(channel, self.adapter, self.transport)
        stream.log = self.log
        if hasattr(stream.reader, "wirelog"):  # a session reader notes what it decrypts
            stream.reader.wirelog = self.log
        return stream

    async def _connect(self, spec: dict[str, Any]) -> None:
        """A further channel to the target: a second client on its own address (no port: fan-out,
        one client against another) or another port on its host (e.g. MTL's data port from a 202 reply)."""
        name, port = spec["channel"], spec.get("port")
        if self._target_url is None or not (port is None or isinstance(port, int) and 0 < port < 65536):
            raise ValueError_(f"connect needs a server-role target and a port number, got {port!r}")
        if name in self.streams:
            raise ValueError_(f"channel {name!r} is already open")
        url = self._target_url
        if port is not None:
            parts = urlsplit(self._target_url)
            url = urlunsplit((parts.scheme, f"{parts.hostname}:{port}", parts.path, parts.query, ""))
        self.log.note(f"channel {name}: {url}")
        if self.case.fault:
            proxy = await FaultProxy.start(url, self.case.fault, self.log)
            self._extra.append(proxy)
            url = proxy.url_for(url)
        try:
            channel = await self._open(url)
        except ChannelError as exc:
            raise _Verdict(grade_for_violation(self.case.requirement), f"channel {name}: {exc}") from None
        self._extra.append(channel)
        self.stream = self.streams[name] = self._new_stream(channel)

    async def _accept(self, spec: dict[str, Any]) -> None:
        """Client role: take the client's next connection to the suite's listener (a client that
        reconnects, e.g. to resume) as channel NAME, and make it current."""
        name = spec["channel"]
        server = self._suite_server
        if server is None:
            raise ValueError_("accept needs a client-role case (the suite is the server)")
        if name in self.streams:
            raise ValueError_(f"channel {name!r} is already open")
        within = self._wait_ms(spec.get("within_ms", "expect_ms"))
        deadline = time.monotonic() + within / 1000
        how = "accepted the client's next connection"
        try:
            channel = await server.accept(within / 1000)
        except ChannelError as exc:
            late_ms = (time.monotonic() - deadline) * 1000
            channel = await server.arrived(LATE_GRACE_S) if late_ms >= LATE_DEADLINE_MS else None
            if channel is None and spec.get("optional"):
                self.log.note(f"channel {name}: no connection within {within} ms; the steps after it need one, "
                              "so the case ends here")
                raise _CaseOver() from None
            if channel is None:
                raise _Verdict(grade_for_violation(spec.get("level", self.case.requirement)),
                               f"channel {name}: {exc}", departure=True) from None
            if not spec.get("optional"):
                self._extra.append(channel)  # closed with the case
                raise _fell_behind("the client's connection", late_ms,
                                   "the client had connected, which may have been in time") from None
            # optional: the client chose to connect; what the steps after check holds whenever it came
            how = f"the client's connection was there when the suite looked, {late_ms:.0f} ms late"
        self.log.note(f"channel {name}: {how}")
        self._extra.append(channel)
        self.stream = self.streams[name] = self._new_stream(channel)

    def _use(self, name: str) -> None:
        if name not in self.streams:
            raise ValueError_(f"no channel {name!r} (open: {', '.join(self.streams)})")
        self.log.note(f"using channel {name}")
        self.stream = self.streams[name]

    def _observe(self, frame: Frame) -> None:
        """A matched frame, kept for the message of a MAY or INFO case (the only one that shows them),
        as text only then: a volume case matches 70,000."""
        if self.case.requirement in ("MAY", "INFO"):
            self.observed.append(frame)

    def _save(self, spec: dict[str, Any], frame: Frame) -> None:
        for var, field_name in (spec.get("save") or {}).items():
            if field_name not in frame.fields:
                raise ValueError_(f"save: the matched frame has no field {field_name!r}: {frame}")
            self.vars[var] = frame.fields[field_name]

    async def _steps(self, steps: list[dict[str, Any]], names: dict[str, int], depth: int) -> None:
        for step in steps:
            # a nested repeat's steps are substituted when they run, with its own variable bound too;
            # the target's parameters stay visible, so '= expr' timers work after a save as before it
            if (self.vars or names) and "repeat" not in step and has_expression(step):
                step = substitute(step, {**self.params, **self.vars, **names})
            if "send" in step:
                await self._send(step["send"])
            elif "expect" in step:
                await self._expect(step["expect"])
            elif "expect_close" in step:
                await self._expect_close(step["expect_close"])
            elif "expect_silence" in step:
                await self._expect_silence(step["expect_silence"])
            elif "sleep_ms" in step:
                await asyncio.sleep(self._wait_ms(step["sleep_ms"]) / 1000)
            elif "keep_alive" in step:
                await self._keep_alive(step["keep_alive"])
            elif "close" in step:
                await (self.stream.channel.half_close() if step["close"] == "half" else self.stream.channel.close())
            elif "connect" in step:
                await self._connect(step["connect"])
            elif "accept" in step:
                await self._accept(step["accept"])
            elif "use" in step:
                self._use(step["use"])
            elif "expect_exit" in step:
                await self._expect_exit(step["expect_exit"])
            elif "macro" in step:
                if depth >= MAX_MACRO_DEPTH or step["macro"] not in self.adapter.macros:
                    raise ValueError_(f"unknown or too deeply nested macro {step['macro']!r}")
                await self._steps(self.adapter.macros[step["macro"]], names, depth + 1)
            elif "repeat" in step:
                spec = step["repeat"]
                var, start = spec.get("var", "i"), spec.get("start", 0)
                for i in range(spec["count"]):
                    await self._steps(spec["steps"], {**names, var: start + i}, depth)
            self.step_done_at = time.monotonic()

    async def _send(self, spec: dict[str, Any]) -> None:
        raw = len(spec) == 1 and ("hex" in spec or "text" in spec)  # bytes as written, no frame to decode
        if raw and "hex" in spec:
            payloads: list[bytes | str] = [bytes.fromhex(spec["hex"].replace(" ", ""))]
        elif raw:
            payloads = [spec["text"] if self.transport == "ws" else spec["text"].encode()]
        else:
            # a session reader encodes with its connection's state (ZMTP: keys, nonces)
            encode = getattr(self.stream.reader, "encode", None)
            try:
                payloads = encode(spec) if encode else self.adapter.encode(spec, self.transport)
            except TargetFault as exc:
                raise _Verdict(grade_for_violation(self.case.requirement), str(exc)) from None
        for data in payloads:
            await self.stream.channel.send(data)
        if not raw:
            self.log.decoded(SENT, partial(_spec_summary, spec))
        self.last_send_at = time.monotonic()

    def _is_noise(self, frame: Frame) -> bool:
        return any(self.adapter.matches(n, frame)[0] for n in self.noise)

    def _may_skip(self, alt: dict[str, Any], allowed: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The noise and allow patterns that a frame matching ``alt`` could also match.

        A frame that is noise (or allowed) is skipped even when it also matches what is expected.
        Rather than testing every frame against every noise pattern first (70,000 frames of a
        volume case), a frame is tested against what is expected, and only a frame that matches is
        tested against the patterns it could also match: those that name no field with another
        plain value (noise {kind: ping} can never match an expected {kind: request})."""
        never = self.adapter.never_both
        return [p for p in (*self.noise, *allowed)
                if not any(key in p and never(key, value, p[key]) for key, value in alt.items())]

    def _any_match(self, patterns: list[dict[str, Any]], frame: Frame) -> bool:
        return any(self.adapter.matches(p, frame)[0] for p in patterns)

    def _match_one_of(self, wanted: list[dict[str, Any]], skip_first: list[list[dict[str, Any]]],
                      frame: Frame) -> tuple[int | None, list[str]]:
        """The index of the first pattern the frame matches and is not to be skipped as noise or
        allowed; None and why each did not match otherwise."""
        reasons = []
        for i, (alt, skipped) in enumerate(zip(wanted, skip_first)):
            ok, why = self.adapter.matches(alt, frame)
            if ok:
                return (None if self._any_match(skipped, frame) else i), reasons
            reasons.append(why)
        return None, reasons

    def _allowed(self, frame: Frame, allowed: list[dict[str, Any]]) -> bool:
        return any(self.adapter.matches(a, frame)[0] for a in allowed)

    async def _expect(self, spec: dict[str, Any]) -> None:
        level = spec.get("level", self.case.requirement)
        within = self._wait_ms(spec.get("within_ms", "expect_ms"))
        # allow: frames that may arrive before the expected one (e.g. elements in flight) and are skipped
        allowed = [self.adapter.normalize(a) for a in spec.get("allow", [])]
        if "all_of" in spec:
            await self._expect_all(spec, level, within, allowed)
            return
        fields = {k: v for k, v in spec.items() if k not in EXPECT_OPTIONS}
        raw_alts = spec["any_of"] if "any_of" in spec else ([fields] if fields else [])
        closed_ok = spec.get("closed", False) is True or any(
            isinstance(a, dict) and a.get("closed") is True for a in raw_alts)
        # an alternative that is a list is a sequence: its first frame chooses it, the rest must follow
        framed = [a if isinstance(a, list) else [a] for a in raw_alts if isinstance(a, list) or not a.get("closed")]
        alternatives = [self.adapter.normalize(a[0]) for a in framed]
        declared = self._declared_answers(spec)

        def wanted() -> str:  # only failure messages need it: not built for each of 70,000 passing frames
            return " or ".join([" then ".join(map(_describe, [alt, *seq[1:]])) for alt, seq in zip(alternatives, framed)]
                               + (["a close"] if closed_ok else []))

        skip_first = [self._may_skip(alt, allowed) for alt in alternatives]
        deadline = time.monotonic() + within / 1000
        while True:
            try:
                frame = await self.stream.next(deadline)
            except Deadline:
                answers = lambda f: closed_ok if f is None else not self._is_noise(f)  # noqa: E731
                raise (await self.stream.late_arrival(deadline, wanted(), answers) or _Verdict(
                    grade_for_violation(level), f"waited {within} ms for {wanted()}; nothing arrived",
                    departure=True)) from None
            if frame is None:
                if closed_ok:
                    self.observed.append("closed")
                    self.stream.close_accepted = True
                    return
                raise _Verdict(grade_for_violation(level),
                               f"the target closed the connection while the suite waited for {wanted()}", departure=True)
            matched, reasons = self._match_one_of(alternatives, skip_first, frame)
            if matched is not None:
                self._observe(frame)
                self._save(spec, frame)
                for following in framed[matched][1:]:
                    await self._expect({**following, **{k: spec[k] for k in _SEQUENCE_OPTIONS if k in spec}})
                return
            if self._is_noise(frame) or self._allowed(frame, allowed):
                continue
            declared(frame)
            raise _Verdict(grade_for_violation(level), f"expected {wanted()}; got {frame} ({'; '.join(reasons)})")

    def _declared_answers(self, spec: dict[str, Any]):
        """A check of an unexpected frame against the step's unsupported_if and informational_if:
        it raises their verdict when one matches."""
        unsupported = self.adapter.normalize(spec["unsupported_if"]) if "unsupported_if" in spec else None
        # informational_if: an answer the spec allows but the profile cannot read as yes or no (a
        # refusal whose code does not say "not implemented"): recorded, never FAILED
        informational = self.adapter.normalize(spec["informational_if"]) if "informational_if" in spec else None

        def check(frame: Frame) -> None:
            if unsupported is not None and self.adapter.matches(unsupported, frame)[0]:
                raise _Verdict(Grade.UNSUPPORTED, f"the target declared this unsupported: {frame}")
            if informational is not None and self.adapter.matches(informational, frame)[0]:
                raise _Verdict(Grade.INFORMATIONAL, f"the target answered {frame}: the spec allows it, the profile "
                                                    "grades it INFORMATIONAL")
        return check

    async def _expect_all(self, spec: dict[str, Any], level: str, within: int, allowed: list[dict[str, Any]]) -> None:
        """all_of: each listed frame exactly once, in any order (e.g. signals of independent streams)."""
        wanted = [self.adapter.normalize(a) for a in spec["all_of"]]
        declared = self._declared_answers(spec)
        skip_first = [self._may_skip(alt, allowed) for alt in wanted]
        deadline = time.monotonic() + within / 1000

        def missing() -> str:  # for failure messages only
            return " and ".join(_describe(a) for a in wanted)

        while wanted:
            try:
                frame = await self.stream.next(deadline)
            except Deadline:
                answers = lambda f: f is not None and not self._is_noise(f)  # noqa: E731
                raise (await self.stream.late_arrival(deadline, missing(), answers) or _Verdict(
                    grade_for_violation(level), f"waited {within} ms for {missing()}; nothing more arrived",
                    departure=True)) from None
            if frame is None:
                raise _Verdict(grade_for_violation(level),
                               f"the target closed the connection while the suite waited for {missing()}", departure=True)
            matched, reasons = self._match_one_of(wanted, skip_first, frame)
            if matched is not None:
                del wanted[matched], skip_first[matched]
                self._observe(frame)
                continue
            if self._is_noise(frame) or self._allowed(frame, allowed):
                continue
            declared(frame)
            raise _Verdict(grade_for_violation(level), f"expected {missing()} (in any order); got {frame} ({'; '.join(reasons)})")

    async def _expect_close(self, spec: dict[str, Any]) -> None:
        level = spec.get("level", self.case.requirement)
        within = self._wait_ms(spec.get("within_ms", "expect_ms"))
        # allow: what a target may send before it closes (e.g. the ERROR that says why); anything else fails
        allowed = [self.adapter.normalize(a) for a in spec.get("allow", [])]
        deadline = time.monotonic() + within / 1000
        while True:
            try:
                frame = await self.stream.next(deadline)
            except Deadline:
                late = await self.stream.late_arrival(deadline, "the close", lambda f: f is None)
                if late is not None:
                    raise late from None
                self._grade_close(level, f"the connection was still open {within} ms later")
                return
            if frame is None:
                self.close_grade = self.close_grade or Grade.PASSED
                self.observed.append("closed")
                return
            if self._is_noise(frame) or spec.get("allow_frames"):
                continue
            if self._allowed(frame, allowed):
                self.observed.append(f"before the close: {frame}")
                continue
            self._grade_close(level, f"the target sent {frame} instead of closing")
            return

    def _grade_close(self, level: str, message: str) -> None:
        grade = grade_for_violation(level)
        if self.case.requirement in ("MAY", "INFO"):
            grade = Grade.INFORMATIONAL
        self.close_grade = worst(self.close_grade, grade)
        self.close_message = f"close: {message}"
        self.observed.append(message)

    async def _expect_silence(self, spec: dict[str, Any]) -> None:
        await self._silence(self._wait_ms(spec["for_ms"]), spec.get("level", self.case.requirement),
                            close_ok=spec.get("closed") is True)

    async def _keep_alive(self, spec: dict[str, Any]) -> None:
        """Send ``send`` every ``every_ms`` for ``for_ms``, the target staying open and silent (noise
        aside).  A case that keeps a connection alive must do so for any timer the spec allows, so
        it paces its traffic often and for longer than the timeout it assumes; --time-scale never
        stretches the pace (the target's timers run in real time however slow its replies are)."""
        level = spec.get("level", self.case.requirement)
        every = millis(spec.get("every_ms", "keepalive_ms"), self.params)
        if every <= 0:
            raise ValueError_(f"keep_alive every_ms must be above 0, got {every}")
        max_gap = millis(spec["max_gap_ms"], self.params) if "max_gap_ms" in spec else None
        end = time.monotonic() + millis(spec["for_ms"], self.params) / 1000
        sent_at = self.last_send_at
        while True:
            await self._send(spec["send"])
            if max_gap is not None and sent_at is not None and not self.fell_behind:
                gap_ms = (self.last_send_at - sent_at) * 1000
                if gap_ms >= max_gap:
                    self.fell_behind = (f"the suite fell behind its own pace: {gap_ms:.0f} ms between two of its sends, "
                                        f"at or over the {max_gap} ms the target may time it out after (a busy machine?)")
            sent_at = self.last_send_at
            remaining_ms = (end - time.monotonic()) * 1000
            if remaining_ms <= 0:
                return
            await self._silence(min(every, remaining_ms), level)

    async def _silence(self, period: float, level: str, close_ok: bool = False) -> None:
        deadline = time.monotonic() + period / 1000
        while True:
            try:
                frame = await self.stream.next(deadline)
            except Deadline:
                return
            if frame is None:
                if self.stream.close_accepted or close_ok:
                    return  # a close an earlier step accepted, or one this step allows: nothing more can arrive
                raise _Verdict(grade_for_violation(level), "the target closed the connection; it should have stayed open and silent",
                               departure=True)
            if not self._is_noise(frame):
                raise _Verdict(grade_for_violation(level), f"the target sent {frame}; it should have sent nothing")

    async def _expect_exit(self, spec: dict[str, Any]) -> None:
        """Client role: the client process ends within ``within_ms`` of the previous step, and not
        sooner than ``not_before_ms`` (a timeout the client must wait out), with ``code``."""
        if self.client is None:
            raise ValueError_("expect_exit is for client-role cases")
        level = spec.get("level", self.case.requirement)
        within = self._wait_ms(spec.get("within_ms", "expect_ms"))
        not_before = millis(spec.get("not_before_ms", 0), self.params)
        since = self.step_done_at
        remaining = since + within / 1000 - time.monotonic()
        try:
            code = await asyncio.wait_for(asyncio.shield(self.client), max(remaining, 0))
        except asyncio.TimeoutError:
            late_ms = (time.monotonic() - since) * 1000 - within
            if late_ms >= LATE_DEADLINE_MS:  # the client's end, if it came during a stall, is taken in
                await asyncio.wait({self.client}, timeout=LATE_GRACE_S)
                if self.client.done():
                    raise _fell_behind("the client's exit", late_ms,
                                       "the client had exited, which may have been in time") from None
            raise _Verdict(grade_for_violation(level), f"the client did not exit within {within} ms") from None
        except Exception:  # a crashed launcher: the client outcome reports it as ERROR
            return
        took = ((self.client_exited_at or time.monotonic()) - since) * 1000
        if took < not_before:
            raise _Verdict(grade_for_violation(level),
                           f"the client exited after {took:.0f} ms; it must wait at least {not_before} ms")
        if "code" in spec and code != spec["code"]:
            raise _Verdict(grade_for_violation(level), f"the client exited {code}, expected {spec['code']}",
                           departure=code == 127)
        self.observed.append(f"the client exited {code} after {took:.0f} ms")

    def _result(self, exchange: Grade, message: str, started: float, client_exit: int | None = None) -> CaseResult:
        grade = worst(exchange, self.close_grade)
        if exchange in (Grade.UNSUPPORTED, Grade.ERROR):
            grade = exchange
        return CaseResult(grade, exchange, self.close_grade, message, self.log,
                          (time.monotonic() - started) * 1000, client_exit)


#: what the later frames of a sequence alternative take from their expect: its level, wait and allow list
_SEQUENCE_OPTIONS = ("level", "within_ms", "allow")


def _describe(spec: dict[str, Any]) -> str:
    return "{" + ", ".join(f"{k}: {hex(v) if isinstance(v, int) and v > 9 else v}" for k, v in spec.items()) + "}"
