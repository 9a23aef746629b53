"""The sans-IO mc0 broker: subscriptions, acknowledgements, errors, NOOP heartbeats and TTL absence.

    broker = Broker()
    broker.attach(peer, now)                      # a connector completed its ZMTP handshake
    sends = broker.receive(peer, frames, now)     # its message (ZMTP frames, delimiter first)
    sends = broker.tick(now)                      # NOOPs and absences due; call by next_deadline()
    broker.detach(peer)                           # its connection ended
    # each Send names the peer to deliver to and the ZMTP frames to send it

Peers are any hashable handles the carrier picks.  Time is passed in, never read.

Readings pinned here (docs/profiles/mc0.md where it speaks, the spec otherwise):
- A request with ``ID`` gets exactly one reply carrying it: ``OK`` when it was
  served, ``ERROR`` when not.  A request without ``ID`` gets nothing back
  unless it fails ("expect nothing back if nothing exceptional occured").
- Every bad input gets ``ERROR`` (with the request's ``ID`` where one can be
  read) and nothing else, and the broker goes on serving every peer: a
  message that does not decode, an unknown verb (including the broker's own
  verbs MESSAGE/OK/ERROR), a reserved header the verb does not define, a
  repeated reserved header, a CONNECT with an unknown VERSION or a TTL that
  is not a positive decimal number of milliseconds, SUB/UNSUB without the
  separator or without topics, PUT without TOPIC or without the separator.
- Known reserved headers: ``ID`` on every verb, ``VERSION`` and ``TTL`` on
  CONNECT, ``TOPIC`` on PUT.  ``X-`` headers are accepted on every verb.
- ``PUT TOPIC t <X- headers> '' body...`` reaches every subscriber of ``t``
  (the sender too, when subscribed) as ``MESSAGE TOPIC t <X- headers> ''
  body...``: the X- headers in their order, untouched, ``ID`` not forwarded.
  Topics match exactly, octet for octet.  The deliveries go out before the
  sender's OK (a choice: docs/profiles/mc0.md allows either order).
- CONNECT is not required before other verbs.  With a TTL, the broker sends
  NOOP once the client has been quiet for half the TTL (and again every half
  TTL), and a client quiet for longer than the TTL is absent: its
  subscriptions and CONNECT parameters are dropped.  Any message counts as
  hearing from the client.  DISCONNECT drops the same state at once.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field

from reference_impl.common.errors import CodecError
from reference_impl.mc0 import codec
from reference_impl.mc0.codec import (
    ACCEPTED_VERSIONS, CONNECT, DISCONNECT, ID, NOOP, PUT, SUB, TOPIC, TTL, UNSUB, VERSION, Mc0Message,
    is_extension,
)

Peer = Hashable

#: The reserved headers each verb defines (ID everywhere; X- headers are always allowed).
KNOWN_HEADERS: dict[bytes, frozenset[bytes]] = {
    CONNECT: frozenset({ID, VERSION, TTL}),
    DISCONNECT: frozenset({ID}),
    SUB: frozenset({ID}),
    UNSUB: frozenset({ID}),
    PUT: frozenset({ID, TOPIC}),
    NOOP: frozenset({ID}),
}
MAX_TTL_MS = 2**31 - 1


@dataclass(frozen=True)
class Send:
    peer: Peer
    frames: list[bytes]


@dataclass
class PeerState:
    last_heard: float
    connected: bool = False
    version: bytes | None = None
    ttl: float | None = None  # seconds
    last_noop: float | None = None
    topics: set[bytes] = field(default_factory=set)


class Refused(Exception):
    """A request the broker answers with ERROR.

    ``code`` is stable (the vectors in vectors/mc0/ name it): ``unknown-verb``,
    ``undefined-header``, ``repeated-header``, ``bad-version``, ``bad-ttl``,
    ``no-separator``, ``no-topics``, ``no-topic``.  ``description`` is the
    free text the ERROR carries.
    """

    def __init__(self, description: str, code: str = "refused") -> None:
        super().__init__(description)
        self.description = description
        self.code = code


def ttl_ms(value: bytes) -> int | None:
    """A TTL value in milliseconds: a positive decimal integer up to MAX_TTL_MS (leading zeros allowed), else None.

    The length is checked before converting: ``int()`` refuses strings of more than
    4300 digits with ValueError, which escaped the broker before (a CONNECT whose TTL
    was 5000 digits ended the connection instead of getting ERROR).
    """
    digits = value.lstrip(b"0")
    if not value.isdigit() or not digits or len(digits) > len(str(MAX_TTL_MS)):
        return None
    ms = int(digits)
    return ms if ms <= MAX_TTL_MS else None


def check_request(msg: Mc0Message) -> None:
    """Raise :class:`Refused` unless a broker serves ``msg`` (a decoded client request).

    Pure: the same message is refused or served whatever the broker's state.
    """
    known = KNOWN_HEADERS.get(msg.verb)
    if known is None:
        raise Refused(f"unknown verb {msg.verb[:32]!r}", "unknown-verb")
    seen: set[bytes] = set()
    for key, _ in msg.headers:
        if is_extension(key):
            continue
        if key not in known:
            raise Refused(f"reserved header {key[:32]!r} is not defined for {msg.verb.decode('ascii')}",
                          "undefined-header")
        if key in seen:
            raise Refused(f"header {key.decode('ascii')} given twice", "repeated-header")
        seen.add(key)
    if msg.verb == CONNECT:
        version = msg.header(VERSION)
        if version is not None and version not in ACCEPTED_VERSIONS:
            raise Refused(f"unsupported VERSION {version[:32]!r} (this broker speaks 0.3 and 0.2)", "bad-version")
        ttl = msg.header(TTL)
        if ttl is not None and ttl_ms(ttl) is None:
            raise Refused(f"TTL {ttl[:32]!r} is not a positive number of milliseconds", "bad-ttl")
    elif msg.verb in (SUB, UNSUB):
        if msg.positional is None:
            raise Refused(f"{msg.verb.decode()} needs the empty separator before its topics", "no-separator")
        if not msg.positional:
            raise Refused(f"{msg.verb.decode()} names no topic", "no-topics")
    elif msg.verb == PUT:
        if msg.header(TOPIC) is None:
            raise Refused("PUT needs a TOPIC header", "no-topic")
        if msg.positional is None:
            raise Refused("PUT needs the empty separator before its body", "no-separator")


class Broker:
    def __init__(self) -> None:
        self.peers: dict[Peer, PeerState] = {}
        self.subscribers: dict[bytes, set[Peer]] = {}
        #: Peers found absent by :meth:`tick`, oldest first (bounded), for logs and tests.
        self.absent: list[Peer] = []

    # -- peers ------------------------------------------------------------------

    def attach(self, peer: Peer, now: float) -> None:
        """A new connection: it starts with no subscriptions, even when its handle is reused.

        A carrier that keys peers by routing id (a reconnecting DEALER with a fixed
        identity, ROUTER handover) may attach a handle that is still attached: the old
        session ends here, so its subscriptions cannot leak into the new one (a fuzz
        finding: the old entries stayed in the subscriber table, and the new connection
        got MESSAGEs for topics it never subscribed to; vectors/mc0/replies.json).
        """
        self.detach(peer)
        self.peers[peer] = PeerState(last_heard=now)

    def detach(self, peer: Peer) -> None:
        state = self.peers.pop(peer, None)
        if state is not None:
            self._drop_topics(peer, state)

    def _forget(self, peer: Peer, state: PeerState) -> None:
        """DISCONNECT or absence: subscriptions and CONNECT parameters go."""
        self._drop_topics(peer, state)
        state.connected, state.version, state.ttl, state.last_noop = False, None, None, None

    def _drop_topics(self, peer: Peer, state: PeerState) -> None:
        for topic in state.topics:
            self._unsubscribe(peer, topic)
        state.topics.clear()

    def _unsubscribe(self, peer: Peer, topic: bytes) -> None:
        peers = self.subscribers.get(topic)
        if peers is not None:
            peers.discard(peer)
            if not peers:
                del self.subscribers[topic]

    def matching(self, topic: bytes) -> set[Peer]:
        """The peers a PUT on ``topic`` reaches: exact match only."""
        return set(self.subscribers.get(topic, ()))

    # -- traffic ----------------------------------------------------------------

    def receive(self, peer: Peer, frames: list[bytes], now: float) -> list[Send]:
        state = self.peers.get(peer)
        if state is None:
            self.attach(peer, now)
            state = self.peers[peer]
        state.last_heard = now
        try:
            msg = codec.decode_message(frames)
        except CodecError as exc:
            return [self._error(peer, f"malformed message: {exc}", codec.salvage_id(frames))]
        try:
            check_request(msg)
            sends = self._serve(peer, state, msg)
        except Refused as refused:
            return [self._error(peer, refused.description, msg.id)]
        if msg.id is not None:
            sends.append(Send(peer, codec.encode_message(codec.ok(msg.id))))
        return sends

    def _serve(self, peer: Peer, state: PeerState, msg: Mc0Message) -> list[Send]:
        """Act on a request :func:`check_request` accepted."""
        if msg.verb == CONNECT:
            version, ttl = msg.header(VERSION), msg.header(TTL)
            state.connected, state.version = True, version or codec.CURRENT_VERSION
            ms = None if ttl is None else ttl_ms(ttl)
            state.ttl = None if ms is None else ms / 1000
            state.last_noop = None
            return []
        if msg.verb == DISCONNECT:
            self._forget(peer, state)
            return []
        if msg.verb == NOOP:
            return []
        assert msg.positional is not None
        if msg.verb in (SUB, UNSUB):
            for topic in msg.positional:
                if msg.verb == SUB:
                    state.topics.add(topic)
                    self.subscribers.setdefault(topic, set()).add(peer)
                else:
                    state.topics.discard(topic)
                    self._unsubscribe(peer, topic)
            return []
        # PUT
        topic = msg.header(TOPIC)
        assert topic is not None
        frames = codec.encode_message(codec.delivery(topic, msg.extensions, msg.positional))
        return [Send(p, list(frames)) for p in sorted(self.matching(topic), key=repr)]

    def _error(self, peer: Peer, description: str, request_id: bytes | None) -> Send:
        return Send(peer, codec.encode_message(codec.error(description.encode("utf-8", "replace"), request_id)))

    # -- time -------------------------------------------------------------------

    def tick(self, now: float) -> list[Send]:
        sends = []
        for peer, state in list(self.peers.items()):
            if state.ttl is None:
                continue
            if now - state.last_heard > state.ttl:
                self._forget(peer, state)
                self.absent = (self.absent + [peer])[-100:]
            elif now >= self._next_noop(state):
                state.last_noop = now
                sends.append(Send(peer, codec.encode_message(codec.NOOP_MESSAGE)))
        return sends

    @staticmethod
    def _next_noop(state: PeerState) -> float:
        assert state.ttl is not None
        since = state.last_heard if state.last_noop is None else max(state.last_heard, state.last_noop)
        return since + state.ttl / 2

    def next_deadline(self) -> float | None:
        deadlines = []
        for state in self.peers.values():
            if state.ttl is not None:
                deadlines += [state.last_heard + state.ttl, self._next_noop(state)]
        return min(deadlines) if deadlines else None
