"""mc0 brokers with one switchable bug each, for proving the suite can fail.

Each is the reference broker (server + sans-IO broker) with one rule turned
off, so its bug-free twin (``bug=None``) is the reference itself and every
failure comes from the bug alone.
"""

from __future__ import annotations

import hmac

from nacl import bindings as sodium

from reference_impl.common.errors import CodecError
from reference_impl.mc0 import codec, testkeys
from reference_impl.mc0.broker import KNOWN_HEADERS, Broker, Refused, Send, check_request
from reference_impl.mc0.server import Mc0Server
from reference_impl.zmtp.commands import split_command
from reference_impl.zmtp.curve import (
    HELLO_SIZE, CurveServer, CurveServerConfig, KeyPair, encode_ready, open_cookie, open_initiate, shared_key,
)

BUGS = {
    "accepts-null",             # serves NULL clients although CURVE is required (the test configuration)
    "unchecked-hello",          # answers WELCOME to a HELLO whose box it never opened (boxed for another key)
    "odd-headers-crash",        # an odd header count brings the whole broker down (the orig C++ broker)
    "odd-headers-stop-serving",  # answers ERROR to an odd header count, then serves nobody
    "ok-after-error",           # an unknown verb with ID gets ERROR and then OK too
    "prefix-match",             # a subscription to t also receives PUTs to t.x (ZeroMQ SUB semantics)
    "fan-out-to-one",           # a PUT reaches one subscriber of its topic, not all of them
    "drops-x-headers",          # MESSAGE leaves out the PUT's X- headers
    "no-ttl-expiry",            # never finds a silent client absent
    "no-noop",                  # never NOOPs a quiet client (a SHOULD)
    "noop-not-heard",           # a client's NOOP does not count as hearing from it (absent despite heartbeats)
    # hunt-zmtp additions
    "empty-topic-wildcard",     # SUB to the empty topic receives every PUT (ZeroMQ's empty SUB prefix)
    "only-noop-heard",          # only NOOP and CONNECT count as hearing from a client; SUB/PUT/UNSUB do not
    "accepts-version-0.1",      # CONNECT VERSION 0.1 (the draft's own example) is accepted
    "unchecked-vouch",          # CURVE: INITIATE's vouch box is never opened, so any vouch passes
    "no-nonce-check",           # CURVE: a client MESSAGE whose short nonce does not increase (a replay) is accepted
    "fixed-server-transient",   # CURVE: one server short-term key pair S' for every connection
    # hunt-mc0 additions
    "unsub-removes-topic-for-all",  # one client's UNSUB t drops t for every subscriber
    "close-drops-topic-for-all",    # a subscriber's connection closing drops its topics for every subscriber
    "absence-drops-topic-for-all",  # a subscriber found absent drops its topics for every subscriber
    "unsub-first-only",         # UNSUB '' t1 t2 unsubscribes t1 only
    "unsub-refcount",           # SUB t twice needs two UNSUBs (ZeroMQ's SUB socket counting; a SHOULD)
    "empty-body-no-separator",  # PUT TOPIC t '' (no body) is delivered as MESSAGE TOPIC t, the separator left out
    "error-id-text-reencoded",  # an ERROR's ID is decoded and re-encoded as UTF-8 (OK's is untouched)
    "empty-id-ignored",         # ID '' is taken for no ID: no OK, no ERROR
    "refused-no-id-silent",     # a refused request without ID gets nothing back (a SHOULD; unknown verbs still ERROR)
    "noop-once",                # one NOOP per quiet spell at most, never again after the client answers (a SHOULD)
    "error-description-key",    # ERROR names its text DESCRIPTION instead of MESSAGE
}


