"""One connection's CURVE session (RFC 26) opened from outside with a session key of the key log.

With the client's c' (matched by the C' its HELLO carries in clear) every box opens: WELCOME is
Box[S' + cookie](S->C'), which also needs S (logged with the key); then INITIATE (C'->S'), READY
and each MESSAGE under the key C' and S' share.  With the server's s' (matched by the INITIATE
box it opens with the HELLO's C') INITIATE, READY and each MESSAGE open; WELCOME does not (it
needs c' or the server's long-term secret).  The boxes are opened by reference_impl.zmtp.curve,
as the two ends open them.

Each step returns what it found wrong as (side, message) for requirement mc0-curve; a box that
does not open under the session's key is one (the spec boxes it to that key), after which that
side's boxes are not opened any more.
"""

from __future__ import annotations

from reference_impl.common.errors import CodecError
from reference_impl.zmtp import curve
from reference_impl.zmtp.codec import Frame

from conformance.trace.keylog import KeyLog, SessionKey

PREFIX = {"client": curve.CLIENT_MESSAGE_PREFIX, "server": curve.SERVER_MESSAGE_PREFIX}


class CurveSession:
    def __init__(self, keys: KeyLog) -> None:
        self.keys = keys
        self.client_transient = b""  # C', from HELLO
        self.server_transient = b""  # S', from WELCOME opened with the client's key
        self.session: SessionKey | None = None  # the key log's key this connection was opened with
        self.key: bytes | None = None  # the precomputed key of C' and S', once known
        self.lost: dict[str, str] = {}  # side -> why its boxes are not opened any more
        self.nonce = {"client": -1, "server": -1}

    def hello(self, body: bytes) -> list[tuple[str, str]]:
        if len(body) != curve.HELLO_SIZE:
            return []  # the handshake order rules already judge a HELLO; nothing to match
        self.client_transient = body[80:112]
        self.session = self.keys.clients.get(self.client_transient)
        if self.session is None:
            return []
        try:
            hello = curve.decode_hello(body, self.session.secret, self.session.server)
        except CodecError as exc:
            return [("client", f"HELLO: {exc}, under the server key S={self.session.server.hex()[:16]}... the key "
                               f"log names for this C'")]
        return self._nonce("client", hello.nonce)

    def welcome(self, body: bytes) -> list[tuple[str, str]]:
        if self.session is None:
            return []
        try:
            welcome = curve.decode_welcome(body, self.session.server, self.session.secret)
        except CodecError as exc:
            self.lost["server"] = self.lost["client"] = "the WELCOME did not open"
            return [("server", f"WELCOME: {exc} under the server key S={self.session.server.hex()[:16]}... the "
                               f"client's HELLO was boxed for: the broker answered a HELLO not boxed for its key, "
                               f"or boxed its WELCOME wrongly")]
        self.key = curve.shared_key(welcome.server_transient, self.session.secret)
        self.server_transient = welcome.server_transient
        return []

    def initiate(self, body: bytes) -> list[tuple[str, str]]:
        if self.session is not None:
            if self.key is None:
                return []
            try:
                nonce = curve.open_initiate(body, self.server_transient, self.session.secret)[0]
            except CodecError as exc:
                self.lost["client"] = "its INITIATE did not open"
                return [("client", f"INITIATE: {exc} under C' and the S' of the WELCOME")]
            return self._nonce("client", nonce)
        if not self.client_transient:
            return []
        for key in self.keys.servers.values():  # S' is boxed in WELCOME: the server key is the one that opens INITIATE
            try:
                nonce = curve.open_initiate(body, self.client_transient, key.secret)[0]
            except CodecError:
                continue
            self.session, self.key = key, curve.shared_key(self.client_transient, key.secret)
            return self._nonce("client", nonce)
        return []

    def ready(self, body: bytes) -> list[tuple[str, str]]:
        if self.key is None or "server" in self.lost:
            return []
        try:
            nonce, _ = curve.decode_ready(body, self.key)
        except CodecError as exc:
            self.lost["server"] = "its READY did not open"
            return [("server", f"READY: {exc} under the session's key")]
        return self._nonce("server", nonce)

    def message(self, side: str, body: bytes) -> tuple[Frame | None, list[tuple[str, str]]]:
        """The frame a MESSAGE carries (None when it cannot be opened), and what was wrong."""
        if self.key is None or side in self.lost:
            return None, []
        try:
            nonce, frame = curve.decode_message(body, PREFIX[side], self.key)
        except CodecError as exc:
            if exc.code != "bad-message-flags":
                self.lost[side] = f"a MESSAGE did not open ({exc.code})"
                return None, [(side, f"MESSAGE: {exc}")]
            # it opened: its nonce counts as any other's
            return None, [(side, f"MESSAGE: {exc}"), *self._nonce(side, int.from_bytes(body[8:16], "big"))]
        return frame, self._nonce(side, nonce)

    def _nonce(self, side: str, nonce: int) -> list[tuple[str, str]]:
        # RFC 26: each short nonce is one more than the last (libzmq and the reference accept gaps,
        # not a repeat or a step back, which would let a box be replayed)
        last, self.nonce[side] = self.nonce[side], max(self.nonce[side], nonce)
        if nonce <= last:
            return [(side, f"short nonce {nonce} after {last}: a {side}'s nonces must increase")]
        return []
