"""Every silence window and wait in scenarios/ comes from a named parameter (settable with
--param NAME=MS), never a bare number a user cannot change for a slow or differently tuned
target; and every such expression evaluates with the parameters the suite supplies."""

from __future__ import annotations

import pytest

from suite_helpers import all_cases

from conformance.protocols import adapter_for, available
from conformance.scenario.timing import SUITE_WAITS
from conformance.scenario.values import millis

#: (step kind, key) that bound how long the suite waits on the target
WAITS = (("expect", "within_ms"), ("expect_close", "within_ms"), ("expect_silence", "for_ms"),
         ("expect_exit", "within_ms"))
# item 5 of issue 14 rewrites this case's bound (a client's request timeout) on another branch
PENDING = {"stmp/ack-wrap/client-request-timeout"}


def _waits(steps):
    for step in steps:
        for kind, key in WAITS:
            if isinstance(step.get(kind), dict) and key in step[kind]:
                yield f"{kind}.{key}", step[kind][key]
        if "sleep_ms" in step:
            yield "sleep_ms", step["sleep_ms"]
        if "repeat" in step:
            yield from _waits(step["repeat"]["steps"])


@pytest.mark.parametrize("protocol", sorted(available()))
def test_every_wait_is_a_named_parameter(protocol: str) -> None:
    adapter = adapter_for(protocol)
    bare = []
    for case_id, case in all_cases(protocol).items():
        for where, value in _waits(case.steps):
            if isinstance(value, int) and case_id not in PENDING:
                bare.append(f"{case_id}: {where}: {value}")
            for params in (adapter.params, {**adapter.params, **adapter.ref_params}):
                assert millis(value, {**SUITE_WAITS, **params}) > 0, (case_id, where, value)
    assert bare == []


@pytest.mark.parametrize("protocol", sorted(available()))
def test_a_param_changes_the_silence_windows(protocol: str) -> None:
    # silence_ms names every protocol's "nothing (more) arrives" window
    adapter = adapter_for(protocol)
    windows = [v for case in all_cases(protocol).values() for where, v in _waits(case.steps)
               if where == "expect_silence.for_ms" and "silence_ms" in str(v)]
    assert windows, protocol
    base = {**SUITE_WAITS, **adapter.params}
    for value in windows:
        assert millis(value, {**base, "silence_ms": 5000}) >= 5000