class BuggyBroker(Broker):
    def __init__(self, bug: str | None) -> None:
        super().__init__()
        self.bug = bug
        self.server: BuggyServer | None = None
        self.deaf = False
        self.dropping: str | None = None  # why topics are being dropped: unsub, close or absence
        self.ticking = False
        self.counts: dict = {}  # unsub-refcount: (peer, topic) -> SUBs not yet undone

    def receive(self, peer, frames, now) -> list[Send]:
        if self.deaf:
            return []
        odd = _odd_headers(frames)
        if odd and self.bug == "odd-headers-crash":
            assert self.server is not None
            self.server.crash()
            return []
        heard = self.peers[peer].last_heard if peer in self.peers else now
        msg = _decoded(frames)
        if self.bug == "refused-no-id-silent" and msg is not None and msg.id is None:
            try:
                check_request(msg)
            except Refused as refused:
                if refused.code != "unknown-verb":
                    if peer in self.peers:
                        self.peers[peer].last_heard = now
                    return []
        if self.bug == "empty-id-ignored" and msg is not None and msg.id == b"":
            sends = super().receive(peer, frames, now)
            return [x for x in sends if not (x.peer == peer and x.frames[1:3] in ([codec.OK, codec.ID],
                                                                                  [codec.ERROR, codec.ID]))]
        if self.bug == "accepts-version-0.1" and msg is not None and msg.verb == codec.CONNECT \
                and msg.header(codec.VERSION) == b"0.1":
            frames = codec.encode_message(codec.Mc0Message(
                msg.verb, tuple((k, b"0.3" if k == codec.VERSION else v) for k, v in msg.headers), msg.positional))
        sends = super().receive(peer, frames, now)
        if self.bug == "only-noop-heard" and frames[1:2] not in ([codec.NOOP], [codec.CONNECT]) \
                and peer in self.peers:
            self.peers[peer].last_heard = heard
        # frames[0] is the empty delimiter, frames[1] the verb (as ok-after-error reads it below)
        if self.bug == "noop-not-heard" and frames[1:2] == [codec.NOOP] and peer in self.peers:
            self.peers[peer].last_heard = heard
        if odd and self.bug == "odd-headers-stop-serving":
            self.deaf = True
        if self.bug == "ok-after-error" and len(frames) > 1 and frames[1] not in KNOWN_HEADERS:
            request_id = codec.salvage_id(frames)
            if request_id is not None:
                sends.append(Send(peer, codec.encode_message(codec.ok(request_id))))
        if self.bug == "drops-x-headers":
            sends = [Send(s.peer, _without_x(s.frames)) for s in sends]
        return sends

    def _serve(self, peer, state, msg) -> list[Send]:
        if msg.verb == codec.UNSUB and self.bug == "unsub-first-only":
            msg = codec.Mc0Message(msg.verb, msg.headers, msg.positional[:1])
        if msg.verb in (codec.SUB, codec.UNSUB) and self.bug == "unsub-refcount":
            keep = []
            for topic in msg.positional or ():
                key = (peer, topic)
                if msg.verb == codec.SUB:
                    self.counts[key] = self.counts.get(key, 0) + 1
                elif self.counts.get(key, 0) > 1:
                    self.counts[key] -= 1
                    continue  # still subscribed: one UNSUB per SUB
                else:
                    self.counts.pop(key, None)
                keep.append(topic)
            msg = codec.Mc0Message(msg.verb, msg.headers, tuple(keep))
        self.dropping = "unsub" if msg.verb == codec.UNSUB else None
        try:
            sends = super()._serve(peer, state, msg)
        finally:
            self.dropping = None
        if msg.verb == codec.PUT and self.bug == "empty-body-no-separator" and msg.positional == ():
            sends = [Send(s.peer, s.frames[:-1] if s.frames[-1] == b"" else s.frames) for s in sends]
        return sends

    def _unsubscribe(self, peer, topic: bytes) -> None:
        if (self.bug, self.dropping) in (("unsub-removes-topic-for-all", "unsub"), ("close-drops-topic-for-all", "close"),
                                         ("absence-drops-topic-for-all", "absence")):
            self.subscribers.pop(topic, None)
            return
        super()._unsubscribe(peer, topic)

    def detach(self, peer) -> None:
        self.dropping = "close"
        try:
            super().detach(peer)
        finally:
            self.dropping = None

    def _forget(self, peer, state) -> None:
        # DISCONNECT reaches here through _serve (dropping None); only a tick's absence is marked
        self.dropping = "absence" if self.dropping is None and self.ticking else self.dropping
        try:
            super()._forget(peer, state)
        finally:
            self.dropping = None

    def _error(self, peer, description: str, request_id: bytes | None) -> Send:
        if self.bug == "error-id-text-reencoded" and request_id is not None:
            request_id = request_id.decode("utf-8", "replace").encode("utf-8")
        send = super()._error(peer, description, request_id)
        if self.bug == "error-description-key":
            send = Send(send.peer, [b"DESCRIPTION" if f == codec.DESCRIPTION and i % 2 == 0 else f
                                    for i, f in enumerate(send.frames)])
        return send

    def matching(self, topic: bytes) -> set:
        if self.bug == "empty-topic-wildcard":
            return super().matching(topic) | set(self.subscribers.get(b"", ()))
        if self.bug == "fan-out-to-one":
            return set(list(super().matching(topic))[:1])
        if self.bug != "prefix-match":
            return super().matching(topic)
        return {peer for t, peers in self.subscribers.items() if topic.startswith(t) for peer in peers}

    def tick(self, now: float) -> list[Send]:
        if self.bug == "no-ttl-expiry":
            for state in self.peers.values():
                state.last_heard = max(state.last_heard, now - (state.ttl or 0) / 2)
        self.ticking = True
        try:
            sends = super().tick(now)
        finally:
            self.ticking = False
        return [] if self.bug == "no-noop" else sends

    def _next_noop(self, state) -> float:  # type: ignore[override]  # the reference's is a staticmethod
        if self.bug == "noop-once" and state.last_noop is not None:
            return float("inf")
        return Broker._next_noop(state)


