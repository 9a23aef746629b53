"""--time-scale: a correct target slowed by 300 ms per reply passes with a scale, and the suite's
verdicts (one-bug targets included) are those it gives the same targets at full speed.

The slow target is the fault proxy's latency (direction from-target, delay_ms without chunk):
every reply leaves 300 ms after the target sent it."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import pytest

from conformance.selftest.buggy_stmp import BuggyStmpServer
from suite_helpers import Grade, all_cases, run_case

from conformance.faultproxy import FaultProxy
from conformance.protocols import adapter_for
from conformance.scenario.runner import CaseRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mc0"))
from conformance.selftest.buggy_mc0 import start_buggy  # noqa: E402

SLOW = {"delay_ms": 300, "direction": "from-target"}
SCALE = 3.0

# (protocol, bug or None for the bug-free twin, case): silence windows, a TTL wait, replies
SUBSET = [
    ("mc0", None, "mc0/pubsub/prefix-not-delivered"),
    ("mc0", "prefix-match", "mc0/pubsub/prefix-not-delivered"),
    ("mc0", None, "mc0/error-disconnect/unknown-verb-error-only"),
    ("mc0", "ok-after-error", "mc0/error-disconnect/unknown-verb-error-only"),
    # TTL 250 < one slowed round trip: the case pipelines CONNECT, SUB and PUT, or a correct
    # broker forgets the client while it waits for OK (and re-attaches it without a TTL)
    ("mc0", None, "mc0/error-disconnect/ttl-expiry-drops-subscriptions"),
    ("mc0", "no-ttl-expiry", "mc0/error-disconnect/ttl-expiry-drops-subscriptions"),
    ("stmp", None, "stmp/ack-wrap/response-to-unknown-id"),
    ("stmp", "answers-unknown-response", "stmp/ack-wrap/response-to-unknown-id"),
    ("stmp", None, "stmp/framing/binary-ping-ignored"),
]


async def _server(protocol: str, bug: str | None):
    return await (start_buggy(bug) if protocol == "mc0" else BuggyStmpServer(bug).start())


async def _grade(protocol: str, bug: str | None, case_id: str, slow: bool, scale: float) -> Grade:
    case = all_cases(protocol)[case_id]
    transport = adapter_for(protocol).transports[0]
    server = await _server(protocol, bug)
    proxy = await FaultProxy.start(server.url, SLOW) if slow else None
    try:
        url = proxy.url_for(server.url) if proxy else server.url
        result = await run_case(case, url, transport=transport, time_scale=scale)
        return result.grade
    finally:
        if proxy:
            await proxy.close()
        await server.close()


def test_the_subset_names_real_cases() -> None:
    for protocol, _, case_id in SUBSET:
        assert case_id in all_cases(protocol), case_id


def test_a_slow_target_gets_its_full_speed_verdicts_with_a_scale() -> None:
    async def main():
        changed = []
        for protocol, bug, case_id in SUBSET:
            fast = await _grade(protocol, bug, case_id, slow=False, scale=1.0)
            slow = await _grade(protocol, bug, case_id, slow=True, scale=SCALE)
            if fast is not slow:
                changed.append(f"{case_id} ({bug or 'correct'}): {fast.value} at full speed, {slow.value} slowed")
            assert fast is (Grade.PASSED if bug is None else Grade.FAILED), (case_id, bug, fast)
        return changed
    assert asyncio.run(main()) == []


def test_a_slower_correct_target_fails_unscaled_and_passes_scaled() -> None:
    # reply_ms set to 1 s with --param's mechanism; the reply leaves 1.5 s late (plus the
    # action's own 200 ms): past the window unless stretched
    async def grade(scale: float) -> Grade:
        server = await BuggyStmpServer(None).start()
        proxy = await FaultProxy.start(server.url, {**SLOW, "delay_ms": 1500})
        try:
            result = await run_case(all_cases("stmp")["stmp/status/delayed-reply-ok"], proxy.url_for(server.url),
                                    params={"reply_ms": 1000}, time_scale=scale)
            return result.grade
        finally:
            await proxy.close()
            await server.close()
    assert (asyncio.run(grade(1.0)), asyncio.run(grade(SCALE))) == (Grade.FAILED, Grade.PASSED)


def test_the_scale_stretches_silence_windows_and_waits() -> None:
    async def main():
        server = await BuggyStmpServer(None).start()
        try:
            case = all_cases("stmp")["stmp/framing/binary-ping-ignored"]
            adapter = adapter_for("stmp")
            params = {**adapter.params, **adapter.ref_params, "silence_ms": 200}
            runner = CaseRunner(case, adapter, "tcp", params, time_scale=2.5)
            started = time.monotonic()
            result = await runner.against_server(server.url)
            return result, time.monotonic() - started, runner
        finally:
            await server.close()
    result, took, runner = asyncio.run(main())
    assert result.grade is Grade.PASSED, result.message
    assert took >= 0.5, took  # one silence_ms window of 200 ms, stretched 2.5 times
    assert runner._wait_ms("close_ms") == 7500 and runner._wait_ms("silence_ms + 100") == 750
    assert runner._wait_ms(40) == 100


@pytest.mark.parametrize("bad", ["0", "-1", "nan", "inf", "x"])
def test_cli_refuses_a_scale_that_is_not_above_zero(bad: str, capsys) -> None:
    from conformance.cli import main
    with pytest.raises(SystemExit) as exc:
        main(["run", "stmp", "--time-scale", bad])
    assert exc.value.code == 2
    assert "a number above 0" in capsys.readouterr().err


def test_cli_run_passes_the_scale_to_pytest() -> None:
    from conformance.cli import build_parser
    assert build_parser().parse_args(["run", "stmp", "--time-scale", "2.5"]).time_scale == 2.5
