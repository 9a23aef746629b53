"""mc0 from the wire: ZMTP 3 greeting and CURVE handshake (RFC 25: HELLO, WELCOME, INITIATE,
READY, in that order; after READY only MESSAGE commands), then the mc0 messages.

Under CURVE the messages are boxes: with a session key of a key log (check-trace --keylog,
conformance/trace/curve.py) they are opened and checked like clear-text (NULL) ones; without one
they are reported as not checkable, never skipped silently.  The message rules (docs/profiles/mc0.md):

- a message that does not decode breaks mc0-message-structure; one the client sends is owed an
  ERROR, and a broker that ends the connection while one is owed (the client still open) broke it;
- an OK or ERROR carrying an ID no outstanding request of this connection carried (mc0-id-reply),
  an ERROR without its MESSAGE header (mc0-error);
- an OK to a request the profile refuses, when every outstanding request with its ID is one: a
  CONNECT naming a VERSION other than 0.3 and 0.2 (mc0-connect-version);
- a MESSAGE for a topic this connection never subscribed to (mc0-put-subscribers; topics match
  exactly), or only subscribed to before it went quiet past twice its TTL (mc0-ttl-absent);
- a PUT of this connection whose topic and body came back in a MESSAGE, but never with its X-
  headers in order (mc0-reserved-headers): another publisher's PUT of the same topic and body may
  carry other headers, so a MESSAGE with other headers is that PUT's delivery only if no MESSAGE
  with the PUT's own headers comes before the connection is over (judged then, placed at the first
  such MESSAGE);
- a client with a TTL (from a CONNECT the broker said OK to) quiet for more than twice the TTL
  until the connection ends, without a NOOP from the broker (mc0-noop-timing, SHOULD).
The timed rules allow twice the TTL where the profile says one, for clock skew and a broker's timer
granularity; a client found absent has no TTL any more (the profile drops it).  Any traffic from
the client counts as heard, ZMTP PINGs (clear or boxed) too, as the profile says.  Quiet is judged
when the client speaks again or the connection ends, never on the broker's frames alone: the
suite's own captures (run --pcap) time what the suite received when it read it, so a NOOP sent
while the suite slept is stamped after the client's next message.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from reference_impl.common.errors import CodecError
from reference_impl.mc0 import codec
from reference_impl.mc0.broker import ttl_ms
from reference_impl.zmtp.commands import split_command

from conformance.protocols.zmtp_channel import HARNESS_MAX_FRAME, ZmtpReader
from conformance.trace.curve import CurveSession
from conformance.trace.rules import Rules as Base

_ORDER = [("client", "HELLO"), ("server", "WELCOME"), ("client", "INITIATE"), ("server", "READY")]
_MESSAGE = b"\x07MESSAGE"
_KEPT_PUTS = 64  # PUTs remembered for their delivery (X- headers), newest
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
        self.messages = _Messages(self)

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
            return self._handshake(side, frame)
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
        self.inner[side].append(inner.body)
        self.inner_size[side] += len(inner.body)
        if self.inner_size[side] > MAX_MESSAGE:  # a peer sending MORE forever: not held, not judged
            self.curve.lost[side] = f"a message of more than {MAX_MESSAGE} octets (the checker's limit) was not read"
            self.inner[side], self.inner_size[side] = [], 0
            self.encrypted[side] += 1
            return out
        if not inner.more:
            parts, self.inner[side], self.inner_size[side] = self.inner[side], [], 0
            out += self.messages.on(side, parts, ts)
        return out

    def _handshake(self, side: str, frame):
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
        problems = getattr(self.curve, name.lower())(frame.body)
        return [(who, "mc0-curve", text) for who, text in problems]

    def on_end(self, side: str, ts: float, how: str, pending: int):
        return self.messages.end(side, ts, how)

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
        return [(side, f"{n} {why[side]}") for side, n in self.encrypted.items() if n]


class _Messages:
    """The mc0 message rules of one connection (the module's docstring lists them)."""

    def __init__(self, rules: Rules) -> None:
        self.rules = rules  # where the frame being judged is (rules.at)
        self.asked: Counter[bytes] = Counter()  # IDs of the client's requests not answered yet
        self.refusals: dict[bytes, list[str]] = {}  # ID -> the requirement of each outstanding request owed ERROR
        self.owed_errors = 0  # the client's messages that did not decode, not answered by an ERROR yet
        self.subscribed: set[bytes] = set()
        self.lapsed: set[bytes] = set()  # subscriptions dropped by the client's absence
        self.connects: dict[bytes, float] = {}  # CONNECT ID -> its TTL (s), until the broker answers it
        self.ttl: float | None = None
        self.heard: float | None = None  # when the client last sent a message
        self.noop: float | None = None  # when the broker last sent NOOP
        self.puts: list[_PendingPut] = []  # this connection's PUTs waiting for their delivery
        self.ended: set[str] = set()

    def on(self, side: str, parts: list[bytes], ts: float):
        if side == "client":
            self._absent(ts)
        out = []
        try:
            message = codec.decode_message(parts)
        except CodecError as exc:
            if side == "client":
                self.owed_errors += 1
                request_id = codec.salvage_id(parts)
                if request_id is not None:
                    self.asked[request_id] += 1
                self.heard = ts
            return out + [(side, "mc0-message-structure", f"a message that does not decode ({exc.code}): {exc}")]
        if side == "client":
            self.heard = ts
            return out + self._request(message)
        return out + self._reply(message, ts)

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
            else:
                out.append(("server", "mc0-id-reply", f"{message.verb.decode()} ID {request_id[:40]!r}: no request "
                            f"of this connection with that ID is waiting for its answer", "client"))
            ttl = self.connects.pop(request_id, None)
            if ttl is not None and message.verb == codec.OK:
                self.ttl = ttl
        if message.verb == codec.ERROR:
            self.owed_errors = max(0, self.owed_errors - 1)
            if message.header(codec.DESCRIPTION) is None:
                out.append(("server", "mc0-error", "an ERROR without its MESSAGE header"))
        if message.verb == codec.MESSAGE:
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
        if side == "server" and "client" not in self.ended and self.owed_errors:
            out.append(("server", "mc0-message-structure", f"the broker ended the connection ({how}) owing the ERROR "
                        f"for {self.owed_errors} message(s) that did not decode: a malformed message gets ERROR and "
                        f"the broker keeps serving"))
        self.ended.add(side)
        return out


_REFUSED = {"mc0-connect-version": "a CONNECT VERSION other than 0.3 and 0.2"}


def _refusal(message: codec.Mc0Message) -> str | None:
    """The requirement a request breaks that the broker must answer with ERROR, or None."""
    if message.verb == codec.CONNECT:
        version = message.header(codec.VERSION)
        return "mc0-connect-version" if version is not None and version not in codec.ACCEPTED_VERSIONS else None
    return None


def _headers(headers) -> str:
    return "[" + ", ".join(f"{k[:20].decode('latin-1')}={v[:20].decode('latin-1')}" for k, v in headers) + "]"
