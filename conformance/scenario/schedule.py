"""Where cases run: one long-lived event loop for the whole run, up to ``jobs`` cases at once.

pytest runs and reports items one after another; the plugin hands each case's exchange to this
scheduler (all of them at the start of the run with ``--jobs`` above 1) and reports them in
pytest's order as their results come in, so records, JUnit and Allure read the same whatever the
schedule.  A case never shares a connection with another: each opens its own.

A ``serial`` case changes state its target shares between connections (topics, leases).  Where
the suite can make a target of the case's own (the in-process reference: a server starts in about
a millisecond) the plugin gives it one and it runs like any other; elsewhere it holds its group's
lock (one per protocol) for its whole exchange, so no two such cases of a protocol overlap.  Those
are also first in line for a free slot: one after another they are the longest chain of the run,
and starting it late would be what the run waits for at its end.

A heavy case (its steps send or expect at least ``HEAVY_FRAMES`` frames, counted through repeats
and macros) keeps a CPU busy for seconds, the suite's and, in-process, the target's.  A paced case
runs through the fault proxy: its bytes cross two event loops a chunk (down to a byte) at a time,
hundreds of steps one after another against one of the target's read timeouts, and a busy CPU makes
each step late; so does a case that keeps a connection alive at a tight pace of its own against
one of the target's timeouts (`keep_alive` under ``TIGHT_PACE_MS``: NOOPs every 100 ms against a
1000 ms TTL), which counts as paced.
So heavy and paced cases never overlap; every other case runs beside either (most
of them wait on the target and spend little CPU: a starved step is milliseconds late, and their
windows are seconds).  Paced cases go first, and one waiting holds new heavy ones back: they are
short and spend little CPU, while a heavy case ends when the CPU it needs is spent, which the
cases beside it share; started after the paced ones it ends about when it would have, and the
paced ones no longer wait for it at the end of the run.

Slots go first to paced cases, then to serial and heavy ones (the longest chains), then to the
cases that wait longest by design (silences, sleeps, keep-alives, windows on the target's timers,
from their steps): a 5 s wait started last would be what the run waits for at its end.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import heapq
import itertools
import json
import re
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterator

from conformance.scenario.timing import SUITE_WAITS
from conformance.scenario.values import ValueError_, millis
from conformance.targets import LoopThread

#: cases at once with `--jobs auto` (where auto is concurrent): most of a case is waiting on the
#: target, so many more than the cores; bounded so that a target sees a modest number of connections
AUTO_JOBS = 16
#: frames sent or expected from which a case is heavy (it never overlaps a paced one)
HEAVY_FRAMES = 10_000
PACED, FIRST, NORMAL = 0, 1, 2


def parse_jobs(text: str) -> int | None:
    """A job count from `--jobs`: a whole number from 1, or None for `auto`.  ValueError otherwise."""
    if str(text).strip().lower() == "auto":
        return None
    jobs = int(text)
    if jobs < 1:
        raise ValueError(f"--jobs is a whole number from 1, or auto; got {text!r}")
    return jobs


@dataclass(frozen=True)
class Demand:
    """What the scheduler reads from a case's steps."""

    frames: int = 0  # sent or expected, repeats multiplied out
    wait_ms: float = 0.0  # silences, sleeps, keep-alives and close windows: what it waits by design, at most
    paced: bool = False  # through the fault proxy, or keeping a connection alive at a tight pace

    @property
    def heavy(self) -> bool:
        return self.frames >= HEAVY_FRAMES


_WAIT_KEYS = (("expect_silence", "for_ms"), ("keep_alive", "for_ms"))
_NAME = re.compile(r"[A-Za-z_]\w*")


def case_demand(steps: list[dict[str, Any]], macros: dict[str, list[dict[str, Any]]],
                params: dict[str, int] | None = None, fault: Any = None) -> Demand:
    frames, wait_ms = _walk(steps, macros, params or {}, 0)
    return Demand(frames, wait_ms, bool(fault) or _tight_keep_alive(steps, macros, params or {}, 0))


#: a keep_alive paced faster than this has little margin against the target's timeout (NOOPs every
#: 100 ms against a 1000 ms TTL); the default pace, a second, has seconds of it
TIGHT_PACE_MS = 500


