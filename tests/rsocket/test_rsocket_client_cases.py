"""The client-role cases (reference_impl/rsocket/client_cases.py) run by the reference client.

Against the reference server every case passes on both transports; against a server that
breaks the test service the case that checks that part fails; an unknown name is 127.
"""

from __future__ import annotations

import asyncio

import pytest

from reference_impl.rsocket import service
from reference_impl.rsocket.client_cases import CASES, UNSUPPORTED, run_case
from reference_impl.rsocket.server import start_server


def run_cases(names, transport: str = "tcp") -> dict[str, int]:
    async def main():
        server = await start_server(transport=transport)
        try:
            return {name: await run_case(name, server.url, log=lambda *_: None) for name in names}
        finally:
            await server.close()
    return asyncio.run(asyncio.wait_for(main(), 60))


@pytest.mark.parametrize("transport", ["tcp", "websocket"])
def test_every_case_passes_against_the_reference_server(transport: str) -> None:
    assert run_cases(CASES, transport) == dict.fromkeys(CASES, 0)


def test_unknown_case_is_unsupported() -> None:
    assert run_cases(["lease", "no-such-case"]) == {"lease": UNSUPPORTED, "no-such-case": UNSUPPORTED}


def test_cases_fail_against_a_server_that_drops_metadata_and_fnf(monkeypatch: pytest.MonkeyPatch) -> None:
    original = service.TestService._request

    def broken(self, req):
        if req.kind is service.Kind.FNF:
            return  # keeps nothing
        original(self, service.RequestReceived(req.kind, req.stream_id, None, req.data, req.initial_n,
                                               req.complete))  # metadata lost
    monkeypatch.setattr(service.TestService, "_request", broken)
    assert run_cases(["request-response", "fnf", "fragmented", "stream"]) == {
        "request-response": 1, "fnf": 1, "fragmented": 1, "stream": 0}
