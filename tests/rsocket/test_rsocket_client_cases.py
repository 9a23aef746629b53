"""The interop matrix's reference client cases (reference_impl/rsocket/client_cases.py).

Against the reference server every case passes on both transports and the server keeps what
fnf and metadata-push sent; against a server that breaks the test service the case (or the
read-back) that covers that part fails; an unknown name is 127.
"""

from __future__ import annotations

import asyncio

import pytest

from reference_impl.rsocket import service
from reference_impl.rsocket.client_cases import CASES, UNSUPPORTED, run_case, server_kept
from reference_impl.rsocket.server import start_server


def run_cases(names, transport: str = "tcp") -> dict[str, tuple[int, str | None]]:
    async def main():
        server = await start_server(transport=transport)
        try:
            results = {}
            for name in names:
                code = await run_case(name, server.url, log=lambda *_: None)
                results[name] = (code, await server_kept(name, server.url))
            return results
        finally:
            await server.close()
    return asyncio.run(asyncio.wait_for(main(), 60))


@pytest.mark.parametrize("transport", ["tcp", "websocket"])
def test_every_case_passes_against_the_reference_server(transport: str) -> None:
    assert run_cases(CASES, transport) == dict.fromkeys(CASES, (0, None))
    assert set(CASES) == {"request-response", "stream", "fnf", "metadata-push", "channel", "fragmented"}


def test_unknown_case_is_unsupported() -> None:
    assert run_cases(["lease", "no-such-case"]) == {"lease": (UNSUPPORTED, None), "no-such-case": (UNSUPPORTED, None)}


def test_cases_fail_against_a_server_that_drops_metadata_and_fnf(monkeypatch: pytest.MonkeyPatch) -> None:
    original = service.TestService._request

    def broken(self, req):
        if req.kind is service.Kind.FNF:
            return  # keeps nothing
        original(self, service.RequestReceived(req.kind, req.stream_id, None, req.data, req.initial_n,
                                               req.complete))  # metadata lost
    monkeypatch.setattr(service.TestService, "_request", broken)
    results = run_cases(["request-response", "fnf", "fragmented", "stream"])
    assert {name: code for name, (code, _) in results.items()} == {
        "request-response": 0, "fnf": 0, "fragmented": 1, "stream": 0}
    assert "did not keep" in results["fnf"][1] and "b'client'" in results["fnf"][1]
