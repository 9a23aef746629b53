"""The CURVE mechanism (RFC 25) speaking CurveZMQ (RFC 26), boxes by libsodium (PyNaCl).

    C: HELLO     05 HELLO, version 01 00, 72 zero octets, C', short nonce, Box[64 zeros](C'->S)
    S: WELCOME   07 WELCOME, long nonce, Box[S' + cookie](S->C')
                 cookie = long nonce, SecretBox[C' + s'](cookie key)
    C: INITIATE  08 INITIATE, cookie, short nonce, Box[C + vouch + metadata](C'->S')
                 vouch = long nonce, Box[C' + S](C->S')
    S: READY     05 READY, short nonce, Box[metadata](S'->C')
    then MESSAGE 07 MESSAGE, short nonce, Box[flags + body](sender'->receiver')

Short nonces are 8-octet big-endian counters, implicitly prefixed with
"CurveZMQHELLO---", "CurveZMQINITIATE", "CurveZMQREADY---",
"CurveZMQMESSAGEC" (from the client) or "CurveZMQMESSAGES" (from the
server); long nonces are 16 octets prefixed with "WELCOME-", "COOKIE--" or
"VOUCH---".  A box is the 16-octet MAC followed by the ciphertext.

Readings pinned here (each has a vector):
- RFC 26 says the HELLO padding is 70 octets but its grammar (72) and the
  200-octet total, like libzmq, make it 72.
- RFC 26 reserves bits 7-1 of the MESSAGE flags; libzmq sets bit 1 for a
  command carried in a box (PING, PONG, SUBSCRIBE ...).  Bit 1 is read as
  COMMAND; the other bits must be zero.
- RFC 26 says a refused client gets both "no response except closing" and an
  ERROR; the server sends ERROR, as libzmq does after a ZAP refusal.
- A peer's short nonces must strictly increase (libzmq accepts gaps).
- RFC 23 wants encrypted traffic sent as commands; libzmq 4.3 sends each
  MESSAGE in a frame with flags 00 (02 when long) and mistakes a
  COMMAND-flagged one for a command.  MESSAGE is sent as libzmq sends it and
  taken in either kind of frame.

The fixed keys, nonces and cookie key the configs accept exist for
deterministic vectors; leave them None otherwise.
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from nacl import bindings as sodium
from nacl.exceptions import CryptoError

from reference_impl.common.errors import CodecError, ProtocolViolation
from reference_impl.zmtp.codec import Frame
from reference_impl.zmtp.commands import Metadata, command_body, split_command
from reference_impl.zmtp.mechanism import HandshakeError, Mechanism, unexpected

HELLO_SIZE = 200
WELCOME_SIZE = 168
MIN_INITIATE_SIZE = 257
MIN_READY_SIZE = 30
MIN_MESSAGE_SIZE = 33
MESSAGE_OVERHEAD = MIN_MESSAGE_SIZE - 1  # octets a MESSAGE body adds to the frame body it carries
HELLO_PADDING = 72
CLIENT_MESSAGE_PREFIX = b"CurveZMQMESSAGEC"
SERVER_MESSAGE_PREFIX = b"CurveZMQMESSAGES"
#: ERROR reason for a client key the server refuses: the ZAP status code libzmq sends.
UNAUTHORIZED_REASON = b"400"

_MESSAGE_MORE = 0x01
_MESSAGE_COMMAND = 0x02
_MAX_NONCE = 2**64 - 1


@dataclass(frozen=True)
class KeyPair:
    public: bytes
    secret: bytes

    @classmethod
    def generate(cls) -> KeyPair:
        public, secret = sodium.crypto_box_keypair()
        return cls(public, secret)

    @classmethod
    def from_secret(cls, secret: bytes) -> KeyPair:
        return cls(sodium.crypto_scalarmult_base(secret), secret)


#: ``observer(role, transient key pair, server's long-term public key)`` for each CURVE mechanism
#: created in this process: `conformance run --pcap` writes them as a key log (conformance/trace/keylog.py)
_session_key_observers: list[Callable[[str, KeyPair, bytes], None]] = []


def observe_session_keys(observer: Callable[[str, KeyPair, bytes], None]) -> Callable[[], None]:
    """Call ``observer`` with every session key this process generates from now on; returns the
    function that stops it (as a TLS stack's key log callback, for decrypting our own captures)."""
    _session_key_observers.append(observer)
    return lambda: _session_key_observers.remove(observer)


def _announce(role: str, transient: KeyPair, server_public: bytes) -> None:
    for observer in list(_session_key_observers):
        observer(role, transient, server_public)


def shared_key(public: bytes, secret: bytes) -> bytes:
    """The precomputed key both ends of a box between these two key pairs share."""
    return sodium.crypto_box_beforenm(public, secret)


def _short(nonce: int) -> bytes:
    if not 0 <= nonce <= _MAX_NONCE:
        raise CodecError("bad-nonce", f"short nonce {nonce} does not fit 8 octets")
    return nonce.to_bytes(8, "big")


def _open(box: bytes, nonce: bytes, public: bytes, secret: bytes, what: str) -> bytes:
    try:
        return sodium.crypto_box_open(box, nonce, public, secret)
    except CryptoError:
        raise CodecError("bad-box", f"the {what} box does not open") from None


def _open_shared(box: bytes, nonce: bytes, key: bytes, what: str) -> bytes:
    try:
        return sodium.crypto_box_open_afternm(box, nonce, key)
    except CryptoError:
        raise CodecError("bad-box", f"the {what} box does not open") from None


def _expect(body: bytes, name: bytes, code: str, size_ok: bool) -> None:
    if not body.startswith(name):
        raise CodecError(code, f"body does not start with {name!r}")
    if not size_ok:
        raise CodecError(code, f"{name[1:].decode()} of {len(body)} octets")


# -- HELLO -----------------------------------------------------------------

@dataclass(frozen=True)
class Hello:
    client_transient: bytes
    nonce: int


def encode_hello(client_transient: KeyPair, server_public: bytes, nonce: int) -> bytes:
    short = _short(nonce)
    signature = sodium.crypto_box(bytes(64), b"CurveZMQHELLO---" + short, server_public, client_transient.secret)
    return command_body("HELLO", b"\x01\x00" + bytes(HELLO_PADDING) + client_transient.public + short + signature)


def decode_hello(body: bytes, server_secret: bytes, server_public: bytes | None = None) -> Hello:
    """As the server opens it; or, given the client's transient secret for ``server_secret`` and
    the server's public key, as a holder of the client's session key (a CURVE key log) does."""
    _expect(body, b"\x05HELLO", "bad-hello", len(body) == HELLO_SIZE)
    if body[6:8] != b"\x01\x00":
        raise CodecError("bad-hello", f"CurveZMQ version {body[6]}.{body[7]}, expected 1.0")
    if any(body[8:80]):
        raise CodecError("bad-hello", "anti-amplification padding is not zero")
    client_transient, short = body[80:112], body[112:120]
    signature = _open(body[120:], b"CurveZMQHELLO---" + short, server_public or client_transient, server_secret,
                      "HELLO signature")
    if any(signature):
        raise CodecError("bad-box", "the HELLO signature box does not hold 64 zeros")
    return Hello(client_transient, int.from_bytes(short, "big"))


# -- WELCOME and the cookie ---------------------------------------------------

@dataclass(frozen=True)
class Welcome:
    nonce: bytes
    server_transient: bytes
    cookie: bytes


def make_cookie(cookie_key: bytes, cookie_nonce: bytes, client_transient: bytes, server_transient_secret: bytes) -> bytes:
    box = sodium.crypto_secretbox(client_transient + server_transient_secret, b"COOKIE--" + cookie_nonce, cookie_key)
    return cookie_nonce + box


def open_cookie(cookie: bytes, cookie_key: bytes) -> tuple[bytes, bytes]:
    """(C', s') from a cookie."""
    if len(cookie) != 96:
        raise CodecError("bad-cookie", f"cookie of {len(cookie)} octets")
    try:
        plain = sodium.crypto_secretbox_open(cookie[16:], b"COOKIE--" + cookie[:16], cookie_key)
    except CryptoError:
        raise CodecError("bad-cookie", "the cookie box does not open") from None
    return plain[:32], plain[32:]


def encode_welcome(server_secret: bytes, client_transient: bytes, nonce: bytes, server_transient: bytes, cookie: bytes) -> bytes:
    box = sodium.crypto_box(server_transient + cookie, b"WELCOME-" + nonce, client_transient, server_secret)
    return command_body("WELCOME", nonce + box)


def decode_welcome(body: bytes, server_public: bytes, client_transient_secret: bytes) -> Welcome:
    _expect(body, b"\x07WELCOME", "bad-welcome", len(body) == WELCOME_SIZE)
    plain = _open(body[24:], b"WELCOME-" + body[8:24], server_public, client_transient_secret, "WELCOME")
    return Welcome(body[8:24], plain[:32], plain[32:])


# -- INITIATE -----------------------------------------------------------------

@dataclass(frozen=True)
class Initiate:
    cookie: bytes
    nonce: int
    client_public: bytes
    vouch_nonce: bytes
    metadata: Metadata
    client_transient: bytes  # from the cookie
    server_transient_secret: bytes  # from the cookie


def encode_initiate(cookie: bytes, nonce: int, client: KeyPair, client_transient: KeyPair, server_public: bytes,
                    server_transient: bytes, vouch_nonce: bytes, metadata: Metadata, vouched: bytes | None = None) -> bytes:
    """``vouched``: the short-term key the vouch names, C' unless a test forges it."""
    short = _short(nonce)
    vouch = sodium.crypto_box((vouched or client_transient.public) + server_public, b"VOUCH---" + vouch_nonce,
                              server_transient, client.secret)
    plain = client.public + vouch_nonce + vouch + metadata.encode()
    box = sodium.crypto_box(plain, b"CurveZMQINITIATE" + short, server_transient, client_transient.secret)
    return command_body("INITIATE", cookie + short + box)


def decode_initiate(body: bytes, cookie_key: bytes, server_public: bytes) -> Initiate:
    """Open the cookie, the box and the vouch, as a server that kept no state since WELCOME would."""
    _expect(body, b"\x08INITIATE", "bad-initiate", len(body) >= MIN_INITIATE_SIZE)
    client_transient, server_transient_secret = open_cookie(body[9:105], cookie_key)
    nonce, client_public, vouch_nonce, vouch_box, metadata = open_initiate(body, client_transient, server_transient_secret)
    if open_vouch(vouch_box, vouch_nonce, client_public, server_transient_secret) != client_transient + server_public:
        raise CodecError("bad-vouch", "the vouch does not hold C' and S")
    return Initiate(body[9:105], nonce, client_public, vouch_nonce, metadata, client_transient, server_transient_secret)


def open_vouch(vouch_box: bytes, vouch_nonce: bytes, client_public: bytes, server_transient_secret: bytes) -> bytes:
    """What the vouch Box[C' + S](C->S') holds, opened with the client's long-term C and the server's s'."""
    return _open(vouch_box, b"VOUCH---" + vouch_nonce, client_public, server_transient_secret, "vouch")


def open_initiate(body: bytes, public: bytes, secret: bytes) -> tuple[int, bytes, bytes, bytes, Metadata]:
    """(short nonce, C, vouch nonce, vouch box, metadata) of an INITIATE's box, opened with one
    side's transient secret and the other side's transient public key (C' and s', or S' and c')."""
    _expect(body, b"\x08INITIATE", "bad-initiate", len(body) >= MIN_INITIATE_SIZE)
    short = body[105:113]
    plain = _open(body[113:], b"CurveZMQINITIATE" + short, public, secret, "INITIATE")
    return int.from_bytes(short, "big"), plain[:32], plain[32:48], plain[48:128], Metadata.decode(plain[128:])


# -- READY and MESSAGE ----------------------------------------------------------

def encode_ready(nonce: int, metadata: Metadata, key: bytes) -> bytes:
    short = _short(nonce)
    return command_body("READY", short + sodium.crypto_box_afternm(metadata.encode(), b"CurveZMQREADY---" + short, key))


def decode_ready(body: bytes, key: bytes) -> tuple[int, Metadata]:
    _expect(body, b"\x05READY", "bad-ready", len(body) >= MIN_READY_SIZE)
    plain = _open_shared(body[14:], b"CurveZMQREADY---" + body[6:14], key, "READY")
    return int.from_bytes(body[6:14], "big"), Metadata.decode(plain)


def encode_message(frame: Frame, nonce: int, prefix: bytes, key: bytes) -> bytes:
    short = _short(nonce)
    flags = (_MESSAGE_MORE if frame.more else 0) | (_MESSAGE_COMMAND if frame.command else 0)
    return b"\x07MESSAGE" + short + sodium.crypto_box_afternm(bytes([flags]) + frame.body, prefix + short, key)


def decode_message(body: bytes, prefix: bytes, key: bytes) -> tuple[int, Frame]:
    _expect(body, b"\x07MESSAGE", "bad-message", len(body) >= MIN_MESSAGE_SIZE)
    plain = _open_shared(body[16:], prefix + body[8:16], key, "MESSAGE")
    flags = plain[0]
    if flags & ~(_MESSAGE_MORE | _MESSAGE_COMMAND):
        raise CodecError("bad-message-flags", f"reserved MESSAGE flag bits in {flags:#04x}")
    if flags & _MESSAGE_MORE and flags & _MESSAGE_COMMAND:
        raise CodecError("bad-message-flags", "MORE set on a boxed command")
    frame = Frame(plain[1:], more=bool(flags & _MESSAGE_MORE), command=bool(flags & _MESSAGE_COMMAND))
    return int.from_bytes(body[8:16], "big"), frame


# -- the two state machines -----------------------------------------------------

class _CurveMechanism(Mechanism):
    name = "CURVE"
    frame_overhead = MESSAGE_OVERHEAD
    encrypted = True

    def __init__(self, as_server: bool, metadata: Metadata, first_nonce: int) -> None:
        super().__init__(as_server, metadata)
        self._nonce = first_nonce
        self._peer_nonce = -1
        self._key = b""
        self._out_prefix, self._in_prefix = (
            (SERVER_MESSAGE_PREFIX, CLIENT_MESSAGE_PREFIX) if as_server else (CLIENT_MESSAGE_PREFIX, SERVER_MESSAGE_PREFIX))

    def _next_nonce(self) -> int:
        nonce = self._nonce
        self._nonce += 1
        return nonce

    def _check_peer_nonce(self, nonce: int) -> None:
        if nonce <= self._peer_nonce:
            raise ProtocolViolation("bad-nonce", f"short nonce {nonce} after {self._peer_nonce}")
        self._peer_nonce = nonce

    def wrap(self, frame: Frame) -> Frame:
        # libzmq sends MESSAGE in a frame without the COMMAND flag and takes a
        # COMMAND-flagged one for a command to route, so we send as it does.
        return Frame(encode_message(frame, self._next_nonce(), self._out_prefix, self._key))

    def unwrap(self, frame: Frame) -> Frame:
        if frame.more:
            raise ProtocolViolation("bad-message", "MORE set on the frame carrying a MESSAGE")
        nonce, inner = decode_message(frame.body, self._in_prefix, self._key)
        self._check_peer_nonce(nonce)
        return inner


class CurveClient(_CurveMechanism):
    def __init__(self, metadata: Metadata, server_key: bytes, keypair: KeyPair, transient: KeyPair,
                 vouch_nonce: bytes, first_nonce: int) -> None:
        super().__init__(False, metadata, first_nonce)
        self._server_key = server_key
        self._keypair = keypair
        self._transient = transient
        self._vouch_nonce = vouch_nonce
        self._state = "expect-welcome"
        self.server_transient = b""  # S', from the WELCOME
        _announce("client", transient, server_key)

    def _vouched_key(self) -> bytes:
        return self._transient.public

    def start(self) -> list[bytes]:
        return [encode_hello(self._transient, self._server_key, self._next_nonce())]

    def receive(self, body: bytes) -> list[bytes]:
        name, _ = split_command(body)
        if self._state == "expect-welcome" and name == "WELCOME":
            welcome = decode_welcome(body, self._server_key, self._transient.secret)
            self.server_transient = welcome.server_transient
            self._key = shared_key(welcome.server_transient, self._transient.secret)
            self._state = "expect-ready"
            return [encode_initiate(welcome.cookie, self._next_nonce(), self._keypair, self._transient, self._server_key,
                                    welcome.server_transient, self._vouch_nonce, self.metadata, self._vouched_key())]
        if self._state == "expect-ready" and name == "READY":
            nonce, self.peer_metadata = decode_ready(body, self._key)
            self._check_peer_nonce(nonce)
            self.complete = True
            return []
        raise unexpected(name, self._state)


class CurveServer(_CurveMechanism):
    def __init__(self, metadata: Metadata, keypair: KeyPair, authorize: Callable[[bytes], bool] | None,
                 transient: KeyPair, cookie_key: bytes, welcome_nonce: bytes, cookie_nonce: bytes,
                 first_nonce: int) -> None:
        super().__init__(True, metadata, first_nonce)
        self._keypair = keypair
        self._authorize = authorize
        self._transient = transient
        self._cookie_key = cookie_key
        self._welcome_nonce = welcome_nonce
        self._cookie_nonce = cookie_nonce
        self._client_transient = b""
        self._state = "expect-hello"
        _announce("server", transient, keypair.public)

    def receive(self, body: bytes) -> list[bytes]:
        name, _ = split_command(body)
        if self._state == "expect-hello" and name == "HELLO":
            hello = decode_hello(body, self._keypair.secret)
            self._check_peer_nonce(hello.nonce)
            self._client_transient = hello.client_transient
            cookie = make_cookie(self._cookie_key, self._cookie_nonce, hello.client_transient, self._transient.secret)
            self._state = "expect-initiate"
            return [encode_welcome(self._keypair.secret, hello.client_transient, self._welcome_nonce,
                                   self._transient.public, cookie)]
        if self._state == "expect-initiate" and name == "INITIATE":
            initiate = decode_initiate(body, self._cookie_key, self._keypair.public)
            # RFC 26: forget the cookie key once a valid INITIATE arrived.
            self._cookie_key = b""
            if initiate.client_transient != self._client_transient:
                raise CodecError("bad-cookie", "the cookie names another client transient key")
            # as libzmq does: the cookie must hold this connection's s', or a cookie key that lives
            # longer than one connection (RFC 26 allows a minute) lets a recorded handshake replay
            if not hmac.compare_digest(initiate.server_transient_secret, self._transient.secret):
                raise CodecError("bad-cookie", "the cookie names another server transient key")
            self._check_peer_nonce(initiate.nonce)
            if self._authorize is not None and not self._authorize(initiate.client_public):
                raise HandshakeError("unauthorized", f"client key {initiate.client_public.hex()}",
                                     error_reason=UNAUTHORIZED_REASON)
            self.peer_user = initiate.client_public
            self.peer_metadata = initiate.metadata
            self._key = shared_key(self._client_transient, self._transient.secret)
            self.complete = True
            return [encode_ready(self._next_nonce(), self.metadata, self._key)]
        raise unexpected(name, self._state)


@dataclass(frozen=True)
class CurveClientConfig:
    server_key: bytes
    keypair: KeyPair
    transient: KeyPair | None = None
    vouch_nonce: bytes | None = None
    first_nonce: int = 1
    name: ClassVar[str] = "CURVE"
    as_server: ClassVar[bool] = False
    client_class: ClassVar[type[CurveClient]] = CurveClient  # a test's variant of the client

    def create(self, metadata: Metadata) -> CurveClient:
        return self.client_class(metadata, self.server_key, self.keypair, self.transient or KeyPair.generate(),
                           self.vouch_nonce or os.urandom(16), self.first_nonce)


@dataclass(frozen=True)
class CurveServerConfig:
    """``authorize(client_public_key)``; None accepts every client key, as libzmq does without a ZAP handler."""

    keypair: KeyPair
    authorize: Callable[[bytes], bool] | None = None
    transient: KeyPair | None = None
    cookie_key: bytes | None = None
    welcome_nonce: bytes | None = None
    cookie_nonce: bytes | None = None
    first_nonce: int = 1
    name: ClassVar[str] = "CURVE"
    as_server: ClassVar[bool] = True
    server_class: ClassVar[type[CurveServer]] = CurveServer  # a test's variant of the server

    def create(self, metadata: Metadata) -> CurveServer:
        return self.server_class(metadata, self.keypair, self.authorize, self.transient or KeyPair.generate(),
                           self.cookie_key or os.urandom(32), self.welcome_nonce or os.urandom(16),
                           self.cookie_nonce or os.urandom(16), self.first_nonce)
