"""Micromessage2 from the wire: every frame of both roles through the harness's reader (the
reference codec, with the handshakes and large-frame joining; the client's side reads its
hello and its final handshake), codec errors naming requirements, and what a capture shows:

* the handshake, judged with the reference negotiation: a side answered by a hello of another
  major sends ERROR (not its final handshake) and disconnects; so does a client answered by a
  server hello whose extension list is a syntax error (a name or property key that is not a FIELD,
  a property that is not key=value: ERROR + disconnect); the client's final message uses
  the lower version and lists every required extension of both hellos, and activates only
  optional extensions one of them offered;
* after it, extension frames only on the IDs the final message gave, each sender within the ack
  window it gave (counted with the reference ReceiveWindow, cumulative across the wrap), and
  MESSAGE payloads over 1 MiB split (SHOULD);
* a peer that receives an ERROR frame closes (the reference connection goes CLOSED on it) and
  sends nothing more;
* subscriptions, publications and deliveries per topic are session facts: a message published to
  a topic reaching one subscriber and not another is judged across connections
  (conformance/trace/sessions/micromessage2.py);
* in a capture of a conformance run (Rules.services), whose read timeout the run's parameters
  give (`read_timeout_ms`, 5 s unless the user set it), a client frame stalled half-way owes the
  server's ERROR within that timeout and the 3 s the active case adds (both times --time-scale):
  a client that closes with the frame still unfinished that long after its last bytes, the server
  still open and no ERROR in time, proves the server kept no read timeout (filed under what the
  stalled frame's case names: the hello's identity, else the payload length).  The client's own
  timeout is not judged: the test clients' configuration is theirs;
* in such a capture, too, the test service sends ERROR only where the profile owes one: its ERROR
  within prompt_ms of a valid frame exercising a rule (a short COMMAND with LARGE_PAYLOAD, an ack
  across the wrap), nothing on the connection owing an ERROR, is filed under that rule
  (refusal.Refusal).

What each side supports is not on the wire, so accepting an extension a side lacks (or
activating a suggestion it does not implement) looks like support and is not judged; with the test
services on (Rules.services), what the profile pins the test service and the test clients to lack
is (rules/micromessage2_services.py): required of them, it is owed ERROR and the close, and a test
client does not activate it."""

from __future__ import annotations

import hashlib
from collections import deque

from reference_impl.common.errors import CodecError, ProtocolViolation
from reference_impl.micromessage2.codec import MAX_FRAGMENT
from reference_impl.micromessage2.events import LocalProtocolError
from reference_impl.micromessage2.extensions import parse_extension_list
from reference_impl.micromessage2.negotiation import ack_window, common_version
from reference_impl.micromessage2.window import ReceiveWindow

from conformance.protocols.micromessage2 import ADAPTER, new_reader
from conformance.trace.rules import Rules as Base, other
from conformance.trace.rules.micromessage2_services import SERVED, PushStall, client_lacks, service_lacks
from conformance.trace.rules.refusal import Refusal

_WINDOW_RULE = {"server": "mm2-server-window", "client": "mm2-sender-window"}
#: per connection, at most this many topics, publications per topic, and messages sent after a
#: subscribe are kept for the checks across connections (deliveries: four times as many)
_KEPT = 16


def _digest(destination: str, payload: bytes) -> str:
    return hashlib.blake2b(destination.encode("utf-8", "replace") + b"\0" + bytes(payload), digest_size=8).hexdigest()


def _names(text: str) -> list[str] | None:
    try:
        return [e.name for e in parse_extension_list(text)]
    except CodecError:
        return None  # a list that does not parse: the codec's business, not judged here


#: the codec's errors of an extension list the profile calls a syntax error (ERROR + disconnect): a
#: name or key that is not a FIELD, a property that is not key=value (`batch-ack:max-count:100`)
_SYNTAX_ERRORS = frozenset({"bad-name", "bad-property"})


def _syntax_error(text: str) -> CodecError | None:
    try:
        parse_extension_list(text)
    except CodecError as exc:
        return exc if exc.code in _SYNTAX_ERRORS else None
    return None


