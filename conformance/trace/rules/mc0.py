"""mc0 from the wire: ZMTP 3 greeting and CURVE handshake (RFC 25: HELLO, WELCOME, INITIATE,
READY, in that order; after READY only MESSAGE commands), then the mc0 messages.

Under CURVE the messages are boxes: with a session key of a key log (check-trace --keylog,
conformance/trace/curve.py) they are opened and checked like clear-text (NULL) ones; without one
they are reported as not checkable, never skipped silently.  The message rules (docs/profiles/mc0.md):

- a message that does not decode breaks mc0-message-structure; one the client sends is owed an
  ERROR, and a broker that ends the connection while one is owed (the client still open) broke it,
  as (with the test services on: the broker of a conformance run answers within the suite's
  reply_ms) does one still silent when the client closes a reply_ms after the message;
- an OK or ERROR carrying an ID no outstanding request of this connection carried (mc0-id-reply),
  an ERROR without its MESSAGE header (mc0-error);
- an OK to a request the profile refuses, when every outstanding request with its ID is one: a
  CONNECT naming a VERSION other than 0.3 and 0.2 (mc0-connect-version);
- a MESSAGE for a topic this connection never subscribed to (mc0-put-subscribers; topics match
  exactly), or only subscribed to before it went quiet past twice its TTL (mc0-ttl-absent), or
  after the broker's OK to its UNSUB of the topic with no SUB since (mc0-unsub; mc0-unsub-once when
  the client had subscribed to it more than once: one UNSUB ends a subscription);
- a MESSAGE without the empty separator before its body (mc0-message: the profile's `MESSAGE TOPIC
  t <other headers> '' body`, the separator there even when the body is empty);
- a PUT of this connection whose topic and body came back in a MESSAGE, but never with its X-
  headers in order (mc0-reserved-headers): another publisher's PUT of the same topic and body may
  carry other headers, so a MESSAGE with other headers is that PUT's delivery only if no MESSAGE
  with the PUT's own headers comes before the connection is over (judged then, placed at the first
  such MESSAGE);
- a client with a TTL (from a CONNECT the broker said OK to) quiet for more than twice the TTL
  until the connection ends, without a NOOP from the broker (mc0-noop-timing, SHOULD);
- under CURVE (mc0-curve, the profile FAILs a broker that serves a replayed message or completes a
  handshake with a forged vouch): a READY after an INITIATE whose vouch, opened with the server's
  s' from the key log, does not hold the connection's C' and the server's S (conformance/trace/curve.py;
  without s' a note says the vouch was not checked); an OK carrying the ID of a client message
  with a replayed box (a short nonce not above an earlier MESSAGE's of the client), when every other
  request with that ID was answered already.  A replayed message is not a request of the client's
  (a broker refuses it, and may end the connection from then on: no ERROR is owed after it).
Across connections (session facts, judged by conformance/trace/sessions/mc0.py): the server
short-term key S' each WELCOME gave (mc0-curve: new for each connection), and per topic the
subscriptions the broker acknowledged, the PUTs and the deliveries (mc0-put-subscribers: a PUT
reaches every subscriber).
The timed rules allow twice the TTL where the profile says one, for clock skew and a broker's timer
granularity; a client found absent has no TTL any more (the profile drops it).  Any traffic from
the client counts as heard, ZMTP PINGs (clear or boxed) too, as the profile says.  Quiet is judged
when the client speaks again or the connection ends, never on the broker's frames alone: the
suite's own captures (run --pcap) time what the suite received when it read it, so a NOOP sent
while the suite slept is stamped after the client's next message.
"""

from __future__ import annotations

import hashlib
from collections import Counter, deque
from dataclasses import dataclass

from reference_impl.common.errors import CodecError
from reference_impl.mc0 import codec
from reference_impl.mc0.broker import ttl_ms
from reference_impl.zmtp.commands import split_command

