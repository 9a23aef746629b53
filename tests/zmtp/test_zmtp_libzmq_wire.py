"""libzmq (through pyzmq) on a raw TCP socket: the bytes behind the LIBZMQ_* vectors, captured again.

Each test speaks ZMTP by hand (or through our sans-IO Connection) to a libzmq
socket bound or connected on 127.0.0.1, reads with a timeout, and compares
what libzmq sent or did with the vector that records it.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import zmq
from nacl.public import Box, PrivateKey, PublicKey
from zmq.auth.thread import ThreadAuthenticator
from zmq.utils import z85

from reference_impl.zmtp.connection import Connection, ConnectionClosed, HandshakeComplete, Message
from reference_impl.zmtp.commands import Ping
from reference_impl.zmtp.curve import CurveClientConfig, KeyPair
from reference_impl.zmtp.plain import PlainClientConfig

VECTORS = Path(__file__).resolve().parents[2] / "vectors" / "zmtp"
TIMEOUT = 3.0


def greeting(mechanism: bytes, as_server: int = 0) -> bytes:
    return b"\xff" + bytes(8) + b"\x7f\x03\x01" + mechanism.ljust(20, b"\x00") + bytes([as_server]) + bytes(31)


NULL_GREETING = greeting(b"NULL")
DEALER_READY = b"\x04\x29\x05READY\x0bSocket-Type\x00\x00\x00\x06DEALER\x08Identity\x00\x00\x00\x00"


def vector(file: str, tc_id: int) -> bytes:
    doc = json.loads((VECTORS / file).read_text())
    test = next(t for g in doc["testGroups"] for t in g["tests"] if t["tcId"] == tc_id)
    return bytes.fromhex(test["wire"])


def read_exactly(sock: socket.socket, size: int) -> bytes:
    deadline = time.monotonic() + TIMEOUT
    data = b""
    while len(data) < size:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError(f"closed after {len(data)} of {size} octets: {data.hex()}")
        data += chunk
    return data


@contextmanager
def libzmq(kind: int, **options: object) -> Iterator[tuple[zmq.Socket, int]]:
    ctx = zmq.Context()
    sock = ctx.socket(kind)
    sock.linger = 0
    sock.rcvtimeo = int(TIMEOUT * 1000)
    for name, value in options.items():
        setattr(sock, name, value)
    port = sock.bind_to_random_port("tcp://127.0.0.1")
    try:
        yield sock, port
    finally:
        sock.close()
        ctx.term()


@contextmanager
def listener() -> Iterator[socket.socket]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(TIMEOUT)
    try:
        yield server
    finally:
        server.close()


def drive(sock: socket.socket, conn: Connection, stop: type | tuple[type, ...]) -> list:
    """Run a Connection over a blocking socket until an event of type ``stop`` (or a close) arrives."""
    events: list = []
    deadline = time.monotonic() + TIMEOUT
    while not any(isinstance(e, (stop, ConnectionClosed)) for e in events):
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        out = conn.receive_data(sock.recv(65536), time.monotonic())
        events += out.events
        if out.data:
            sock.sendall(out.data)
    return events


def test_null_router_greeting_and_ready() -> None:
    with libzmq(zmq.ROUTER) as (_, port), socket.create_connection(("127.0.0.1", port), TIMEOUT) as raw:
        raw.sendall(NULL_GREETING)
        assert read_exactly(raw, 64) == vector("greeting.json", 9)
        assert read_exactly(raw, 43) == vector("commands.json", 3)


def test_plain_server_sends_as_server_zero() -> None:
    with libzmq(zmq.ROUTER, plain_server=True) as (_, port), socket.create_connection(("127.0.0.1", port), TIMEOUT) as raw:
        raw.sendall(greeting(b"PLAIN"))
        assert read_exactly(raw, 64) == vector("greeting.json", 10)


def test_plain_client_hello_and_initiate() -> None:
    ctx = zmq.Context()
    dealer = ctx.socket(zmq.DEALER)
    dealer.linger = 0
    dealer.plain_username, dealer.plain_password = b"alice", b"wonderland"
    try:
        with listener() as server:
            dealer.connect(f"tcp://127.0.0.1:{server.getsockname()[1]}")
            raw, _ = server.accept()
            with raw:
                raw.sendall(greeting(b"PLAIN", as_server=1))
                read_exactly(raw, 64)
                assert read_exactly(raw, 25) == vector("plain.json", 1)
                raw.sendall(vector("plain.json", 3))  # WELCOME
                assert read_exactly(raw, 46) == vector("plain.json", 4)
    finally:
        dealer.close()
        ctx.term()


def test_plain_refusal_sends_a_broken_error_and_our_client_closes_cleanly() -> None:
    ctx = zmq.Context()
    auth = ThreadAuthenticator(ctx)
    auth.start()
    auth.configure_plain(domain="*", passwords={"alice": "wonderland"})
    router = ctx.socket(zmq.ROUTER)
    router.linger = 0
    router.plain_server = True
    port = router.bind_to_random_port("tcp://127.0.0.1")
    try:
        with socket.create_connection(("127.0.0.1", port), TIMEOUT) as raw:
            raw.sendall(greeting(b"PLAIN"))
            read_exactly(raw, 64)
            raw.sendall(b"\x04\x14\x05HELLO\x05alice\x07bad-pwd")
            assert read_exactly(raw, 11) == vector("plain.json", 7)
        with socket.create_connection(("127.0.0.1", port), TIMEOUT) as raw:
            conn = Connection("DEALER", PlainClientConfig(b"alice", b"bad"))
            raw.sendall(conn.start(time.monotonic()).data)
            events = drive(raw, conn, HandshakeComplete)
            assert events[-1].code == "bad-command-name"
    finally:
        router.close()
        auth.stop()
        ctx.term()


def test_heartbeat_ping_and_pong_bytes() -> None:
    ctx = zmq.Context()
    dealer = ctx.socket(zmq.DEALER)
    dealer.linger = 0
    dealer.heartbeat_ivl, dealer.heartbeat_ttl, dealer.heartbeat_timeout = 200, 2000, 5000
    try:
        with listener() as server:
            dealer.connect(f"tcp://127.0.0.1:{server.getsockname()[1]}")
            raw, _ = server.accept()
            with raw:
                raw.sendall(NULL_GREETING + DEALER_READY.replace(b"DEALER", b"ROUTER"))
                read_exactly(raw, 64 + 43)
                assert read_exactly(raw, 9) == vector("commands.json", 13)
                raw.sendall(b"\x04\x0d\x04PING\x00\x00contxt")
                received = read_exactly(raw, 13)
                while received.startswith(b"\x04\x07\x04PING"):  # another PING may come first
                    received = received[9:] + read_exactly(raw, 9)
                assert received == vector("commands.json", 15)
    finally:
        dealer.close()
        ctx.term()


@pytest.mark.parametrize("frames, file, tc_id", [
    (b"\x02" + (5).to_bytes(8, "big") + b"hello", "frames.json", 9),
    (b"\x08\x05hello", "frames.json", 11),
    (b"\x80\x05hello", "frames.json", 12),
    (b"\x05\x06\x05READY" + b"\x00\x05hello", "frames.json", 13),
])
def test_libzmq_accepts(frames: bytes, file: str, tc_id: int) -> None:
    assert frames.startswith(vector(file, tc_id))
    with libzmq(zmq.ROUTER) as (router, port), socket.create_connection(("127.0.0.1", port), TIMEOUT) as raw:
        raw.sendall(NULL_GREETING)
        read_exactly(raw, 64 + 43)
        raw.sendall(DEALER_READY + frames)
        assert router.recv_multipart()[1:] == [b"hello"]


def test_libzmq_reads_only_the_low_bit_of_signature_octet_9() -> None:
    greeting = vector("greeting.json", 15)
    with libzmq(zmq.ROUTER) as (router, port), socket.create_connection(("127.0.0.1", port), TIMEOUT) as raw:
        raw.sendall(greeting)
        read_exactly(raw, 64 + 43)
        raw.sendall(DEALER_READY + b"\x00\x05hello")
        assert router.recv_multipart()[1:] == [b"hello"]


def test_curve_client_hello_has_72_octets_of_padding() -> None:
    server = KeyPair.generate()
    ctx = zmq.Context()
    dealer = ctx.socket(zmq.DEALER)
    dealer.linger = 0
    dealer.curve_serverkey = z85.encode(server.public)
    dealer.curve_publickey, dealer.curve_secretkey = zmq.curve_keypair()
    try:
        with listener() as listening:
            dealer.connect(f"tcp://127.0.0.1:{listening.getsockname()[1]}")
            raw, _ = listening.accept()
            with raw:
                raw.sendall(greeting(b"CURVE", as_server=1))
                read_exactly(raw, 64)
                frame = read_exactly(raw, 202)
    finally:
        dealer.close()
        ctx.term()
    hello = frame[2:]
    assert frame[:2] == b"\x04\xc8" and hello[:8] == b"\x05HELLO\x01\x00"
    assert hello[8:80] == bytes(72)  # curve.json tcId 9: the prose's 70 is wrong
    signature = Box(PrivateKey(server.secret), PublicKey(hello[80:112])).decrypt(
        hello[120:200], b"CurveZMQHELLO---" + hello[112:120])
    assert signature == bytes(64) and hello[112:120] == (1).to_bytes(8, "big")


def test_curve_message_framing_and_boxed_ping_from_libzmq() -> None:
    """libzmq frames MESSAGE with flags 00 (curve.json tcId 5) and boxes PING with flag 02 (tcId 8)."""
    server_public, server_secret = zmq.curve_keypair()
    with libzmq(zmq.ROUTER, curve_server=True, curve_secretkey=server_secret, heartbeat_ivl=100,
                heartbeat_timeout=5000) as (router, port), \
            socket.create_connection(("127.0.0.1", port), TIMEOUT) as raw:
        conn = Connection("DEALER", CurveClientConfig(z85.decode(server_public), KeyPair.generate()))
        raw.sendall(conn.start(time.monotonic()).data)
        assert isinstance(drive(raw, conn, HandshakeComplete)[-1], HandshakeComplete)
        raw.sendall(conn.send(Message([b"hi"])).data)
        routing_id, _ = router.recv_multipart()
        router.send_multipart([routing_id, b"back"])
        raw_frames = b""
        events: list = []
        deadline = time.monotonic() + TIMEOUT
        while not (any(isinstance(e, Message) for e in events) and any(isinstance(e, Ping) for e in events)):
            raw.settimeout(max(0.01, deadline - time.monotonic()))
            data = raw.recv(65536)
            raw_frames += data
            out = conn.receive_data(data, time.monotonic())
            events += out.events
            raw.sendall(out.data)
    assert Message([b"back"]) in events
    assert raw_frames[0] == 0x00 and raw_frames[2:10] == b"\x07MESSAGE"
