"""A channel responder may end its side with the last echo and the completion in one PAYLOAD (N|C:
onNext then onComplete, the spec's "PAYLOAD ... (C)omplete ... and (N)ext") or with the echo and then
a PAYLOAD with C alone.  The cases that watch a channel complete take both (a sequence alternative:
an echo without C must be followed by the completion), and not a completion that drops the echo
(the one-bug server ``channel-next-complete-item-dropped``).
"""

from __future__ import annotations

import asyncio
import time

import pytest

from conformance.grading import Grade
from reference_impl.rsocket.connection import Connection, Role
from reference_impl.rsocket.server import start_server
from reference_impl.rsocket.service import TestService
from tests.harness.suite_helpers import all_cases, run_case

CASES = [
    "rsocket/request/channel-complete-initial",
    "rsocket/request/channel-payload-after-complete-ignored",
    "rsocket/split-message/follows-with-complete",
    "rsocket/split-message/channel-request-fragmented-complete",
]


class _CompletesWithLastEcho(TestService):
    """The reference service, but a channel whose requester is done sends its last echo with C."""

    def pump(self) -> None:
        for sid, channel in list(self._channels.items()):
            if channel.requester_done and len(channel.queue) == 1 and self.conn.credit(sid):
                metadata, data = channel.queue.popleft()
                self.conn.send_payload(sid, data, metadata, complete=True)
                del self._channels[sid]
        super().pump()


async def _run_against_combining_server(case_ids: list[str]) -> dict[str, Grade]:
    server = await start_server("127.0.0.1", 0)

    def connection() -> Connection:
        conn = Connection(Role.SERVER, server.transport, now=time.monotonic(), sessions=server.sessions,
                          **server.options)
        conn.app = _CompletesWithLastEcho(conn, server.shared)
        return conn

    server._connection = connection
    try:
        cases = all_cases("rsocket")
        return {cid: (await run_case(cases[cid], server.url)).grade for cid in case_ids}
    finally:
        await server.close()


@pytest.mark.parametrize("case_id", CASES)
def test_a_responder_that_completes_with_its_last_echo_passes(case_id: str) -> None:
    assert asyncio.run(_run_against_combining_server([case_id])) == {case_id: Grade.PASSED}