from conformance.protocols.mc0 import ADAPTER
from conformance.protocols.zmtp_channel import HARNESS_MAX_FRAME, ZmtpReader
from conformance.trace.curve import CurveSession
from conformance.trace.rules import Rules as Base

_ORDER = [("client", "HELLO"), ("server", "WELCOME"), ("client", "INITIATE"), ("server", "READY")]
_MESSAGE = b"\x07MESSAGE"
_KEPT_PUTS = 64  # PUTs remembered for their delivery (X- headers), newest
_KEPT_TOPICS = 64  # topics of one connection given as session facts, first
_KEPT_PER_TOPIC = 64  # publications (and four times as many deliveries) of one topic kept in its fact
_KEPT_REQUESTS = 1024  # requests with ID waiting for their answer, held to tell whose an OK is
MAX_MESSAGE = HARNESS_MAX_FRAME  # a boxed message's parts held, at most (as the reader's for clear ones)


@dataclass
class _PendingPut:
    """A PUT of this connection waiting for its delivery."""

    topic: bytes
    headers: tuple[tuple[bytes, bytes], ...]  # its X- headers, which the delivery must carry untouched
    body: tuple[bytes, ...]
    other_headers: tuple[object, str] | None = None  # (where, finding) of a delivery with other X- headers


class _Command:
    """A ZMTP command's body, kept whole: CURVE boxes to open."""

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.name = split_command(body)[0] if body else ""


class _Message:
    """A ZMTP message's frames: mc0 frames in clear, or one CURVE MESSAGE in a message frame."""

    def __init__(self, parts: list[bytes]) -> None:
        self.parts = parts


