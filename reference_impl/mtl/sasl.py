"""SASL for Connection.Authorize: PLAIN (RFC 4616) and SCRAM-SHA-256 (RFC 7677, RFC 5802).

``response`` and ``challenge`` travel base64-encoded in the JSON bodies.

The MTL reply that ends a SASL exchange is ``201 Ready``, which carries no
SASL data; RFC 4422 section 4 (item 7) says what a protocol without
"additional data with success" does with SCRAM's server-final message: the
server sends it as one more challenge and the client answers with an empty
response.  So SCRAM-SHA-256 runs:

    C: Authorize {mechanism, response: client-first}   S: 402 {challenge: server-first}
    C: Authorize {mechanism, response: client-final}   S: 402 {challenge: server-final "v=..."}
    C: Authorize {mechanism, response: ""}             S: 201 Ready

and a wrong proof ends with 401.  PLAIN finishes in one step (201 or 401).

:class:`SaslServer` is one exchange on the server side; :func:`plain_response`
and :class:`ScramClientExchange` build the client side (a fixed client nonce
makes the client messages reproducible for scenarios and vectors).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass

from scramp import ScramClient, ScramException, ScramMechanism

from reference_impl.common.errors import CodecError

PLAIN = "PLAIN"
SCRAM_SHA_256 = "SCRAM-SHA-256"
MECHANISMS = (PLAIN, SCRAM_SHA_256)
SCRAM_ITERATIONS = 4096


def b64encode(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def b64decode(text: str) -> bytes:
    """Strict base64 (RFC 4648 alphabet and padding)."""
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise CodecError("bad-base64", "the response is not base64") from None


def canonical_mechanism(name: str, offered: tuple[str, ...] = MECHANISMS) -> str | None:
    """SASL mechanism names compare case-insensitively here (RFC 4422 names are upper case)."""
    for mechanism in offered:
        if mechanism.upper() == name.upper():
            return mechanism
    return None


# -- PLAIN ------------------------------------------------------------------------

def plain_response(user: str, password: str, authzid: str = "") -> bytes:
    return f"{authzid}\0{user}\0{password}".encode("utf-8")


def decode_plain(message: bytes) -> tuple[str, str, str]:
    """(authzid, authcid, password) from a PLAIN message (RFC 4616 section 2)."""
    parts = message.split(b"\0")
    if len(parts) != 3 or not parts[1]:
        raise CodecError("bad-plain", "PLAIN is [authzid] NUL authcid NUL passwd")
    try:
        authzid, authcid, password = (p.decode("utf-8") for p in parts)
    except UnicodeDecodeError:
        raise CodecError("bad-plain", "PLAIN fields are UTF-8") from None
    return authzid, authcid, password


# -- the server side --------------------------------------------------------------

@dataclass(frozen=True)
class Step:
    """The outcome of one Authorize: ``done`` (201 if ``user`` else 401), or a ``challenge`` (402)."""

    done: bool
    user: str | None = None
    challenge: bytes | None = None


class Credentials:
    """Users and passwords, with the SCRAM verifiers derived once."""

    def __init__(self, users: Mapping[str, str], iterations: int = SCRAM_ITERATIONS) -> None:
        self.users = dict(users)
        self._scram = ScramMechanism(SCRAM_SHA_256)
        self._verifiers = {u: self._scram.make_auth_info(p, iteration_count=iterations) for u, p in self.users.items()}

    def check_plain(self, user: str, password: str) -> bool:
        return self.users.get(user) == password

    def scram_server(self, seen: list[str]):
        """A scramp server; ``seen`` receives the user name the client gave."""
        def lookup(user: str):
            seen.append(user)
            return self._verifiers[user]  # KeyError: scramp fails the exchange
        return self._scram.make_server(lookup)


class SaslServer:
    """One SASL exchange on the server side, fed the decoded responses."""

    def __init__(self, mechanism: str, credentials: Credentials) -> None:
        self.mechanism = mechanism
        self.credentials = credentials
        self._stage = "first"
        self._users: list[str] = []
        self._scram = credentials.scram_server(self._users) if mechanism == SCRAM_SHA_256 else None

    def step(self, response: bytes) -> Step:
        if self.mechanism == PLAIN:
            try:
                authzid, user, password = decode_plain(response)
            except CodecError:
                return Step(True)
            if authzid not in ("", user) or not self.credentials.check_plain(user, password):
                return Step(True)
            return Step(True, user)
        return self._scram_step(response)

    def _scram_step(self, response: bytes) -> Step:
        assert self._scram is not None
        try:
            text = response.decode("utf-8")
            if self._stage == "first":
                self._scram.set_client_first(text)
                self._stage = "final"
                return Step(False, challenge=self._scram.get_server_first().encode("utf-8"))
            if self._stage == "final":
                self._scram.set_client_final(text)
                self._stage = "ack"
                return Step(False, challenge=self._scram.get_server_final().encode("utf-8"))
            if self._stage == "ack" and not response:
                self._stage = "done"
                return Step(True, self._users[-1])
        except (ScramException, UnicodeDecodeError, KeyError):
            pass
        self._stage = "done"
        return Step(True)


# -- the client side --------------------------------------------------------------

class ScramClientExchange:
    """A SCRAM-SHA-256 client; ``nonce`` fixes the client nonce (scenarios, vectors)."""

    def __init__(self, user: str, password: str, nonce: str | None = None) -> None:
        self._client = ScramClient([SCRAM_SHA_256], user, password, c_nonce=nonce)

    def client_first(self) -> bytes:
        return self._client.get_client_first().encode("utf-8")

    def client_final(self, server_first: bytes) -> bytes:
        self._client.set_server_first(server_first.decode("utf-8"))
        return self._client.get_client_final().encode("utf-8")

    def verify_server_final(self, server_final: bytes) -> bool:
        try:
            self._client.set_server_final(server_final.decode("utf-8"))
        except (ScramException, UnicodeDecodeError):
            return False
        return True


def scram_client_final(user: str, password: str, nonce: str, server_first: bytes) -> bytes:
    """The client-final message for a fixed client nonce: a pure function of its inputs."""
    exchange = ScramClientExchange(user, password, nonce)
    exchange.client_first()
    return exchange.client_final(server_first)


def scram_server_final_ok(user: str, password: str, nonce: str, server_first: bytes, server_final: bytes) -> bool:
    """Whether ``server_final`` proves the server knows ``password`` (RFC 5802 ServerSignature)."""
    exchange = ScramClientExchange(user, password, nonce)
    exchange.client_first()
    try:
        exchange.client_final(server_first)
    except (ScramException, UnicodeDecodeError):
        return False
    return exchange.verify_server_final(server_final)
