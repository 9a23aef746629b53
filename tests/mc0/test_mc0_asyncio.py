"""Brokers over real sockets: fan-out to several subscribers, other clients served through bad input, NULL.

The runner gives a case one connection, so what needs several (two
subscribers of one topic, a client still served while another misbehaves)
is proven here, against the reference broker in-process and the
third-party pyzmq broker in its own process.  Every wait is bounded.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance.targets import free_port, wait_listening
from reference_impl.mc0 import codec
from reference_impl.mc0.client import Mc0Client, RequestFailed
from reference_impl.mc0.server import start_server
from reference_impl.zmtp.sockets import HandshakeFailed

ROOT = Path(__file__).resolve().parents[2]
THIRD_PARTY = ROOT / "thirdparty" / "pyzmq_mc0_broker.py"


@pytest.fixture(scope="module")
def pyzmq_broker():
    pytest.importorskip("zmq")
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(THIRD_PARTY), "--port", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        assert wait_listening(port, time.monotonic() + 15, lambda: proc.poll() is None)
        yield f"tcp://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def with_broker(which: str, pyzmq_url: str | None, body) -> None:
    async def main() -> None:
        async with asyncio.timeout(30):
            if which == "pyzmq":
                await body(pyzmq_url)
                return
            server = await start_server()
            try:
                await body(server.url)
            finally:
                await server.close()
    asyncio.run(main())


@pytest.fixture(params=["ref", "pyzmq"])
def broker_url(request):
    if request.param == "ref":
        return "ref", None
    return "pyzmq", request.getfixturevalue("pyzmq_broker")


async def _nothing_more(client: Mc0Client) -> None:
    """A barrier: the client's own OK arrives first, and nothing follows within 200 ms."""
    await client.request(codec.NOOP)
    with pytest.raises(TimeoutError):
        await client.recv(timeout=0.2)


def test_put_fans_out_to_every_exact_subscriber(broker_url) -> None:
    async def body(url: str) -> None:
        a, b, c, publisher = [await Mc0Client.connect(url) for _ in range(4)]
        try:
            for client in (a, b, c, publisher):
                await client.hello()
            await a.subscribe(b"fan")
            await b.subscribe(b"other", b"fan")
            await c.subscribe(b"fa", b"fan.out", b"FAN")
            await publisher.put(b"fan", [b"p1", b"", b"x" * 70000], extensions=[(b"X-Trace", b"42")])
            expected = codec.delivery(b"fan", [(b"X-Trace", b"42")], [b"p1", b"", b"x" * 70000])
            assert await a.recv() == expected
            assert await b.recv() == expected
            for client in (a, b, c, publisher):
                await _nothing_more(client)
        finally:
            for client in (a, b, c, publisher):
                await client.close()
    with_broker(*broker_url, body)


def test_bad_input_from_one_client_leaves_the_others_served(broker_url) -> None:
    async def body(url: str) -> None:
        good = await Mc0Client.connect(url)
        bad = await Mc0Client.connect(url)
        try:
            await good.subscribe(b"t")
            await bad.send_frames([b"", b"PUT", b"TOPIC", b"t", b"X-A"])          # odd header count
            assert (await bad.recv()).verb == codec.ERROR
            await bad.send_frames([b"", b"FROB", b"ID", b"9"])                     # unknown verb
            assert (await bad.recv()).verb == codec.ERROR
            await bad.send_frames([b"NOOP"])                                       # no delimiter
            assert (await bad.recv()).verb == codec.ERROR
            for garbage in (b"GET / HTTP/1.1\r\n\r\n", b"\xff" + bytes(8) + b"\x7f\x03\x01BOGUS" + bytes(47)):
                host, port = url[len("tcp://"):].split(":")
                reader, writer = await asyncio.open_connection(host, int(port))
                writer.write(garbage)
                await writer.drain()
                writer.close()
            await bad.put(b"t", [b"after"])
            assert await good.recv() == codec.delivery(b"t", [], [b"after"])
            with pytest.raises(RequestFailed):
                await bad.request(b"FROB")
            await _nothing_more(bad)
        finally:
            await good.close()
            await bad.close()
    with_broker(*broker_url, body)