class Rules(Base):
    protocol = "mc0"
    FRAMING = "mc0-zmtp3"

    def __init__(self, transport: str, params: dict[str, int]) -> None:
        super().__init__(transport, params)
        self.mechanism: dict[str, str] = {}
        self.step = 0  # how far the CURVE handshake went
        self.off_step = False  # the handshake went out of order: what follows is not judged as CURVE
        self.refused: tuple[str, str] | None = None  # (side, reason) of an ERROR that ended the handshake
        self.encrypted = {"client": 0, "server": 0}
        self.curve: CurveSession | None = None
        self.inner: dict[str, list[bytes]] = {"client": [], "server": []}  # parts of a boxed multi-part message
        self.inner_size = {"client": 0, "server": 0}
        self.inner_replayed = False  # a box of the client's message being read carried a replayed nonce
        self.messages = _Messages(self)
        self.welcome_at: tuple[float, dict] | None = None  # (ts, where) of the WELCOME
        self.server_transient: bytes | None = None  # S', proven this connection's (the session facts)

    def new_reader(self, side: str):
        return ZmtpReader(_Message, to_command=_Command)

    def on_frame(self, side: str, frame, ts: float):
        if isinstance(frame, _Command | _Message):
            return self._zmtp(side, frame, ts)
        f = frame.fields
        self.mechanism[side] = f["mechanism"]
        out = []
        if f["major"] < 3:
            out.append((side, "mc0-zmtp3", f"a ZMTP {f['version']} greeting, not ZMTP 3"))
        if f["mechanism"] != "CURVE":
            out.append((side, "mc0-curve", f"the greeting's mechanism is {f['mechanism']}, not CURVE"))
        return out

    def _zmtp(self, side: str, frame, ts: float):
        mechanism = self.mechanism.get(side)
        if mechanism == "NULL":
            if isinstance(frame, _Message):
                return self.messages.on(side, frame.parts, ts)
            if frame.name not in ("READY", "ERROR"):  # past NULL's handshake: a PING is traffic too
                self.messages.traffic(side, ts)
            return []
        if mechanism != "CURVE":
            return []
        if self.step < len(_ORDER):
            return self._handshake(side, frame, ts)
        if self.off_step:
            self.encrypted[side] += 1
            return []
        body = frame.body if isinstance(frame, _Command) else frame.parts[0]
        if not body.startswith(_MESSAGE):  # RFC 26: after READY every command is a MESSAGE
            what = f"a {frame.name} command" if isinstance(frame, _Command) else "a message frame"
            return [(side, "mc0-curve", f"{what} in clear after the CURVE handshake, not a MESSAGE")]
        if isinstance(frame, _Message) and len(frame.parts) > 1:
            return [(side, "mc0-curve", "MORE set on the frame carrying a CURVE MESSAGE")]
        inner, problems = self.curve.message(side, body) if self.curve else (None, [])
        out = [(who, "mc0-curve", text) for who, text in problems]
        if inner is None:
            if self.curve is None or self.curve.key is None or side in self.curve.lost:
                self.encrypted[side] += 1  # not opened (a box that opened with bad flags is a finding only)
            return out
        if inner.command:
            self.messages.traffic(side, ts)  # a boxed ZMTP command (PING, PONG): traffic, not an mc0 message
            return out
        if side == "client" and self.curve.replayed:
            self.inner_replayed = True  # a box sent before: a broker refuses the message (never serves it)
        self.inner[side].append(inner.body)
        self.inner_size[side] += len(inner.body)
        if self.inner_size[side] > MAX_MESSAGE:  # a peer sending MORE forever: not held, not judged
            self.curve.lost[side] = f"a message of more than {MAX_MESSAGE} octets (the checker's limit) was not read"
            self.inner[side], self.inner_size[side] = [], 0
            self.inner_replayed = False
            self.encrypted[side] += 1
            return out
        if not inner.more:
            parts, self.inner[side], self.inner_size[side] = self.inner[side], [], 0
            if side == "client" and self.inner_replayed:
                self.inner_replayed = False
                self.messages.replayed(parts, ts)
            else:
                out += self.messages.on(side, parts, ts)
        return out

    def _handshake(self, side: str, frame, ts: float):
        expected_side, expected = _ORDER[self.step]
        name = frame.name if isinstance(frame, _Command) else "a message"
        if name == "ERROR":  # ZMTP 3.1: either peer MAY end a security handshake that cannot succeed
            self.step, self.off_step = len(_ORDER), True
            # %x05 "ERROR", then the reason as a short string (one octet of size)
            reason = frame.body[7:7 + frame.body[6]].decode("utf-8", "replace") if len(frame.body) > 6 else ""
            self.refused = (side, reason)
            return []
        if (side, name) != (expected_side, expected):
            self.step, self.off_step = len(_ORDER), True  # the rest is not the handshake we know
            return [(side, "mc0-curve", f"{side} sent {name} where the CURVE handshake has the "
                     f"{expected_side}'s {expected}")]
        self.step += 1
        if not self.keys:
            return []
        if self.curve is None:
            self.curve = CurveSession(self.keys)
        if name == "WELCOME":
            self.welcome_at = (ts, self.where())
        problems = getattr(self.curve, name.lower())(frame.body)
        self._proven_transient(name, problems)
        return [(who, "mc0-curve", text) for who, text in problems]

    def _proven_transient(self, name: str, problems) -> None:
        """S' once the key log proves it this connection's: the WELCOME opened with the client's c'
        (Box[S' + cookie](S->C'), only the server makes it), or with the server's s' the READY
        opened under the key of C' and that S' (only the holder of s' makes it: a client's INITIATE
        boxed to another connection's S' would open under that key too, so it alone proves nothing)."""
        curve = self.curve
        if name == "WELCOME" and curve.server_transient:
            self.server_transient = curve.server_transient
        elif (name == "READY" and not problems and curve.session is not None and curve.session.role == "server"
              and curve.key is not None and "server" not in curve.lost):
            self.server_transient = curve.session.public

    def on_end(self, side: str, ts: float, how: str, pending: int):
        return self.messages.end(side, ts, how)

    def seen_whole(self, side: str) -> bool:
        """Every frame of ``side`` was read and, under CURVE, opened."""
        lost = self.curve is not None and side in self.curve.lost
        return side not in self.blind and not self.encrypted[side] and not lost and not self.off_step

    def session_facts(self):
        out = []
        if self.server_transient is not None and self.welcome_at is not None and self.curve is not None:
            ts, where = self.welcome_at
            out.append((f"curve-server-transient {self.server_transient.hex()}", {
                "kind": "server-transient", "first_ts": ts, "server_transient": self.server_transient.hex(),
                "client_transient": self.curve.client_transient.hex(),
                "at": where}))
        return out + self.messages.session_facts()

    def on_finish_at(self):
        return self.messages.undelivered_headers()

    def notes(self):
        if self.refused is not None:
            side, reason = self.refused
            return [(side, f"the {side} ended the CURVE handshake with a ZMTP ERROR ({reason!r}): nothing after "
                           "it is judged")]
        if self.off_step:
            why = {s: "frames after a CURVE handshake out of order are not checked" for s in self.encrypted}
        elif self.curve is not None and self.curve.session is not None:
            why = {s: "frames after the CURVE handshake are encrypted and not opened with the key log's key: "
                      + self.curve.lost.get(s, "the handshake did not give the session's key") for s in self.encrypted}
        elif self.keys:
            why = {s: "frames after the CURVE handshake are encrypted: no session key in the key log matched this "
                      "connection (its HELLO's C' or its INITIATE)" for s in self.encrypted}
        else:
            why = {s: "frames after the CURVE handshake are encrypted: not checkable without the session keys "
                      "(check-trace --keylog)" for s in self.encrypted}
        out = [(side, f"{n} {why[side]}") for side, n in self.encrypted.items() if n]
        if self.curve is not None and self.curve.unchecked_vouch is not None:
            out.append(("client", f"the vouch in the INITIATE (Box[C' + S](C->S')) is encrypted and not checked: "
                                  f"{self.curve.unchecked_vouch}; whether the broker's READY answered a forged vouch "
                                  f"is not judged"))
        return out


