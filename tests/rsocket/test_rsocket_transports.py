"""RSocket server and client on 127.0.0.1, TCP and WebSocket.

Raw peers send frames written by hand from Protocol.md's layouts; the type-and-flags
word is type << 10 | I 0x200 | M 0x100 | F/R 0x80 | C/L 0x40 | N 0x20.
"""

from __future__ import annotations

import asyncio

import pytest
from websockets.asyncio.client import connect as ws_connect

from reference_impl.rsocket.client import StreamError, connect
from reference_impl.rsocket.server import start_server

H = bytes.fromhex
# stream 0 | SETUP 0400 | 1.0 | keepalive 500 | lifetime 2000 | two empty MIME types
SETUP = H("00000000" "0400" "0001" "0000" "000001f4" "000007d0" "00" "00")


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 20))


def test_raw_tcp_peer_gets_echo_over_one_byte_writes():
    async def main():
        server = await start_server()
        host, port = server.url[len("tcp://"):].split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        # SETUP behind length 000014 (20), then REQUEST_RESPONSE 'echo:hi' behind 00000d (13)
        wire = H("000014") + SETUP + H("00000d" "00000001" "1000" "6563686f3a6869")
        for i in range(len(wire)):
            writer.write(wire[i:i + 1])
            await writer.drain()
        # length 000008 | stream 1 | PAYLOAD C|N 2860 | 'hi'
        reply = await asyncio.wait_for(reader.readexactly(11), 5)
        writer.close()
        await server.close()
        return reply
    assert run(main()) == H("000008" "00000001" "2860" "6869")


def test_raw_tcp_peer_with_wrong_first_frame_gets_invalid_setup_then_eof():
    async def main():
        server = await start_server()
        host, port = server.url[len("tcp://"):].split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(H("000007" "00000001" "1000" "78"))  # REQUEST_RESPONSE first
        data = await asyncio.wait_for(reader.read(), 5)
        writer.close()
        await server.close()
        return data
    data = run(main())
    # length | stream 0 | ERROR 2c00 | INVALID_SETUP 00000001 | reason
    assert data[3:13] == H("00000000" "2c00" "00000001")


def test_websocket_text_message_is_a_connection_error():
    async def main():
        server = await start_server(transport="websocket")
        async with ws_connect(server.url) as ws:
            await ws.send(SETUP)
            await ws.send("not a frame")
            reply = await asyncio.wait_for(ws.recv(), 5)
        await server.close()
        return reply
    assert run(main())[:10] == H("00000000" "2c00" "00000101")


@pytest.mark.parametrize("transport", ["tcp", "websocket"])
def test_reference_client_against_reference_server(transport):
    async def main():
        server = await start_server(transport=transport)
        client = await connect(server.url, fragment_size=3)
        echo = await client.request_response(b"echo:hello world", metadata=b"meta")
        items = await client.request_stream(b"range:5", batch=2)
        await client.fire_and_forget(b"fnf:kept")
        await client.metadata_push(b"pushed")
        await asyncio.sleep(0.2)
        last_fnf = await client.request_response(b"last-fnf")
        last_push = await client.request_response(b"last-metadata-push")
        with pytest.raises(StreamError) as err:
            await client.request_response(b"error:boom")
        await client.close()
        await server.close()
        return echo, items, last_fnf.data, last_push.data, err.value
    echo, items, last_fnf, last_push, err = run(main())
    assert (echo.data, echo.metadata) == (b"hello world", b"meta")
    assert items == [b"0", b"1", b"2", b"3", b"4"]
    assert (last_fnf, last_push) == (b"kept", b"pushed")
    assert (err.code, err.data) == (0x201, b"boom")


def test_a_resuming_websocket_client_whose_reconnect_is_refused_ends_its_requests():
    """The server drops the transport of a session set up with R, then answers the client's new
    WebSocket handshake with HTTP 503: the request fails with ConnectionLost at once, no hang."""
    from websockets.asyncio.server import serve
    from websockets.http11 import Response

    from reference_impl.rsocket.client import ConnectionLost

    async def main():
        handshakes = 0

        def refuse_after_the_first(connection, request):
            nonlocal handshakes
            handshakes += 1
            return connection.respond(503, "gone\n") if handshakes > 1 else None

        async def drop_after_the_request(websocket):
            await websocket.recv()  # SETUP
            await websocket.send(H("00000000" "0c00" "0000000000000000"))  # KEEPALIVE: the session is established
            await websocket.recv()  # REQUEST_RESPONSE
            await websocket.close()

        async with serve(drop_after_the_request, "127.0.0.1", 0, process_request=refuse_after_the_first) as server:
            port = server.sockets[0].getsockname()[1]
            client = await connect(f"ws://127.0.0.1:{port}/", resume_token=b"tk")
            try:
                with pytest.raises(ConnectionLost):
                    await asyncio.wait_for(client.request_response(b"echo:x"), 3)
            finally:
                await client.close()
        return handshakes

    assert run(main()) == 2


def test_a_request_made_while_the_transport_is_down_waits_for_the_resume():
    """Between a lost transport and the RESUME, a new request neither fails on the dead transport
    nor gets ahead of the RESUME on the new one ("Resume Operation": RESUME comes first)."""
    async def main():
        first_frames: list[int] = []
        connections = 0
        dropped = asyncio.Event()

        async def serve(reader, writer):
            nonlocal connections
            connections += 1
            if connections == 1:
                size = int.from_bytes(await reader.readexactly(3), "big")
                await reader.readexactly(size)  # SETUP
                writer.write(H("00000e" "00000000" "0c00" "0000000000000000"))  # KEEPALIVE: established
                await writer.drain()
                writer.close()
                dropped.set()
                return
            size = int.from_bytes(await reader.readexactly(3), "big")
            frame = await reader.readexactly(size)
            first_frames.append(int.from_bytes(frame[4:6], "big") >> 10)
            await reader.read()
            writer.close()

        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        client = await connect(f"tcp://127.0.0.1:{port}", resume_token=b"tk")
        gate = asyncio.Event()
        opened = client._open_transport

        async def slow_open():  # the new transport comes only when the test says
            await gate.wait()
            return await opened()
        client._open_transport = slow_open
        try:
            await asyncio.wait_for(dropped.wait(), 5)
            await asyncio.sleep(0.2)  # the client has seen the end of the stream and waits for a new transport
            request = asyncio.create_task(client.request_response(b"echo:x"))
            await asyncio.sleep(0.2)
            assert not request.done(), request.exception()  # no ConnectionResetError from the dead transport
            gate.set()
            for _ in range(200):
                if first_frames:
                    break
                await asyncio.sleep(0.01)
            request.cancel()
        finally:
            await client.close()
            server.close()
        return first_frames

    assert run(main()) == [0x0D]  # RESUME first on the new transport
