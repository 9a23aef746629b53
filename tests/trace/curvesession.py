"""A CURVE session (RFC 26) built by hand with PyNaCl from fixed keys, independently of
reference_impl.zmtp.curve: the boxes, nonces and ZMTP framing follow the RFC's grammar here, so
that check-trace --keylog is tested against bytes the code under test did not make."""

from __future__ import annotations

from nacl.bindings import crypto_box, crypto_scalarmult_base, crypto_secretbox

# fixed secrets (any 32 octets are a Curve25519 secret key)
SERVER_SECRET = bytes(range(1, 33))  # s, long-term
CLIENT_SECRET = bytes(range(33, 65))  # c, long-term
CLIENT_T_SECRET = bytes(range(65, 97))  # c'
SERVER_T_SECRET = bytes(range(97, 129))  # s'
OTHER_T_SECRET = bytes(range(129, 161))  # a key of no session here
S, C, C_T, S_T = (crypto_scalarmult_base(k) for k in (SERVER_SECRET, CLIENT_SECRET, CLIENT_T_SECRET, SERVER_T_SECRET))


def greeting(as_server: bool) -> bytes:
    return b"\xff" + bytes(8) + b"\x7f" + b"\x03\x01" + b"CURVE".ljust(20, b"\0") + bytes([as_server]) + bytes(31)


def command(body: bytes) -> bytes:
    return b"\x04" + bytes([len(body)]) + body if len(body) < 256 else b"\x06" + len(body).to_bytes(8, "big") + body


def metadata(name: bytes, value: bytes) -> bytes:
    return bytes([len(name)]) + name + len(value).to_bytes(4, "big") + value


def short(n: int) -> bytes:
    return n.to_bytes(8, "big")


def hello() -> bytes:
    box = crypto_box(bytes(64), b"CurveZMQHELLO---" + short(1), S, CLIENT_T_SECRET)
    return command(b"\x05HELLO" + b"\x01\x00" + bytes(72) + C_T + short(1) + box)


def welcome(signer_secret: bytes = SERVER_SECRET) -> bytes:
    cookie_nonce = b"n" * 16
    cookie = cookie_nonce + crypto_secretbox(C_T + SERVER_T_SECRET, b"COOKIE--" + cookie_nonce, b"k" * 32)
    nonce = b"w" * 16
    return command(b"\x07WELCOME" + nonce + crypto_box(S_T + cookie, b"WELCOME-" + nonce, C_T, signer_secret))


def initiate(vouched: bytes = C_T) -> bytes:
    """``vouched``: the short-term key the vouch names (C' unless a test forges it)."""
    cookie_nonce = b"n" * 16
    cookie = cookie_nonce + crypto_secretbox(C_T + SERVER_T_SECRET, b"COOKIE--" + cookie_nonce, b"k" * 32)
    vouch_nonce = b"v" * 16
    vouch = crypto_box(vouched + S, b"VOUCH---" + vouch_nonce, S_T, CLIENT_SECRET)
    plain = C + vouch_nonce + vouch + metadata(b"Socket-Type", b"DEALER")
    return command(b"\x08INITIATE" + cookie + short(2) + crypto_box(plain, b"CurveZMQINITIATE" + short(2), S_T,
                                                                     CLIENT_T_SECRET))


def ready() -> bytes:
    box = crypto_box(metadata(b"Socket-Type", b"ROUTER"), b"CurveZMQREADY---" + short(1), C_T, SERVER_T_SECRET)
    return command(b"\x05READY" + short(1) + box)


def messages(side: str, frames: list[bytes], first_nonce: int) -> bytes:
    """One mc0 message: each of its frames in a MESSAGE (flags: 01 MORE), sent as libzmq sends
    MESSAGE, in a ZMTP message frame with flags 00."""
    prefix, peer, secret = ((b"CurveZMQMESSAGEC", S_T, CLIENT_T_SECRET) if side == "client"
                            else (b"CurveZMQMESSAGES", C_T, SERVER_T_SECRET))
    out = b""
    for i, frame in enumerate(frames):
        n = short(first_nonce + i)
        flags = b"\x01" if i < len(frames) - 1 else b"\x00"
        body = b"\x07MESSAGE" + n + crypto_box(flags + frame, prefix + n, peer, secret)
        assert len(body) < 256
        out += b"\x00" + bytes([len(body)]) + body
    return out


def key_line(role: str, public: bytes, secret: bytes) -> str:
    return f"{role} {public.hex()} {secret.hex()} {S.hex()}"