def test_null_clients_only_when_configured() -> None:
    async def main() -> None:
        async with asyncio.timeout(30):
            strict = await start_server()
            mixed = await start_server(allow_null=True)
            try:
                with pytest.raises(HandshakeFailed):
                    await Mc0Client.connect(strict.url, mechanism="NULL")
                plain = await Mc0Client.connect(mixed.url, mechanism="NULL")
                boxed = await Mc0Client.connect(mixed.url)
                assert plain.dealer._ready[0].connection.config.name == "NULL"
                assert boxed.dealer._ready[0].connection.config.name == "CURVE"
                await plain.subscribe(b"both")
                await boxed.put(b"both", [b"crossed"])
                assert await plain.recv() == codec.delivery(b"both", [], [b"crossed"])
                await plain.close()
                await boxed.close()
            finally:
                await strict.close()
                await mixed.close()
    asyncio.run(main())


def test_absent_client_gets_nothing_another_client_puts(broker_url) -> None:
    async def body(url: str) -> None:
        quiet = await Mc0Client.connect(url)
        talker = await Mc0Client.connect(url)
        try:
            await quiet.hello(ttl_ms=300)
            await quiet.subscribe(b"ttl")
            await asyncio.sleep(1.0)
            await talker.put(b"ttl", [b"late"])
            seen = []
            while True:
                try:
                    seen.append((await quiet.recv(timeout=0.3)).verb)
                except TimeoutError:
                    break
            assert seen and set(seen) == {codec.NOOP}  # heartbeats while quiet, no MESSAGE after absence
        finally:
            await quiet.close()
            await talker.close()
    with_broker(*broker_url, body)


@pytest.mark.parametrize("mechanism", ["CURVE", "NULL"])
def test_a_libzmq_dealer_is_served_by_the_reference_broker(mechanism: str) -> None:
    zmq = pytest.importorskip("zmq")
    from reference_impl.mc0 import testkeys
    from reference_impl.zmtp.z85 import z85_encode

    def libzmq_connector(url: str) -> list[list[bytes]]:
        ctx = zmq.Context()
        sock = ctx.socket(zmq.DEALER)
        sock.linger = 0
        sock.rcvtimeo = sock.sndtimeo = 5000
        if mechanism == "CURVE":
            sock.curve_serverkey = z85_encode(testkeys.SERVER.public).encode()
            sock.curve_publickey = z85_encode(testkeys.CLIENT.public).encode()
            sock.curve_secretkey = z85_encode(testkeys.CLIENT.secret).encode()
        try:
            sock.connect(url)
            got = []
            for request in ([b"", b"CONNECT", b"VERSION", b"0.3", b"ID", b"c"], [b"", b"SUB", b"ID", b"s", b"", b"z"],
                            [b"", b"PUT", b"TOPIC", b"z", b"X-K", b"v", b"", b"body"], [b"", b"FOO", b"ID", b"f"]):
                sock.send_multipart(request)
            for _ in range(4):
                got.append(sock.recv_multipart())
            return got
        finally:
            sock.close()
            ctx.term()

    async def main() -> None:
        server = await start_server(allow_null=mechanism == "NULL")
        try:
            got = await asyncio.wait_for(asyncio.to_thread(libzmq_connector, server.url), 20)
        finally:
            await server.close()
        assert got[:3] == [[b"", b"OK", b"ID", b"c"], [b"", b"OK", b"ID", b"s"],
                           [b"", b"MESSAGE", b"TOPIC", b"z", b"X-K", b"v", b"", b"body"]]
        assert got[3][:4] == [b"", b"ERROR", b"ID", b"f"]
    asyncio.run(main())
