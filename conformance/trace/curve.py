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

The vouch inside INITIATE is Box[C' + S](C->S'): it opens with the server's s' (logged by a
broker in the capturing process, found by the S' the WELCOME or the INITIATE proved) and the
client's long-term C the INITIATE carries.  A READY after a vouch that does not open, or does not
hold this connection's C' and the server's S, is the server's (RFC 26: the server checks the vouch
before READY; the profile FAILs a broker that completes a handshake with a forged vouch).  Without
s' in the log the vouch is not checked, and ``unchecked_vouch`` says why (a note, never a finding).

``replayed`` tells whether the last MESSAGE opened carried a short nonce not above an earlier
MESSAGE's of the same sender on this connection: a replayed box (the rules judge a broker that
answers the request it carried).
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
        self.message_nonce = {"client": -1, "server": -1}  # the highest short nonce of each side's MESSAGEs
        self.replayed = False  # the last MESSAGE's nonce was not above an earlier MESSAGE's of its side
        self.forged_vouch: str | None = None  # what is wrong with the INITIATE's vouch, once opened
        self.unchecked_vouch: str | None = None  # why the vouch was not checked (a READY followed)
        self._vouch: str | None = None  # why the vouch cannot be checked, until READY

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
                opened = curve.open_initiate(body, self.server_transient, self.session.secret)
            except CodecError as exc:
                self.lost["client"] = "its INITIATE did not open"
                return [("client", f"INITIATE: {exc} under C' and the S' of the WELCOME")]
            return self._check_vouch(opened, self.keys.servers.get(self.server_transient)) + \
                self._nonce("client", opened[0])
        if not self.client_transient:
            return []
        for key in self.keys.servers.values():  # S' is boxed in WELCOME: the server key is the one that opens INITIATE
            try:
                opened = curve.open_initiate(body, self.client_transient, key.secret)
            except CodecError:
                continue
            self.session, self.key = key, curve.shared_key(self.client_transient, key.secret)
            return self._check_vouch(opened, key) + self._nonce("client", opened[0])
        return []

    def _check_vouch(self, opened, server_key: SessionKey | None) -> list[tuple[str, str]]:
        """Open the vouch Box[C' + S](C->S') of an opened INITIATE with s' (``server_key``, the
        key log's key of this connection's S') and the C the INITIATE carries; a forged one is the
        client's (and a READY after it the server's)."""
        _, client_public, vouch_nonce, vouch_box, _ = opened
        if server_key is None:
            self._vouch = ("it opens only with the server's short-term secret s' (or the client's long-term "
                           "secret), and the key log holds no s' for this connection's S'")
            return []
        if self.session is not None and self.session.role == "client" and self.session.server != server_key.server:
            self._vouch = "the key log names two server long-term keys S for this connection"
            return []
        expected = self.client_transient + server_key.server
        try:
            vouch = curve.open_vouch(vouch_box, vouch_nonce, client_public, server_key.secret)
        except CodecError:
            self.forged_vouch = (f"the vouch does not open under the client key C={client_public.hex()[:16]}... "
                                 f"the INITIATE carries and the server's s'")
        else:
            if vouch != expected:
                held = "C'" if vouch[:32] == self.client_transient else f"{vouch[:32].hex()[:16]}... for C'"
                held += " and S" if vouch[32:] == server_key.server else f" and {vouch[32:].hex()[:16]}... for S"
                self.forged_vouch = (f"the vouch holds {held}, not this connection's "
                                     f"C'={self.client_transient.hex()[:16]}... and the server's "
                                     f"S={server_key.server.hex()[:16]}...")
        return [] if self.forged_vouch is None else [("client", f"INITIATE: {self.forged_vouch}")]

    def ready(self, body: bytes) -> list[tuple[str, str]]:
        out = []
        if self.forged_vouch is not None:
            out.append(("server", f"READY after an INITIATE whose vouch is not the client's: {self.forged_vouch} "
                                  f"(RFC 26: the server checks the vouch before READY)"))
        elif self._vouch is not None:
            self.unchecked_vouch = self._vouch
        if self.key is None or "server" in self.lost:
            return out
        try:
            nonce, _ = curve.decode_ready(body, self.key)
        except CodecError as exc:
            self.lost["server"] = "its READY did not open"
            return out + [("server", f"READY: {exc} under the session's key")]
        return out + self._nonce("server", nonce)

    def message(self, side: str, body: bytes) -> tuple[Frame | None, list[tuple[str, str]]]:
        """The frame a MESSAGE carries (None when it cannot be opened), and what was wrong."""
        self.replayed = False
        if self.key is None or side in self.lost:
            return None, []
        try:
            nonce, frame = curve.decode_message(body, PREFIX[side], self.key)
        except CodecError as exc:
            if exc.code != "bad-message-flags":
                self.lost[side] = f"a MESSAGE did not open ({exc.code})"
                return None, [(side, f"MESSAGE: {exc}")]
            # it opened: its nonce counts as any other's
            nonce = int.from_bytes(body[8:16], "big")
            self._message_nonce(side, nonce)
            return None, [(side, f"MESSAGE: {exc}"), *self._nonce(side, nonce)]
        self._message_nonce(side, nonce)
        return frame, self._nonce(side, nonce)

    def _message_nonce(self, side: str, nonce: int) -> None:
        # a MESSAGE nonce not above an earlier MESSAGE's of the same sender: the box may be one sent
        # before (RFC 26: a recipient refuses it; libzmq closes the connection, CVE-2014-7202)
        self.replayed = nonce <= self.message_nonce[side]
        self.message_nonce[side] = max(self.message_nonce[side], nonce)

    def _nonce(self, side: str, nonce: int) -> list[tuple[str, str]]:
        # RFC 26: each short nonce is one more than the last (libzmq and the reference accept gaps,
        # not a repeat or a step back, which would let a box be replayed)
        last, self.nonce[side] = self.nonce[side], max(self.nonce[side], nonce)
        if nonce <= last:
            return [(side, f"short nonce {nonce} after {last}: a {side}'s nonces must increase")]
        return []