def _decoded(frames: list[bytes]):
    try:
        return codec.decode_message(frames)
    except CodecError:
        return None


def _odd_headers(frames: list[bytes]) -> bool:
    try:
        codec.decode_message(frames)
    except CodecError as exc:
        return exc.code == "odd-headers"
    return False


def _without_x(frames: list[bytes]) -> list[bytes]:
    msg = codec.decode_message(frames)
    if msg.verb != codec.MESSAGE:
        return frames
    kept = tuple((k, v) for k, v in msg.headers if not codec.is_extension(k))
    return codec.encode_message(codec.Mc0Message(msg.verb, kept, msg.positional))


class _UncheckedHelloServer(CurveServer):
    def receive(self, body: bytes) -> list[bytes]:
        name, _ = split_command(body)
        if name == "HELLO" and len(body) == HELLO_SIZE:
            # The bug: the client's signature box is swapped for one this broker seals itself
            # (C' is in clear and the box key is symmetric), so the check after it always holds.
            transient, short = body[80:112], body[112:120]
            signature = sodium.crypto_box(bytes(64), b"CurveZMQHELLO---" + short, transient, self._keypair.secret)
            body = body[:120] + signature
        return super().receive(body)


class _UncheckedHelloConfig(CurveServerConfig):
    server_class = _UncheckedHelloServer


class _UncheckedVouchServer(CurveServer):
    def receive(self, body: bytes) -> list[bytes]:
        name, _ = split_command(body)
        if self._state != "expect-initiate" or name != "INITIATE":
            return super().receive(body)
        # the reference's INITIATE branch, with decode_initiate's vouch check left out (the bug)
        client_transient, server_transient_secret = open_cookie(body[9:105], self._cookie_key)
        nonce, client_public, _vouch_nonce, _vouch_box, metadata = open_initiate(
            body, client_transient, server_transient_secret)
        self._cookie_key = b""
        if client_transient != self._client_transient:
            raise CodecError("bad-cookie", "the cookie names another client transient key")
        if not hmac.compare_digest(server_transient_secret, self._transient.secret):
            raise CodecError("bad-cookie", "the cookie names another server transient key")
        self._check_peer_nonce(nonce)
        self.peer_user = client_public
        self.peer_metadata = metadata
        self._key = shared_key(self._client_transient, self._transient.secret)
        self.complete = True
        return [encode_ready(self._next_nonce(), self.metadata, self._key)]


class _NoNonceCheckServer(CurveServer):
    def _check_peer_nonce(self, nonce: int) -> None:
        if self.complete:
            return  # the bug: after the handshake a MESSAGE's nonce is never compared with the last one
        super()._check_peer_nonce(nonce)


class _UncheckedVouchConfig(CurveServerConfig):
    server_class = _UncheckedVouchServer


class _NoNonceCheckConfig(CurveServerConfig):
    server_class = _NoNonceCheckServer


class BuggyServer(Mc0Server):
    def __init__(self, bug: str | None) -> None:
        assert bug is None or bug in BUGS, bug
        broker = BuggyBroker(bug)
        super().__init__(broker=broker, allow_null=bug == "accepts-null")
        if bug == "unchecked-hello":
            self.curve = _UncheckedHelloConfig(testkeys.SERVER)
        if bug == "unchecked-vouch":
            self.curve = _UncheckedVouchConfig(testkeys.SERVER)
        if bug == "no-nonce-check":
            self.curve = _NoNonceCheckConfig(testkeys.SERVER)
        if bug == "fixed-server-transient":
            self.curve = CurveServerConfig(testkeys.SERVER, transient=KeyPair.generate())
        broker.server = self

    def crash(self) -> None:
        """What a crashed broker process looks like from outside: every connection and the port close."""
        if self._server is not None:
            self._server.close()
        for peer in list(self._peers.values()):
            peer.writer.transport.abort()


async def start_buggy(bug: str | None) -> BuggyServer:
    server = BuggyServer(bug)
    await server.start("127.0.0.1", 0)
    return server