def _tight_keep_alive(steps: list[dict[str, Any]], macros: dict[str, list[dict[str, Any]]],
                      params: dict[str, int], depth: int) -> bool:
    """Whether a case keeps a connection alive at a tight pace of its own against one of the
    target's timeouts: a heavy case beside it could hold that pace up past the timeout, so it
    counts as paced."""
    for step in steps:
        if isinstance(step.get("keep_alive"), dict) and "every_ms" in step["keep_alive"]:
            if 0 < _ms(step["keep_alive"]["every_ms"], params) < TIGHT_PACE_MS:
                return True
        inner = step["repeat"].get("steps", []) if isinstance(step.get("repeat"), dict) else \
            macros.get(step.get("macro"), []) if depth < 4 else []
        if inner and _tight_keep_alive(inner, macros, params, depth + 1):
            return True
    return False


def frame_steps(steps: list[dict[str, Any]], macros: dict[str, list[dict[str, Any]]]) -> int:
    """How many frames a case's steps send or expect, repeats multiplied out."""
    return _walk(steps, macros, {}, 0)[0]


def _walk(steps: list[dict[str, Any]], macros: dict[str, list[dict[str, Any]]], params: dict[str, int],
          depth: int) -> tuple[int, float]:
    frames, wait_ms = 0, 0.0
    for step in steps:
        if "send" in step or "expect" in step:
            frames += 1
        elif "repeat" in step and isinstance(step["repeat"].get("count"), int):
            inner = _walk(step["repeat"].get("steps", []), macros, params, depth)
            frames += step["repeat"]["count"] * inner[0]
            wait_ms += step["repeat"]["count"] * inner[1]
        elif step.get("macro") in macros and depth < 4:
            inner = _walk(macros[step["macro"]], macros, params, depth + 1)
            frames, wait_ms = frames + inner[0], wait_ms + inner[1]
        elif "sleep_ms" in step:
            wait_ms += _ms(step["sleep_ms"], params)
        else:
            for key, field in _WAIT_KEYS:
                if isinstance(step.get(key), dict) and field in step[key]:
                    wait_ms += _ms(step[key][field], params)
            for key in ("expect_close", "expect"):  # a window on one of the target's timers: waited out, often
                if isinstance(step.get(key), dict) and _on_timer(step[key].get("within_ms"), params):
                    wait_ms += _ms(step[key]["within_ms"], params)
    return frames, wait_ms


def _on_timer(value: Any, params: dict[str, int]) -> bool:
    """Whether a window names one of the target's timers (heartbeat_timeout_ms + 2000), not one of
    the suite's waits (close_ms: a close that comes at once when the target behaves)."""
    return isinstance(value, str) and any(name in params and name not in SUITE_WAITS and name not in _SUITE_OWN
                                          for name in _NAME.findall(value))


#: the suite's waits each adapter adds beside SUITE_WAITS
_SUITE_OWN = ("silence_ms", "reply_ms")


def _ms(value: Any, params: dict[str, int]) -> float:
    """A wait's milliseconds, 0 where it cannot be told before the case runs (a saved value): only an
    order of priority hangs on it."""
    try:
        return float(millis(value, params))
    except (ValueError_, TypeError, AttributeError, ArithmeticError):
        return 0.0


class _Gate:
    """Heavy and paced cases never overlap (any other case needs no gate); a paced case waiting holds
    new heavy ones back.  A case that is both counts as both: it waits for every heavy and paced case
    to leave, and holds either kind back while it runs."""

    def __init__(self) -> None:
        self._heavy = 0
        self._paced = 0
        self._paced_waiting = 0
        self._changed = asyncio.Condition()

    async def enter(self, demand: Demand) -> None:
        if not (demand.heavy or demand.paced):
            return
        async with self._changed:
            if demand.paced:
                self._paced_waiting += 1
                try:
                    await self._changed.wait_for(lambda: self._heavy == 0 and not (demand.heavy and self._paced))
                finally:
                    self._paced_waiting -= 1
                self._paced += 1
                self._heavy += demand.heavy
            else:
                await self._changed.wait_for(lambda: self._paced == 0 and self._paced_waiting == 0)
                self._heavy += 1

    async def leave(self, demand: Demand) -> None:
        if not (demand.heavy or demand.paced):
            return
        async with self._changed:
            if demand.paced:
                self._paced -= 1
                self._heavy -= demand.heavy
            else:
                self._heavy -= 1
            self._changed.notify_all()


@dataclass
class Span:
    """When one case ran: for the run's own checks (serial cases never overlap, nor heavy and paced
    ones) and benchmarks."""

    key: str
    group: str | None
    heavy: bool
    paced: bool
    start: float
    end: float


