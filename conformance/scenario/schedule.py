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
and macros) keeps a CPU busy for seconds, the suite's and, in-process, the target's: it runs
alone, so that a case racing one of the target's timers (a frame delivered byte by byte before a
read timeout, keep-alive traffic before a heartbeat timeout) never pays for it.  Heavy cases go
first, for the same reason as serial ones.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import heapq
import itertools
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Awaitable, Callable

from conformance.targets import LoopThread

#: cases at once with `--jobs auto` (where auto is concurrent): most of a case is waiting on the
#: target, so many more than the cores; bounded so that a target sees a modest number of connections
AUTO_JOBS = 16
#: frames sent or expected from which a case is heavy and runs alone
HEAVY_FRAMES = 10_000
FIRST, NORMAL = 0, 1


def parse_jobs(text: str) -> int | None:
    """A job count from `--jobs`: a whole number from 1, or None for `auto`.  ValueError otherwise."""
    if str(text).strip().lower() == "auto":
        return None
    jobs = int(text)
    if jobs < 1:
        raise ValueError(f"--jobs is a whole number from 1, or auto; got {text!r}")
    return jobs


def frame_steps(steps: list[dict[str, Any]], macros: dict[str, list[dict[str, Any]]], depth: int = 0) -> int:
    """How many frames a case's steps send or expect, repeats multiplied out."""
    total = 0
    for step in steps:
        if "send" in step or "expect" in step:
            total += 1
        elif "repeat" in step and isinstance(step["repeat"].get("count"), int):
            total += step["repeat"]["count"] * frame_steps(step["repeat"].get("steps", []), macros, depth)
        elif step.get("macro") in macros and depth < 4:
            total += frame_steps(macros[step["macro"]], macros, depth + 1)
    return total


class _Gate:
    """Shared by ordinary cases, held alone by a heavy one; a heavy case waiting holds new ordinary ones back."""

    def __init__(self) -> None:
        self._inside = 0
        self._alone = False
        self._waiting_alone = 0
        self._changed = asyncio.Condition()

    async def enter(self, alone: bool) -> None:
        async with self._changed:
            if alone:
                self._waiting_alone += 1
                try:
                    await self._changed.wait_for(lambda: not self._alone and self._inside == 0)
                finally:
                    self._waiting_alone -= 1
                self._alone = True
            else:
                await self._changed.wait_for(lambda: not self._alone and self._waiting_alone == 0)
                self._inside += 1

    async def leave(self, alone: bool) -> None:
        async with self._changed:
            if alone:
                self._alone = False
            else:
                self._inside -= 1
            self._changed.notify_all()


@dataclass
class Span:
    """When one case ran: for the run's own checks (serial cases never overlap) and benchmarks."""

    key: str
    group: str | None
    alone: bool
    start: float
    end: float


class _Slots:
    """A semaphore whose waiters are served by priority, then in the order they came."""

    def __init__(self, count: int) -> None:
        self.free = count
        self._waiting: list[tuple[int, int, asyncio.Future]] = []
        self._order = itertools.count()

    async def acquire(self, priority: int) -> None:
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


class CaseScheduler:
    def __init__(self, jobs: int) -> None:
        self.jobs = jobs
        self._thread = LoopThread("conformance-cases")
        self._slots = _Slots(jobs)
        self._locks: dict[str, asyncio.Lock] = {}
        self._gate: _Gate | None = None  # made in the loop's thread, by the first case
        self._pending: set[concurrent.futures.Future] = set()
        self.spans: list[Span] = []

    def submit(self, key: str, group: str | None, exchange: Callable[[], Awaitable[Any]],
               alone: bool = False) -> concurrent.futures.Future:
        """Run ``exchange()`` in the run's loop when a slot (and, for a serial case, its group's lock;
        for a heavy one, the whole run) is free."""
        future = asyncio.run_coroutine_threadsafe(self._run(key, group, alone, exchange), self._thread.loop)
        self._pending.add(future)
        future.add_done_callback(self._pending.discard)
        return future

    async def _run(self, key: str, group: str | None, alone: bool, exchange: Callable[[], Awaitable[Any]]) -> Any:
        if group is None:
            return await self._in_slot(key, None, alone, exchange)
        lock = self._locks.setdefault(group, asyncio.Lock())
        async with lock:
            return await self._in_slot(key, group, alone, exchange)

    async def _in_slot(self, key: str, group: str | None, alone: bool,
                       exchange: Callable[[], Awaitable[Any]]) -> Any:
        if self._gate is None:
            self._gate = _Gate()
        await self._gate.enter(alone)
        try:
            await self._slots.acquire(FIRST if group or alone else NORMAL)
            start = time.monotonic()
            try:
                return await exchange()
            finally:
                self.spans.append(Span(key, group, alone, start, time.monotonic()))
                self._slots.release()
        finally:
            await self._gate.leave(alone)

    def write_spans(self, path: Path) -> None:
        """When each case ran, in seconds from the first start, one JSON object a line."""
        spans = sorted(self.spans, key=lambda s: s.start)
        origin = spans[0].start if spans else 0.0
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps({"case": s.key, "group": s.group, "alone": s.alone,
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
