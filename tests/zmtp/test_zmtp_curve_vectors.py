"""The CURVE vectors (vectors/zmtp/curve.json) against an independent RFC 26 layout and against libzmq.

``rfc26_transcript`` builds every command of a fixed-key handshake from the
RFC 26 grammar with PyNaCl's high-level Box/SecretBox (the reference
implementation uses nacl.bindings and its own layout code).  The vector file
must hold exactly these bytes.  The permanent keys are the example keys of
libzmq's zmq_curve(7) manual page; the transient keys, cookie key and long
nonces are ASCII strings chosen for the vectors.

libzmq then shows the boxes are right: a libzmq server (those permanent keys)
completes a handshake with our client using the vector's client-side fixed
values, and the HELLO our client sends is byte-identical to the vector; a
libzmq client completes a handshake with our server using the vector's
server-side fixed values (its own C' is random, so its WELCOME bytes differ).
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from pathlib import Path

import pytest
import zmq
import zmq.asyncio
from nacl.public import Box, PrivateKey, PublicKey
from nacl.secret import SecretBox
from zmq.utils import z85

from reference_impl.zmtp.connection import Connection, ConnectionClosed, HandshakeComplete, Message
from reference_impl.zmtp.curve import CurveClientConfig, CurveServerConfig, KeyPair
from reference_impl.zmtp.sockets import bind_router

VECTORS = Path(__file__).resolve().parents[2] / "vectors" / "zmtp" / "curve.json"

# zmq_curve(7): "Test key value ... client / server".
CLIENT_PUBLIC_Z85 = "Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID"
CLIENT_SECRET_Z85 = "D:)Q[IlAW!ahhC2ac:9*A}h:p?([4%wOTJ%JR%cs"
SERVER_PUBLIC_Z85 = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"
SERVER_SECRET_Z85 = "JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6"
CLIENT_TRANSIENT_SECRET = b"client transient secret, vectors"
SERVER_TRANSIENT_SECRET = b"server transient secret, vectors"
COOKIE_KEY = b"cookie key: for the vectors only"
WELCOME_NONCE = b"WELCOME nonce 16"
COOKIE_NONCE = b"COOKIE nonce 16!"
VOUCH_NONCE = b"VOUCH nonce 16!!"


def _u32(n: int) -> bytes:
    return n.to_bytes(4, "big")


def _n8(n: int) -> bytes:
    return n.to_bytes(8, "big")


def _frame(body: bytes, command: bool = True) -> bytes:
    flags = 0x04 if command else 0x00
    if len(body) > 255:
        return bytes([flags | 0x02]) + len(body).to_bytes(8, "big") + body
    return bytes([flags, len(body)]) + body


def _metadata(socket_type: bytes) -> bytes:
    return b"\x0bSocket-Type" + _u32(len(socket_type)) + socket_type + b"\x08Identity" + _u32(0)


def rfc26_transcript() -> dict[str, bytes]:
    """Keys and whole frames of the vector handshake, built from RFC 26 with PyNaCl Box/SecretBox."""
    c = PrivateKey(z85.decode(CLIENT_SECRET_Z85))
    s = PrivateKey(z85.decode(SERVER_SECRET_Z85))
    c_ = PrivateKey(CLIENT_TRANSIENT_SECRET)
    s_ = PrivateKey(SERVER_TRANSIENT_SECRET)
    C, S, C_, S_ = (bytes(k.public_key) for k in (c, s, c_, s_))

    def box(sender: PrivateKey, receiver: bytes, plain: bytes, nonce: bytes) -> bytes:
        return Box(sender, PublicKey(receiver)).encrypt(plain, nonce).ciphertext

    cookie = COOKIE_NONCE + SecretBox(COOKIE_KEY).encrypt(C_ + bytes(s_), b"COOKIE--" + COOKIE_NONCE).ciphertext
    vouch = VOUCH_NONCE + box(c, S_, C_ + S, b"VOUCH---" + VOUCH_NONCE)
    t = {
        "C": C, "c": bytes(c), "S": S, "s": bytes(s), "C'": C_, "c'": bytes(c_), "S'": S_, "s'": bytes(s_),
        "cookie": cookie,
        "hello": b"\x05HELLO" + b"\x01\x00" + bytes(72) + C_ + _n8(1)
                 + box(c_, S, bytes(64), b"CurveZMQHELLO---" + _n8(1)),
        "welcome": b"\x07WELCOME" + WELCOME_NONCE + box(s, C_, S_ + cookie, b"WELCOME-" + WELCOME_NONCE),
        "initiate": b"\x08INITIATE" + cookie + _n8(2)
                    + box(c_, S_, C + vouch + _metadata(b"DEALER"), b"CurveZMQINITIATE" + _n8(2)),
        "ready": b"\x05READY" + _n8(1) + box(s_, C_, _metadata(b"ROUTER"), b"CurveZMQREADY---" + _n8(1)),
        "message-c3": b"\x07MESSAGE" + _n8(3) + box(c_, S_, b"\x00hello", b"CurveZMQMESSAGEC" + _n8(3)),
        "message-s2": b"\x07MESSAGE" + _n8(2) + box(s_, C_, b"\x00world", b"CurveZMQMESSAGES" + _n8(2)),
        "message-c4-more": b"\x07MESSAGE" + _n8(4) + box(c_, S_, b"\x01part one", b"CurveZMQMESSAGEC" + _n8(4)),
        # The PING libzmq boxes: flags 02 (its COMMAND bit), then "\x04PING" and a TTL of 20 (2 s).
        "message-s3-ping": b"\x07MESSAGE" + _n8(3) + box(s_, C_, b"\x02\x04PING\x00\x14", b"CurveZMQMESSAGES" + _n8(3)),
    }
    return t


def _vectors() -> dict[int, dict]:
    doc = json.loads(VECTORS.read_text())
    return {test["tcId"]: test for group in doc["testGroups"] for test in group["tests"]}


# tcId -> (transcript entry, framed as a command?)
_EXPECTED = {
    1: ("hello", True), 2: ("welcome", True), 3: ("initiate", True), 4: ("ready", True),
    5: ("message-c3", False), 6: ("message-s2", False), 7: ("message-c4-more", False), 8: ("message-s3-ping", False),
}


@pytest.mark.parametrize("tc_id", sorted(_EXPECTED))
def test_vector_bytes_follow_rfc26_layout(tc_id: int) -> None:
    name, command = _EXPECTED[tc_id]
    assert _vectors()[tc_id]["wire"] == _frame(rfc26_transcript()[name], command).hex()


def test_cookie_vector_follows_rfc26_layout() -> None:
    t = rfc26_transcript()
    cookie = next(v for v in _vectors().values() if v.get("message", {}).get("cookieNonce"))
    assert cookie["wire"] == t["cookie"].hex()
    assert SecretBox(COOKIE_KEY).decrypt(t["cookie"][16:], b"COOKIE--" + COOKIE_NONCE) == t["C'"] + t["s'"]


def test_vector_keys_are_the_manual_page_keys() -> None:
    doc = json.loads(VECTORS.read_text())
    keys = doc["testGroups"][0]["context"]["keys"]
    t = rfc26_transcript()
    assert keys["clientPublic"] == z85.decode(CLIENT_PUBLIC_Z85).hex() == t["C"].hex()
    assert keys["serverPublic"] == z85.decode(SERVER_PUBLIC_Z85).hex() == t["S"].hex()
    assert keys["clientTransientPublic"] == t["C'"].hex() and keys["serverTransientPublic"] == t["S'"].hex()
    assert keys["cookieKey"] == COOKIE_KEY.hex()


def _client_config() -> CurveClientConfig:
    return CurveClientConfig(
        server_key=z85.decode(SERVER_PUBLIC_Z85),
        keypair=KeyPair.from_secret(z85.decode(CLIENT_SECRET_Z85)),
        transient=KeyPair.from_secret(CLIENT_TRANSIENT_SECRET),
        vouch_nonce=VOUCH_NONCE,
    )


def test_libzmq_server_accepts_the_vector_client() -> None:
    """Our client with the vector's fixed values completes a handshake with libzmq; its HELLO is the vector's."""
    ctx = zmq.Context()
    router = ctx.socket(zmq.ROUTER)
    router.linger = 0
    router.rcvtimeo = 3000
    router.curve_server = True
    router.curve_secretkey = SERVER_SECRET_Z85.encode()
    port = router.bind_to_random_port("tcp://127.0.0.1")
    sent = bytearray()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=3) as sock:
            conn = Connection("DEALER", _client_config())
            out = conn.start(time.monotonic())
            sent += out.data
            sock.sendall(out.data)
            events: list = []
            while not any(isinstance(e, (HandshakeComplete, ConnectionClosed)) for e in events):
                out = conn.receive_data(sock.recv(65536), time.monotonic())
                events += out.events
                sent += out.data
                sock.sendall(out.data)
            assert isinstance(events[-1], HandshakeComplete), events
            sock.sendall(conn.send(Message([b"hello"])).data)
            assert router.recv_multipart()[1:] == [b"hello"]
    finally:
        router.close()
        ctx.term()
    greeting = 64
    assert bytes(sent[greeting:greeting + 202]).hex() == _vectors()[1]["wire"]


def test_libzmq_client_accepts_the_vector_server() -> None:
    """A libzmq client completes a handshake with our server running the vector's fixed server values."""
    t = rfc26_transcript()
    config = CurveServerConfig(
        keypair=KeyPair.from_secret(t["s"]), transient=KeyPair.from_secret(t["s'"]), cookie_key=COOKIE_KEY,
        welcome_nonce=WELCOME_NONCE, cookie_nonce=COOKIE_NONCE,
    )

    async def scenario() -> None:
        router = await bind_router(mechanism=config, timeout=5.0)
        ctx = zmq.asyncio.Context()
        dealer = ctx.socket(zmq.DEALER)
        dealer.linger = 0
        dealer.curve_serverkey = SERVER_PUBLIC_Z85.encode()
        dealer.curve_publickey = CLIENT_PUBLIC_Z85.encode()
        dealer.curve_secretkey = CLIENT_SECRET_Z85.encode()
        try:
            dealer.connect(f"tcp://127.0.0.1:{router.port}")
            await dealer.send_multipart([b"hello"])
            routing_id, body = await router.recv()
            assert body == b"hello"
            assert await router.send([routing_id, b"world"])
            assert await asyncio.wait_for(dealer.recv_multipart(), 5) == [b"world"]
        finally:
            dealer.close()
            ctx.term()
            await router.close()

    asyncio.run(scenario())
