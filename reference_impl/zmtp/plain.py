"""The PLAIN mechanism (RFC 24): a clear-text username and password.

    C: HELLO username password      S: WELCOME  (or ERROR)
    C: INITIATE metadata            S: READY metadata

RFC 24 says command bodies start with "an 8-character command name, padded
with spaces"; that sentence is left over from an older draft.  Its own
grammar, RFC 23 and libzmq use the length-prefixed name (``05 HELLO``),
and so does this module.

libzmq 4.3.5 spells the ERROR it sends after a refused login as the octets
5e "RROR" (vector plain.json tcId 7) and looks for that same spelling when
it is the client, so a libzmq PLAIN client takes our well-formed ERROR for
an unexpected command.  Either way the login fails and the connection
closes; this module keeps to the RFC.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from reference_impl.common.errors import CodecError
from reference_impl.zmtp.commands import Metadata, command_body, split_command
from reference_impl.zmtp.mechanism import HandshakeError, Mechanism, unexpected

#: The ERROR reason sent when credentials are refused: the ZAP status code libzmq sends.
AUTH_FAILED_REASON = b"400"


def encode_hello(username: bytes, password: bytes) -> bytes:
    if len(username) > 255 or len(password) > 255:
        raise CodecError("bad-hello", "username and password are at most 255 octets each")
    return command_body("HELLO", bytes([len(username)]) + username + bytes([len(password)]) + password)


def decode_hello(data: bytes) -> tuple[bytes, bytes]:
    """(username, password) from HELLO command data (after the name)."""
    if not data or len(data) < 1 + data[0] + 1:
        raise CodecError("bad-hello", "HELLO too short for its username")
    user_end = 1 + data[0]
    username = data[1:user_end]
    password_end = user_end + 1 + data[user_end]
    if len(data) != password_end:
        # libzmq refuses extraneous octets too ("sent extraneous data").
        raise CodecError("bad-hello", f"HELLO is {len(data)} octets, its fields make {password_end}")
    return username, data[user_end + 1:password_end]


WELCOME = command_body("WELCOME")


def encode_initiate(metadata: Metadata) -> bytes:
    return command_body("INITIATE", metadata.encode())


class PlainClient(Mechanism):
    name = "PLAIN"

    def __init__(self, metadata: Metadata, username: bytes, password: bytes) -> None:
        super().__init__(False, metadata)
        self._hello = encode_hello(username, password)
        self._state = "expect-welcome"

    def start(self) -> list[bytes]:
        return [self._hello]

    def receive(self, body: bytes) -> list[bytes]:
        name, data = split_command(body)
        if self._state == "expect-welcome" and name == "WELCOME":
            if data:
                raise CodecError("bad-welcome", f"WELCOME carries {len(data)} unexpected octets")
            self._state = "expect-ready"
            return [encode_initiate(self.metadata)]
        if self._state == "expect-ready" and name == "READY":
            self.peer_metadata = Metadata.decode(data)
            self.complete = True
            return []
        raise unexpected(name, self._state)


class PlainServer(Mechanism):
    name = "PLAIN"

    def __init__(self, metadata: Metadata, authenticate: Callable[[bytes, bytes], bool] | None) -> None:
        super().__init__(True, metadata)
        self._authenticate = authenticate
        self._state = "expect-hello"

    def receive(self, body: bytes) -> list[bytes]:
        name, data = split_command(body)
        if self._state == "expect-hello" and name == "HELLO":
            username, password = decode_hello(data)
            if self._authenticate is not None and not self._authenticate(username, password):
                raise HandshakeError("authentication-failed", f"user {username!r}", error_reason=AUTH_FAILED_REASON)
            self.peer_user = username
            self._state = "expect-initiate"
            return [WELCOME]
        if self._state == "expect-initiate" and name == "INITIATE":
            self.peer_metadata = Metadata.decode(data)
            self.complete = True
            return [command_body("READY", self.metadata.encode())]
        raise unexpected(name, self._state)


@dataclass(frozen=True)
class PlainClientConfig:
    username: bytes
    password: bytes
    name: ClassVar[str] = "PLAIN"
    as_server: ClassVar[bool] = False

    def create(self, metadata: Metadata) -> PlainClient:
        return PlainClient(metadata, self.username, self.password)


@dataclass(frozen=True)
class PlainServerConfig:
    """``authenticate(username, password)``; None accepts everyone, as libzmq does without a ZAP handler."""

    authenticate: Callable[[bytes, bytes], bool] | None = None
    name: ClassVar[str] = "PLAIN"
    as_server: ClassVar[bool] = True

    def create(self, metadata: Metadata) -> PlainServer:
        return PlainServer(metadata, self.authenticate)
