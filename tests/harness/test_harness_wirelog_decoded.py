"""A wire log shows each frame decoded beside the bytes that carried it."""

from __future__ import annotations

import asyncio
import re

from suite_helpers import all_cases, run_case

from conformance.protocols import adapter_for


async def _one_version_log() -> str:
    adapter = adapter_for("stmp")
    server = await adapter.start_reference("tcp", {**adapter.params, **adapter.ref_params})
    try:
        result = await run_case(all_cases("stmp")["stmp/handshake/one-version"], server.url)
    finally:
        await server.close()
    return result.log.render()


def test_sent_and_received_frames_are_decoded_after_their_hex() -> None:
    lines = asyncio.run(_one_version_log()).splitlines()
    sent = next(i for i, line in enumerate(lines) if re.search(r"ms >> bytes\[\d+\]$", line))
    received = next(i for i, line in enumerate(lines) if re.search(r"ms << bytes\[\d+\]$", line))
    # the step the suite sent, by the fields it was encoded from (scenarios/stmp/handshake.yaml)
    sent_note = next(line for line in lines[sent:] if "-- >> decoded:" in line)
    assert "kind='request'" in sent_note and "versions=['0.1']" in sent_note
    # the target's reply as the STMP reader reads it, after its hex dump
    received_note = next(line for line in lines[received:] if "-- << decoded:" in line)
    assert "STMP" in received_note and "response" in received_note and "id=0x0" in received_note


def test_a_sent_credential_is_not_in_the_decoded_note() -> None:
    from conformance.scenario.runner import _spec_summary
    summary = _spec_summary({"command": "Connection.Authorize", "user": "alice", "password": "wonderland"})
    assert "wonderland" not in summary and "user='alice'" in summary