class _Slots:
    """A semaphore whose waiters are served by priority, then in the order they came."""

    def __init__(self, count: int) -> None:
        self.free = count
        self._waiting: list[tuple[tuple[int, float], int, asyncio.Future]] = []
        self._order = itertools.count()

    async def acquire(self, priority: tuple[int, float]) -> None:
        if self.free > 0 and not self._waiting:
            self.free -= 1
            return
        waiter = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiting, (priority, next(self._order), waiter))
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.release()  # granted just as it was cancelled: pass the slot on
            raise

    def release(self) -> None:
        while self._waiting:
            _, _, waiter = heapq.heappop(self._waiting)
            if not waiter.done():
                waiter.set_result(None)
                return
        self.free += 1


def _priority(group: str | None, demand: Demand) -> tuple[int, float]:
    if demand.paced:
        return (PACED, -demand.wait_ms)
    return (FIRST if group or demand.heavy else NORMAL, -demand.wait_ms)


def _relay(source: concurrent.futures.Future, into: concurrent.futures.Future) -> None:
    """``into`` settles as ``source`` does (a batched case's future, given out before it started)."""
    def settle(done: concurrent.futures.Future) -> None:
        if done.cancelled():
            into.cancel()
        elif done.exception() is not None:
            into.set_exception(done.exception())
        else:
            into.set_result(done.result())
    source.add_done_callback(settle)


class CaseScheduler:
    def __init__(self, jobs: int) -> None:
        self.jobs = jobs
        self._thread = LoopThread("conformance-cases")
        self._slots = _Slots(jobs)
        self._locks: dict[str, asyncio.Lock] = {}
        self._gate: _Gate | None = None  # made in the loop's thread, by the first case
        self._pending: set[concurrent.futures.Future] = set()
        self.spans: list[Span] = []
        self._batch: list[tuple] | None = None

    def submit(self, key: str, group: str | None, exchange: Callable[[], Awaitable[Any]],
               demand: Demand = Demand()) -> concurrent.futures.Future:
        """Run ``exchange()`` in the run's loop when a slot (and, for a serial case, its group's lock;
        for a heavy or paced one, the gate) is free."""
        if self._batch is not None:
            future: concurrent.futures.Future = concurrent.futures.Future()
            self._batch.append((_priority(group, demand), len(self._batch), key, group, demand, exchange, future))
            return future
        future = asyncio.run_coroutine_threadsafe(self._run(key, group, demand, exchange), self._thread.loop)
        self._pending.add(future)
        future.add_done_callback(self._pending.discard)
        return future

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Cases submitted inside start when it ends, in order of priority: a free slot is taken by
        whoever asks first, and the first sixteen asking would be pytest's first sixteen otherwise."""
        self._batch = []
        try:
            yield
        finally:
            batch, self._batch = self._batch, None
            for _, _, key, group, demand, exchange, future in sorted(batch, key=lambda b: b[:2]):
                _relay(self.submit(key, group, exchange, demand), future)

    async def _run(self, key: str, group: str | None, demand: Demand, exchange: Callable[[], Awaitable[Any]]) -> Any:
        if group is None:
            return await self._in_slot(key, None, demand, exchange)
        lock = self._locks.setdefault(group, asyncio.Lock())
        async with lock:
            return await self._in_slot(key, group, demand, exchange)

    async def _in_slot(self, key: str, group: str | None, demand: Demand,
                       exchange: Callable[[], Awaitable[Any]]) -> Any:
        if self._gate is None:
            self._gate = _Gate()
        await self._gate.enter(demand)
        try:
            await self._slots.acquire(_priority(group, demand))
            start = time.monotonic()
            try:
                return await exchange()
            finally:
                self.spans.append(Span(key, group, demand.heavy, demand.paced, start, time.monotonic()))
                self._slots.release()
        finally:
            await self._gate.leave(demand)

    def write_spans(self, path: Path) -> None:
        """When each case ran, in seconds from the first start, one JSON object a line."""
        spans = sorted(self.spans, key=lambda s: s.start)
        origin = spans[0].start if spans else 0.0
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps({"case": s.key, "group": s.group, "heavy": s.heavy, "paced": s.paced,
                                            "start": round(s.start - origin, 4), "end": round(s.end - origin, 4)}) + "\n"
                                for s in spans))

    def close(self) -> None:
        """Cancel what has not finished (an interrupted run, -x), let it close its connections and
        stop its clients, and stop the loop."""
        if self._pending:
            try:
                self._thread.run(self._cancel_all(), 15)
            except Exception:  # best effort: the thread is a daemon and dies with the run
                pass
        self._thread.stop()

    @staticmethod
    async def _cancel_all() -> None:
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