class _Messages:
    """The mc0 message rules of one connection (the module's docstring lists them)."""

    def __init__(self, rules: Rules) -> None:
        self.rules = rules  # where the frame being judged is (rules.at)
        self.asked: Counter[bytes] = Counter()  # IDs of the client's requests not answered yet
        self.replays: Counter[bytes] = Counter()  # IDs of the client's replayed messages (boxes sent before)
        self.replay_seen = False  # the client replayed a box: a broker may end the connection from then on
        self.refusals: dict[bytes, list[str]] = {}  # ID -> the requirement of each outstanding request owed ERROR
        self.owed_errors = 0  # the client's messages that did not decode, not answered by an ERROR yet
        self.owed_since: deque[float] = deque()  # when each of them was sent, oldest first
        # the suite's wait for an answer it provoked (reply_ms): the broker, as the test service, owes
        # the ERROR within it (docs/profiles/mc0.md, "Test service")
        self.reply = rules.adapter_wait("reply_ms", ADAPTER.params["reply_ms"])
        self.subscribed: set[bytes] = set()
        self.lapsed: set[bytes] = set()  # subscriptions dropped by the client's absence
        self.connects: dict[bytes, float] = {}  # CONNECT ID -> its TTL (s), until the broker answers it
        self.ttl: float | None = None
        self.heard: float | None = None  # when the client last sent a message
        self.noop: float | None = None  # when the broker last sent NOOP
        self.puts: list[_PendingPut] = []  # this connection's PUTs waiting for their delivery
        self.ended: set[str] = set()
        # -- the session facts of the topics (conformance/trace/sessions/mc0.py) --
        # ID -> [verb, SUB or UNSUB topics, an UNSUB's place among the client's messages or a PUT's
        # (topic, index of its publication)], oldest first
        self.requests: dict[bytes, list[list]] = {}
        self.sent = 0  # the client's messages that decoded
        self.sub_at: dict[bytes, int] = {}  # topic -> the place of the client's last SUB of it
        self.subs = Counter()  # topic -> the client's SUBs of it since the last UNSUB the broker said OK to
        self.unsubscribed: dict[bytes, str] = {}  # topic -> the requirement a MESSAGE for it breaks now
        self.waiting = 0  # requests held in self.requests
        self.requests_lost = False  # more were waiting than held: an OK can no longer be told to be a SUB's
        self.topics: dict[bytes, dict] = {}  # topic -> its fact
        self.ended_at: float | None = None  # when either side ended
        self.last_error: float | None = None  # when the broker last sent ERROR
        self.asked_ttl = False  # a CONNECT carried TTL: the broker may find the client absent when quiet
        self.disconnected = False  # the client sent DISCONNECT
        self.malformed = False  # the client sent a message that does not decode
        self.server_octets = 0  # of the broker's mc0 messages (with their frame headers, at most 9 octets each)

    def on(self, side: str, parts: list[bytes], ts: float):
        if side == "client":
            self._absent(ts)
        else:
            self.server_octets += sum(len(part) + 9 for part in parts)
        out = []
        try:
            message = codec.decode_message(parts)
        except CodecError as exc:
            if side == "client":
                self.malformed = True
                self.owed_errors += 1
                self.owed_since.append(ts)
                request_id = codec.salvage_id(parts)
                if request_id is not None:
                    self.asked[request_id] += 1
                self.heard = ts
            return out + [(side, "mc0-message-structure", f"a message that does not decode ({exc.code}): {exc}")]
        if side == "client":
            self.heard = ts
            self._pubsub_request(message, ts)
            return out + self._request(message)
        self._pubsub_reply(message, ts)
        return out + self._reply(message, ts)

    def replayed(self, parts: list[bytes], ts: float) -> None:
        """A client message with a box sent before (its short nonce not above an earlier MESSAGE's):
        a broker refuses it, so it is no request of the client's; only its ID is kept, and an OK
        with that ID beyond the answers the client's other requests are owed served the replay."""
        self._absent(ts)
        self.heard = ts
        self.replay_seen = True
        try:
            request_id = codec.decode_message(parts).id
        except CodecError:
            request_id = codec.salvage_id(parts)
        if request_id is not None:
            self.replays[request_id] += 1

    def traffic(self, side: str, ts: float) -> None:
        """Traffic from ``side`` that is not an mc0 message (a ZMTP PING): the profile counts any
        traffic from the client as the client being present."""
        if side == "client":
            self._absent(ts)
            self.heard = ts

    def _request(self, message: codec.Mc0Message):
        if message.id is not None:
            self.asked[message.id] += 1
            refused = _refusal(message)
            if refused is not None:
                self.refusals.setdefault(message.id, []).append(refused)
        if message.verb == codec.CONNECT and message.id is not None:
            ttl = message.header(codec.TTL)
            ms = None if ttl is None else ttl_ms(ttl)  # not int(): it refuses more than 4300 digits
            if ms is not None:
                self.connects[message.id] = ms / 1000
        elif message.verb == codec.SUB and message.positional:
            self.subscribed.update(message.positional)
        elif message.verb == codec.PUT and message.header(codec.TOPIC) is not None and message.positional is not None:
            put = _PendingPut(message.header(codec.TOPIC), message.extensions, message.positional)
            self.puts = [*self.puts[-_KEPT_PUTS + 1:], put]
        elif message.verb == codec.DISCONNECT:
            self.ttl = None  # the broker drops the CONNECT parameters (its deliveries in flight may still come)
        return []

    def _reply(self, message: codec.Mc0Message, ts: float):
        out = []
        if message.verb == codec.NOOP:
            self.noop = ts
        if message.verb in (codec.OK, codec.ERROR) and message.id is not None:
            request_id = message.id
            refusals = self.refusals.get(request_id, [])
            if refusals and (message.verb == codec.ERROR or len(refusals) == self.asked[request_id]):
                refused = refusals.pop(0)  # an OK while other requests have this ID may be theirs
                if message.verb == codec.OK:
                    out.append(("server", refused, f"OK ID {request_id[:40]!r} to a request the profile refuses "
                                f"({_REFUSED[refused]}): it gets ERROR", "client"))
            if self.asked[request_id] > 0:
                self.asked[request_id] -= 1
            elif self.replays[request_id] > 0:
                self.replays[request_id] -= 1
                lost = self.rules.curve is not None and "client" in self.rules.curve.lost
                if message.verb == codec.OK and not lost:
                    out.append(("server", "mc0-curve", f"OK ID {request_id[:40]!r} answers a MESSAGE the client "
                                f"replayed (a box whose short nonce is not above an earlier one's), every other "
                                f"request with that ID answered: the broker served a replayed message", "client"))
            else:
                out.append(("server", "mc0-id-reply", f"{message.verb.decode()} ID {request_id[:40]!r}: no request "
                            f"of this connection with that ID is waiting for its answer", "client"))
            ttl = self.connects.pop(request_id, None)
            if ttl is not None and message.verb == codec.OK:
                self.ttl = ttl
        if message.verb == codec.ERROR:
            self.owed_errors = max(0, self.owed_errors - 1)
            if self.owed_since:
                self.owed_since.popleft()
            if message.header(codec.DESCRIPTION) is None:
                out.append(("server", "mc0-error", "an ERROR without its MESSAGE header"))
        if message.verb == codec.MESSAGE:
            if message.positional is None:
                out.append(("server", "mc0-message", "a MESSAGE without the empty frame before its body ([ 'MESSAGE', "
                            "'TOPIC', topic, '', body ]: the separator is there even when the body is empty)", "client"))
            out += self._delivery(message)
        return out

    def _delivery(self, message: codec.Mc0Message):
        topic = message.header(codec.TOPIC)
        if topic is None:
            return []
        out = []
        if topic not in self.subscribed:
            if topic in self.lapsed:
                out.append(("server", "mc0-ttl-absent", f"a MESSAGE for {topic[:40]!r}, subscribed to only before "
                            f"the client went quiet past its TTL (absent: its subscriptions dropped)", "client"))
            elif topic in self.unsubscribed:
                requirement = self.unsubscribed[topic]
                out.append(("server", requirement, f"a MESSAGE for {topic[:40]!r} after the broker's OK to the client's "
                            f"UNSUB of it, with no SUB since" + (" (it was subscribed more than once: one UNSUB ends a "
                            "subscription)" if requirement == "mc0-unsub-once" else ""), "client"))
            else:
                out.append(("server", "mc0-put-subscribers", f"a MESSAGE for {topic[:40]!r}, a topic this connection "
                            f"never subscribed to (topics match exactly)", "client"))
        same = [put for put in self.puts if put.topic == topic and put.body == message.positional]
        exact = next((put for put in same if put.headers == message.extensions), None)
        if exact is not None:
            self.puts.remove(exact)  # its delivery: an earlier one with other headers was another publisher's
            return out
        waiting = next((put for put in same if put.other_headers is None), None)
        if waiting is not None:
            waiting.other_headers = (
                self.rules.at, f"the delivery of this connection's PUT to {topic[:40]!r} carries X- headers "
                               f"{_headers(message.extensions)}, the PUT {_headers(waiting.headers)}, and no MESSAGE "
                               f"with the PUT's own came: they are forwarded untouched, in order")
        return out

    # -- pub/sub: this connection's part of each topic (the checks across connections) ------------

    def _topic(self, topic: bytes, ts: float) -> dict | None:
        if topic not in self.topics and len(self.topics) < _KEPT_TOPICS:
            self.topics[topic] = {"kind": "topic", "first_ts": ts, "subscribed": None, "unsubscribed": False,
                                  "published": [], "acked": [], "delivered": [], "overflow": False}
        return self.topics.get(topic)

    def _pubsub_request(self, message: codec.Mc0Message, ts: float) -> None:
        self.sent += 1
        request = None
        if message.id is not None and not self.requests_lost:
            topics = tuple(message.positional or ())[:_KEPT_TOPICS] if message.verb in (codec.SUB, codec.UNSUB) else ()
            request = [message.verb, topics, self.sent if message.verb == codec.UNSUB else None]
            self.requests.setdefault(message.id, []).append(request)
            self.waiting += 1
            if self.waiting > _KEPT_REQUESTS:
                self.requests, self.requests_lost = {}, True
        topic = message.header(codec.TOPIC)
        if message.verb == codec.SUB:
            for subscribed in (message.positional or ())[:_KEPT_TOPICS]:
                self._topic(subscribed, ts)  # its deliveries are kept from now on, even before the OK
            for subscribed in message.positional or ():
                if subscribed in self.sub_at or len(self.sub_at) < _KEPT_TOPICS:
                    self.sub_at[subscribed] = self.sent
                    self.subs[subscribed] += 1
                    self.unsubscribed.pop(subscribed, None)
        elif message.verb == codec.CONNECT and message.header(codec.TTL) is not None:
            self.asked_ttl = True
        elif message.verb == codec.DISCONNECT:
            self.disconnected = True
        elif message.verb == codec.UNSUB:
            for unsubscribed in message.positional or ():
                fact = self._topic(unsubscribed, ts)
                if fact is not None:
                    fact["unsubscribed"] = True
        elif message.verb == codec.PUT and topic is not None and message.positional is not None:
            fact = self._topic(topic, ts)
            if fact is not None and len(fact["published"]) < _KEPT_PER_TOPIC:
                fact["published"].append((ts, _digest(topic, message.positional), self.rules.where()))
                if request is not None:
                    request[2] = (topic, len(fact["published"]) - 1)  # its OK proves the broker served it

    def _pubsub_reply(self, message: codec.Mc0Message, ts: float) -> None:
        if message.verb == codec.ERROR:
            self.last_error = ts
        if message.verb in (codec.OK, codec.ERROR) and message.id is not None:
            waiting = self.requests.get(message.id)
            if waiting:
                # the subscription is in place once the broker said OK to the SUB: an OK that can
                # only be the SUB's (no other request with its ID was waiting)
                verb, topics, more = waiting.pop(0)
                self.waiting -= 1
                if message.verb == codec.OK and verb == codec.SUB and not waiting:
                    for subscribed in topics:
                        fact = self.topics.get(subscribed)
                        if fact is not None and fact["subscribed"] is None:
                            fact["subscribed"] = ts
                if message.verb == codec.OK and verb == codec.UNSUB and not waiting:
                    # the UNSUB is served: a MESSAGE for its topics after this OK breaks mc0-unsub, unless
                    # the client subscribed again after the UNSUB (mc0-unsub-once: subscribed more than once)
                    for unsubscribed in topics:
                        if self.sub_at.get(unsubscribed, 0) < more:
                            self.subscribed.discard(unsubscribed)
                            self.unsubscribed[unsubscribed] = "mc0-unsub-once" if self.subs[unsubscribed] > 1 \
                                else "mc0-unsub"
                            self.subs[unsubscribed] = 0
                if message.verb == codec.OK and verb == codec.PUT and not waiting and more is not None:
                    fact = self.topics.get(more[0])
                    if fact is not None:
                        fact["acked"].append(more[1])
                if not waiting:
                    del self.requests[message.id]
        topic = message.header(codec.TOPIC)
        if message.verb == codec.MESSAGE and topic is not None and topic in self.topics:
            fact = self.topics[topic]
            if len(fact["delivered"]) < 4 * _KEPT_PER_TOPIC:
                fact["delivered"].append((ts, _digest(topic, message.positional or ())))
            else:
                fact["overflow"] = True  # deliveries not kept: whether one came is unknown

    def session_facts(self):
        rules, params = self.rules, self.rules.params
        done = {"ended": self.ended_at, "last_error": self.last_error, "asked_ttl": self.asked_ttl,
                "disconnected": self.disconnected, "malformed": self.malformed, "server_octets": self.server_octets,
                "whole": rules.seen_whole("client") and rules.seen_whole("server"),
                "window": max(params.get("prompt_ms", 1000), params.get("reply_ms", 2000)) / 1000}
        return [(f"topic {topic.hex()}", {**fact, **done}) for topic, fact in self.topics.items()
                if fact["subscribed"] is not None or fact["published"]]

    def undelivered_headers(self):
        """PUTs whose topic and body came back only with other X- headers, the connection over."""
        if not self.ended:
            return []  # the capture stops before the connection ends: the right delivery may be still to come
        return [(put.other_headers[0], ("server", "mc0-reserved-headers", put.other_headers[1], "server"))
                for put in self.puts if put.other_headers]

    def _absent(self, now: float) -> None:
        """The client speaks at ``now``: quiet since it was last heard for more than twice its TTL,
        it was absent, its subscriptions and TTL dropped."""
        if self.ttl is not None and self.heard is not None and now - self.heard > 2 * self.ttl:
            self.lapsed |= self.subscribed
            self.subscribed, self.ttl = set(), None

    def end(self, side: str, ts: float, how: str):
        out = []
        if not self.ended and self.ttl is not None and self.heard is not None and ts - self.heard > 2 * self.ttl \
                and (self.noop is None or self.noop < self.heard):
            out.append(("server", "mc0-noop-timing", f"the client (TTL {self.ttl * 1000:.0f} ms) was quiet for "
                        f"{(ts - self.heard) * 1000:.0f} ms until the connection ended, and the broker sent no NOOP"))
        if side == "server" and "client" not in self.ended and self.owed_errors and not self.replay_seen:
            out.append(("server", "mc0-message-structure", f"the broker ended the connection ({how}) owing the ERROR "
                        f"for {self.owed_errors} message(s) that did not decode: a malformed message gets ERROR and "
                        f"the broker keeps serving"))
        if side == "client" and "server" not in self.ended and self.owed_since and not self.replay_seen \
                and self.rules.services and self.rules.seen_whole("client") and self.rules.seen_whole("server") \
                and ts - self.owed_since[0] >= self.reply:
            out.append(("server", "mc0-message-structure", f"the broker sent no ERROR in {ts - self.owed_since[0]:.3f} "
                        f"s for {self.owed_errors} message(s) that did not decode, the connection open: a malformed "
                        f"message gets ERROR and the broker keeps serving; the client closed ({how})"))
        if self.ended_at is None:
            self.ended_at = ts
        self.ended.add(side)
        return out


_REFUSED = {"mc0-connect-version": "a CONNECT VERSION other than 0.3 and 0.2"}


def _refusal(message: codec.Mc0Message) -> str | None:
    """The requirement a request breaks that the broker must answer with ERROR, or None."""
    if message.verb == codec.CONNECT:
        version = message.header(codec.VERSION)
        return "mc0-connect-version" if version is not None and version not in codec.ACCEPTED_VERSIONS else None
    return None


def _digest(topic: bytes, body) -> str:
    """A publication or delivery by its topic and positional parts (what the MESSAGE carries of the PUT)."""
    blake = hashlib.blake2b(digest_size=8)
    for part in (topic, *body):
        blake.update(len(part).to_bytes(8, "big") + part)
    return blake.hexdigest()


def _headers(headers) -> str:
    return "[" + ", ".join(f"{k[:20].decode('latin-1')}={v[:20].decode('latin-1')}" for k, v in headers) + "]"