class Rules(Base):
    protocol = "micromessage2"
    ERRORS = {
        "reserved-flags": "mm2-flags-byte",
        "conflicting-kind": "mm2-frame-kind",
        "zero-extension-id": "mm2-extension-index",
        "zero-sequence": "mm2-ack-number",
        "fragment-order": "mm2-continued",
        "fragment-mismatch": "mm2-continued",
        "non-ascii": "mm2-field-restrictions",
        "field-too-long": "mm2-field-restrictions",
    }
    FRAMING = "mm2-payload-length"

    def __init__(self, transport: str, params: dict[str, int]) -> None:
        super().__init__(transport, params)
        self.error_at: dict[str, float] = {}  # side -> when it received an ERROR frame
        self.reported: set[tuple[str, str]] = set()
        self.ended: set[str] = set()
        self.prompt = self.suite_wait("prompt_ms")
        self.hellos: dict[str, dict] = {}  # side -> its hello's fields
        self.must_error: str | None = None  # the side answered by a hello of another major
        # side -> the peer's hello list, a syntax error, that side must refuse (ERROR, not its hello or final)
        self.bad_list: dict[str, str] = {}
        self.extensions: list[str] | None = None  # the final message's required + optional names: ID - 1
        self.windows: dict[str, ReceiveWindow] = {}  # sender -> its messages the peer has not acked
        self.topics: dict[str, dict] = {}  # destination -> its fact (conformance/trace/sessions/micromessage2.py)
        self.unproven: set[str] = set()  # topics subscribed that no server frame yet shows read
        self.sent_after: deque = deque(maxlen=_KEPT)  # (message digest, topics subscribed before it, unproven)
        self.recent: deque = deque(maxlen=_KEPT)  # digests of the client's last messages (with pubsub on)
        self.ambiguous: set[str] = set()  # sent before a subscribe too: its echo would prove nothing
        # publications no server frame yet shows read: (topic, index in its fact, the client's digests
        # before it, those first sent after it); the server sending one of the latter back read it
        self.unread: deque = deque(maxlen=_KEPT)
        self.last_ts = 0.0
        self.close_window = self.suite_wait("close_ms")
        self.ended_mid_frame: tuple[float, int] | None = None  # (when, bytes of the frame) of the client's FIN
        # with the test services on: test/push's messages still owed, and how long the server may sit on them
        self.push = PushStall(self.suite_wait("expect_ms"))
        # with the test services on: (since, what) of a client message requiring an extension the test
        # service lacks, until the server's ERROR; and what a server hello required that a test client lacks
        self.owed_error: tuple[float, str] | None = None
        self.client_lacking: list[str] = []
        # with the test services on: how long after a client frame stalls half-way the server's ERROR may come
        # (the stalled-frame cases wait read_timeout_ms + 3000, stretched as the run's waits)
        self.read_timeout = params.get("read_timeout_ms", ADAPTER.params["read_timeout_ms"]) / 1000
        self.read_window = (self.read_timeout + 3) * self.stretch()
        # with the test services on: a valid frame the service must take, refused with ERROR
        self.refused = Refusal("server", "ERROR", self.prompt)
        self.taken: tuple[str, str] | None = None  # what the client's frame being read exercised (_extension)

    def new_reader(self, side: str):
        reader = new_reader(self.transport)
        reader.target_is_client = side == "client"  # a client sends two handshakes: hello, then final
        return reader

    def on_frame(self, side: str, frame, ts: float):
        self.taken = None
        out = self._on_frame(side, frame, ts)
        return out + self._refusal(side, frame.fields, ts, out) if self.services else out

    def on_error(self, side: str, exc, ts: float):
        if side == "client":
            self.refused.spoil()  # invalid bytes: an ERROR may be owed
        return super().on_error(side, exc, ts)

    def _refusal(self, side: str, f, ts: float, out):
        """The client's frames the test service takes (a short COMMAND with LARGE_PAYLOAD; an ack across
        the wrap the window took), while nothing owed an ERROR; the server's ERROR right after one."""
        self.refused.spoil_if(out, bool(self.owed_error or self.must_error or self.bad_list or self.client_lacking
                                        or "server" in self.error_at))
        kind = f.get("frame")
        if side == "server":
            return self.refused.refused(ts) if kind == "error" else []
        takes = self.taken
        args = f.get("args") or {}
        if (kind == "command" and f.get("large") and f.get("name") in ("subscribe", "unsubscribe")
                and isinstance(args.get("destination"), str) and "pubsub" in (self.extensions or ())):
            takes = ("mm2-large-payload", f"the client's {f['name']} COMMAND with LARGE_PAYLOAD set on its short "
                     "payload (the length then 4 bytes)")
        elif (kind == "command" and (f.get("fragments") or 1) > 1 and f.get("name") in ("subscribe", "unsubscribe")
                and isinstance(args.get("destination"), str) and "pubsub" in (self.extensions or ())):
            takes = ("mm2-continued", f"the client's {f['name']} COMMAND in {f['fragments']} CONTINUED fragments "
                     "(the receiver joins them)")
        if takes is None and kind == "message" and f.get("destination") in SERVED:
            return []  # a SEND the service serves: an ERROR after it still answers the frame before
        self.refused.sent(ts, takes)
        return []

    def _on_frame(self, side: str, frame, ts: float):
        f = frame.fields
        kind = f.get("frame")
        self.last_ts = max(self.last_ts, ts)
        if kind in ("command", "message"):
            self._pubsub(side, f, kind, ts)
        out = self._push_stalled(f"the client sent a {kind} frame", ts) if side == "client" else []
        if self.services and self.extensions is not None:
            self.push.frame(side, f, ts)
        if side == self.must_error and kind != "error":
            out += self._once(side, "mm2-version-error", f"the {side} sent a {kind} frame after the {other(side)}'s "
                              f"hello of major {self.hellos[other(side)]['major']}: it must send ERROR and disconnect")
        if side == "client" and self.client_lacking and kind != "error":
            out += self._once(side, "mm2-client-error-on-required", f"the client sent a {kind} frame after the "
                              f"server's hello required {self.client_lacking}, which the test clients do not "
                              "implement: it must send ERROR and disconnect")
        if side == "server" and self.owed_error is not None:
            if kind != "error":
                out += self._once(side, "mm2-server-lacks-required", f"the server sent a {kind} frame after "
                                  f"{self.owed_error[1]}, which the test service does not implement: it must "
                                  "send ERROR and disconnect")
            self.owed_error = None
        if side in self.bad_list and kind != "error":
            out += self._once(side, "mm2-field-restrictions", f"the {side} sent a {kind} frame after the "
                              f"{other(side)}'s hello listed {self.bad_list[side]}: a syntax error, it must send "
                              "ERROR and disconnect")
        if kind == "error":
            self.error_at.setdefault(other(side), ts)
            return out
        if side in self.error_at:
            return out + self._once(side, "mm2-error-frame", f"the {side} sent a {kind} frame after it had received "
                                    "an ERROR frame: it must close")
        if kind == "handshake":
            return out + self._handshake(side, f, ts)
        if self.extensions is None:
            return out
        if kind == "extension":
            return out + self._extension(side, f)
        if kind == "message":
            return out + self._message(side, f)
        return out

    # -- the handshake -------------------------------------------------------------------------

    def _handshake(self, side: str, f, ts: float):
        if side not in self.hellos:
            self.hellos[side] = f
            peer = other(side)
            if self.services:
                self._lacking(side, f, ts)
            if peer in self.hellos and self.hellos[peer]["major"] != f["major"]:
                # a different major is never compatible: the client, whose turn it is, sends ERROR, not its final
                self.must_error = "client"
            # the peer's turn: answered by a list it cannot parse (required or optional), it sends ERROR,
            # not its hello (the server) or its final (the client)
            if side == "client" and peer not in self.hellos or side == "server" and peer in self.hellos:
                bad = next((f"{key} {f[key]!r} ({error})" for key in ("required", "optional")
                            if (error := _syntax_error(f[key])) is not None), None)
                if bad is not None:
                    self.bad_list[peer] = bad
            return []
        if side != "client" or "server" not in self.hellos or self.extensions is not None:
            return []
        return self._final(f, self.hellos["client"], self.hellos["server"], ts)

    def _lacking(self, side: str, hello, ts: float) -> None:
        """A hello's required extensions the test service (a client hello of major 1 it has not yet
        answered) or a test client (the server hello answering its hello) lacks."""
        required = _names(hello["required"]) or []
        if side == "client" and "server" not in self.hellos and hello["major"] == 1:
            lacking = [name for name in required if service_lacks(name)]
            if lacking:
                self.owed_error = (ts, f"the client's hello required {lacking}")
        elif side == "server" and "client" in self.hellos:
            own = [_names(self.hellos["client"][key]) for key in ("required", "optional")]
            if None not in own:
                self.client_lacking = [name for name in required if client_lacks(name, {*own[0], *own[1]})]

    def _final(self, final, hello, answer, ts: float):
        out = []
        version = common_version((hello["major"], hello["minor"]), (answer["major"], answer["minor"]))
        if version and (final["major"], final["minor"]) != version:
            out.append(("client", "mm2-lowest-version", f"the client's final handshake says {final['major']}."
                        f"{final['minor']}, not the lower of the hellos' versions ({version[0]}.{version[1]})"))
        required, optional = _names(final["required"]), _names(final["optional"])
        lists = [_names(hs[key]) for hs in (hello, answer) for key in ("required", "optional")]
        if required is None or optional is None or None in lists:
            return out
        client_required, client_optional, server_required, server_optional = lists
        dropped = [name for name in client_required + server_required if name not in required]
        if dropped:
            out.append(("client", "mm2-client-final", f"the client's final handshake leaves out the required "
                        f"extension(s) {dropped} of the hellos"))
        unoffered = [name for name in optional if name not in client_optional + server_optional]
        if unoffered:
            out.append(("client", "mm2-client-final", f"the client's final handshake activates {unoffered}, which "
                        "neither hello offered"))
        # activated = offered by the client and listed by the server's hello (the client's offers it supports)
        unechoed = [name for name in optional if name in client_optional and name not in server_optional]
        if unechoed:
            out.append(("client", "mm2-client-final", f"the client's final handshake activates {unechoed}, which "
                        "the server's hello did not list: the server does not support it"))
        listed = [name for name in optional if name in client_optional + server_optional]
        order = [name for name in dict.fromkeys(client_optional) if name in listed] + [
            name for name in dict.fromkeys(server_optional) if name in listed and name not in client_optional]
        if listed != order and len(set(listed)) == len(listed):
            out.append(("client", "mm2-client-final", f"the client's final handshake lists its optional extensions "
                        f"as {listed}, not in client-offered order then server-offered order ({order})"))
        if self.services:
            own = {*client_required, *client_optional}
            suggested = [name for name in optional if name in server_optional and client_lacks(name, own)]
            if suggested:
                out.append(("client", "mm2-client-final", f"the client's final handshake activates the server's "
                            f"suggestion(s) {suggested}, which the test clients do not implement"))
            lacking = [name for name in required if service_lacks(name)]
            if lacking and self.owed_error is None and "client" not in self.error_at:
                self.owed_error = (ts, f"the client's final handshake required {lacking}")
        self.extensions = required + optional
        parsed = parse_extension_list(final["required"]) + parse_extension_list(final["optional"])
        try:
            window = ack_window(parsed)
        except (CodecError, ValueError):
            window = None
        if window:
            self.windows = {side: ReceiveWindow(window) for side in ("client", "server")}
        return out

    # -- after it ------------------------------------------------------------------------------

    def _extension(self, side: str, f):
        ext_id = f["id"]
        if ext_id > len(self.extensions):
            return self._once(side, "mm2-extension-index", f"the {side} sent an EXTENSION frame with ID {ext_id}; the "
                              f"final handshake gave IDs 1..{len(self.extensions)} ({';'.join(self.extensions)})")
        peer = other(side)
        if self.extensions[ext_id - 1] in ("ack", "batch-ack") and "ack" in f and peer in self.windows:
            window = self.windows[peer]
            before = window.unacked
            try:
                window.ack(f["ack"])
            except LocalProtocolError:
                return []  # an ack of nothing outstanding: the sender's window is not shortened by it
            if peer == "server":
                self.push.acked(before[:len(before) - len(window.unacked)], len(before) >= window.size)
            if before and f["ack"] > before[-1]:  # past the last number sent, yet unacked: across the wrap
                self.taken = ("mm2-ack-across-wrap", f"the client's ack of {f['ack']}, sent before the wrap and "
                              f"unacked (the last number sent: {before[-1]})")
        return []

    def _message(self, side: str, f):
        out = []
        if f["max_fragment"] > MAX_FRAGMENT:
            out += self._once(side, "mm2-split-over-1mib", f"the {side} sent a MESSAGE frame of {f['max_fragment']} "
                              "bytes payload in one frame, not split at 1 MiB")
        window = self.windows.get(side)
        if window is not None and other(side) not in self.blind:
            try:
                window.received(f["seq"])
            except ProtocolViolation:
                out += self._once(side, _WINDOW_RULE[side], f"the {side} sent MESSAGE {f['seq']} with the ack window "
                                  f"of {window.size} full (unacked: {list(window.unacked)[:10]})", other(side))
        return out

    # -- pub/sub: this connection's part of a topic (the checks across connections) -----------

    def _pubsub(self, side: str, f, kind: str, ts: float) -> None:
        if kind == "command":
            topic = (f.get("args") or {}).get("destination") if side == "client" else None
            if isinstance(topic, str) and f.get("name") in ("subscribe", "unsubscribe"):
                fact = self._topic(topic, ts)
                if fact is not None and f["name"] == "subscribe" and fact["subscribed"] is None:
                    fact["subscribed"] = ts
                    self.unproven.add(topic)
                    self.ambiguous |= set(self.recent)
                elif fact is not None:
                    fact["unsubscribed"] = True
            return
        destination = f.get("destination", "")
        if side == "client":
            fact = self._topic(destination, ts)
            publishing = fact is not None and len(fact["published"]) < _KEPT
            pubsub = "pubsub" in (self.extensions or ())
            if not (self.unproven or publishing or pubsub):
                return
            digest = _digest(destination, f.get("payload") or b"")
            for _, _, before, after in self.unread:
                if digest not in before and len(after) < _KEPT:
                    after.add(digest)
            if publishing and pubsub:
                self.unread.append((destination, len(fact["published"]), set(self.recent) | {digest}, set()))
            if pubsub:
                self.recent.append(digest)
            if self.unproven and digest not in self.ambiguous:
                self.sent_after.append((digest, frozenset(self.unproven)))
            if publishing:
                fact["published"].append((ts, digest, self.where()))
                fact["read"].append(None)
            return
        fact = self.topics.get(destination)
        delivering = fact is not None and fact["subscribed"] is not None
        if not (self.sent_after or delivering or self.unread):
            return
        digest = _digest(destination, f.get("payload") or b"")
        # the server sent back a message the client sent after publishing: it read the publication
        for entry in [e for e in self.unread if digest in e[3]]:
            self.topics[entry[0]]["read"][entry[1]] = ts
            self.unread.remove(entry)
        # the server sent back a message the client sent after subscribing: it read the subscribe
        proven = {topic for sent, topics in self.sent_after if sent == digest for topic in topics}
        if delivering:
            proven.add(destination)  # a delivery on the topic: the subscription is in place
            if len(fact["delivered"]) < 4 * _KEPT:
                fact["delivered"].append((ts, digest))
            else:
                fact["overflow"] = True  # deliveries not kept: whether one came is unknown
        for topic in proven & self.unproven:
            self.topics[topic]["proven"] = ts
        self.unproven -= proven
        if not self.unproven:
            self.sent_after.clear()
            self.ambiguous.clear()

    def _topic(self, topic: str, ts: float) -> dict | None:
        if topic not in self.topics and len(self.topics) < _KEPT:
            self.topics[topic] = {"first_ts": ts, "subscribed": None, "proven": None, "unsubscribed": False,
                                  "published": [], "read": [], "delivered": [], "overflow": False,
                                  "window": self.prompt}
        return self.topics.get(topic)

    def session_facts(self):
        done = {"ended": bool(self.ended), "last_ts": self.last_ts, "complete": "server" not in self.blind}
        return [(topic, {**fact, **done}) for topic, fact in self.topics.items()
                if fact["subscribed"] is not None or fact["published"]]

    # -- ends ----------------------------------------------------------------------------------

    def on_end(self, side: str, ts: float, how: str, pending: int):
        if side == "client":
            self.refused.spoil()  # an ERROR may answer the end (one mid-frame owes the close, ERROR allowed)
        self.ended.add(side)
        self.last_ts = max(self.last_ts, ts)
        peer = other(side)
        out = []
        if side == self.must_error and peer not in self.error_at:  # error_at[peer]: the side sent an ERROR
            out += self._once(side, "mm2-version-error", f"the {side} closed ({how}) after the {peer}'s hello of "
                              f"major {self.hellos[peer]['major']} without an ERROR frame")
        if self.owed_error is not None and peer not in self.ended:
            out += self._unanswered(side, ts, how, pending)
        if side == "client" and peer not in self.ended:
            out += self._push_stalled(f"the client closed ({how})", ts)
            if pending:
                out += self._read_timeout_kept(ts, how, pending)
                self.ended_mid_frame = (ts, pending)  # an RST after it (on_abort) dates the server's close
        since = self.error_at.get(peer)
        if since is None or peer in self.ended or ts - since < self.prompt:
            return out
        return out + self._once(peer, "mm2-error-frame", f"the {peer} kept the connection open {ts - since:.3f} s "
                                f"after it received an ERROR frame; the {side} closed it ({how})")

    def on_abort(self, side: str, ts: float):
        """The client's RST after its FIN inside a frame, the server's side still open a close window
        later: a stream that ends mid-frame is closed (ERROR first allowed; docs/profiles)."""
        if side != "client" or self.ended_mid_frame is None or "server" in self.ended or "server" in self.blind:
            return []
        since, pending = self.ended_mid_frame
        if ts - since < self.close_window:
            return []
        return self._once("server", "mm2-payload-length", f"the client's stream ended (FIN) {pending} bytes into a "
                          f"frame, and the server kept its side open for {ts - since:.3f} s (the close window is "
                          f"{self.close_window:.3f} s), until the client gave up (RST)")

    def _unanswered(self, side: str, ts: float, how: str, pending: int):
        """The server owes ERROR (owed_error): it closed without one, or the client closed a close window
        after the message that called for it with the server still silent."""
        since, what = self.owed_error
        if side == "server" and not pending:
            return self._once("server", "mm2-server-lacks-required", f"the server closed ({how}) without an ERROR "
                              f"frame after {what}, which the test service does not implement", "server")
        if side == "client" and ts - since >= self.close_window:
            return self._once("server", "mm2-server-lacks-required", f"the server sent no ERROR in {ts - since:.3f} s "
                              f"after {what}, which the test service does not implement; the client closed ({how})",
                              "server")
        return []

    def _read_timeout_kept(self, ts: float, how: str, pending: int):
        """The client closed with ``pending`` bytes of a frame a read window after its last bytes, and
        the server sent no ERROR within that window: it kept no read timeout (services on only)."""
        last = self.last_data.get("client")
        answered = self.error_at.get("client")  # the server's ERROR
        if not self.services or self.blind or last is None or ts - last < self.read_window:
            return []
        if answered is not None and answered - last < self.read_window:
            return []
        frame = "hello" if "client" not in self.hellos else "frame"
        return self._once("server", "mm2-identity" if frame == "hello" else "mm2-payload-length",
                          f"the client's {frame} stalled after {pending} bytes for {ts - last:.3f} s with no ERROR "
                          f"from the server within {self.read_window:.3f} s (its read timeout, {self.read_timeout:g} s, "
                          f"and the suite's 3 s, times the run's --time-scale); then the client closed ({how})")

    def _push_stalled(self, what: str, ts: float):
        """test/push's messages owed, the server's window (counted across the wrap) open since an ack
        across the wrap, and the server silent a wait long: the test service sends them at once."""
        window = self.windows.get("server")
        if not self.services or window is None or self.blind or self.error_at or "server" in self.ended:
            return []
        stalled = self.push.stalled(ts, window.size - len(window.unacked))
        if stalled is None:
            return []
        return self._once("server", "mm2-ack-across-wrap", f"the server sent nothing for {stalled:.3f} s with "
                          f"{self.push.owed} of test/push's messages owed and its window open for "
                          f"{window.size - len(window.unacked)}, room the client's ack across the wrap gave it "
                          f"(acks are cumulative across the wrap); then {what}", "client")

    def on_gap(self, side: str) -> None:
        super().on_gap(side)
        self.windows.pop(other(side), None)  # its acks may be in what is not seen

    def _once(self, side: str, requirement: str, message: str, *needs):
        if (side, requirement) in self.reported:
            return []
        self.reported.add((side, requirement))
        return [(side, requirement, message, *needs)]
