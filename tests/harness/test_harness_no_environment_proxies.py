"""The suite reads no proxy settings from the environment: its WebSocket connections go to 127.0.0.1
itself, and its docker clients reach the engine directly.  Both libraries would otherwise iterate
os.environ on every connection or request, from the case's thread, while pytest's thread may be
removing PYTEST_CURRENT_TEST from it between tests: KeyError('PYTEST_CURRENT_TEST'), which a CI
run graded as a client-role case's ERROR."""

from __future__ import annotations

import asyncio

import pytest

from conformance.channels import WsChannel
from conformance.wirelog import WireLog


def test_a_websocket_channel_ignores_a_proxy_the_environment_names(monkeypatch):
    """HTTP(S)_PROXY names a port nothing listens on: a channel that went through it could not open."""
    from websockets.asyncio.server import serve

    async def exchange() -> bytes:
        async def echo(ws):
            async for message in ws:
                await ws.send(message)

        async with serve(echo, "127.0.0.1", 0) as server:
            port = server.sockets[0].getsockname()[1]
            channel = await WsChannel.open(f"ws://127.0.0.1:{port}/", WireLog(), 5.0, 1 << 20)
            try:
                await channel.send(b"through no proxy")
                return await channel.recv(5.0)
            finally:
                await channel.close()

    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    assert asyncio.run(exchange()) == b"through no proxy"


def test_docker_clients_do_not_ask_the_environment_for_proxies(monkeypatch):
    docker = pytest.importorskip("docker")
    import requests
    from docker.api.client import APIClient

    from conformance.images.engine import ignore_environment_proxies

    asked: list = []
    monkeypatch.setattr(requests.sessions, "get_environ_proxies", lambda *args, **kwargs: asked.append(args) or {})

    def client_without_engine():
        # the constructor asks the engine for its API version: a request, which fails here
        with pytest.raises(docker.errors.DockerException):
            docker.DockerClient(base_url="unix:///nonexistent/docker.sock")

    ignore_environment_proxies()
    client_without_engine()
    assert asked == []
    # the SDK as it comes asks (so the check above can fail)
    monkeypatch.delattr(APIClient, "trust_env")
    client_without_engine()
    assert asked
