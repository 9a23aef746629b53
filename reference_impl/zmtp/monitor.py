"""A two-sided ZMTP 3.x wire monitor: both directions of one connection, checked frame by frame.

    monitor = ZmtpMonitor(on_message)         # on_message(side, parts) -> [(rule, detail), ...]
    for violation in monitor.feed(Side.CLIENT, data): ...
    monitor.violations, monitor.notes

It reads what each side sent with the codecs the reference uses (greeting.py, codec.py,
commands.py) and checks what a sender must keep: a valid greeting, the mechanism's handshake
commands in order (NULL: READY; CURVE, RFC 26: HELLO 200 octets and version 1.0, WELCOME 168,
INITIATE >= 257, READY >= 30), no message frame before the handshake ends, and under CURVE
only MESSAGE boxes afterwards, each side's short nonces strictly increasing.  The protocol
above (mc0, MTL) checks whole messages through ``on_message``.  Under CURVE the messages are
boxes with session keys neither side shows: the monitor says so in ``notes`` and checks no
content.  A side whose bytes cannot be read any more (bad greeting, bad frame) is not checked
further: everything after would be noise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable

from reference_impl.common.errors import CodecError
from reference_impl.common.wire_monitor import Side, Violation
from reference_impl.zmtp.codec import StreamDecoder
from reference_impl.zmtp.commands import decode_command, split_command
from reference_impl.zmtp.curve import HELLO_SIZE, MIN_INITIATE_SIZE, MIN_MESSAGE_SIZE, MIN_READY_SIZE, WELCOME_SIZE
from reference_impl.zmtp.greeting import GreetingDecoder


MessageCheck = Callable[[Side, list[bytes]], Iterable[tuple[str, str]]]

# CURVE handshake commands in the order each side sends them, with the size rule of each
_CURVE_STEPS = {
    Side.CLIENT: (("HELLO", lambda n: n == HELLO_SIZE), ("INITIATE", lambda n: n >= MIN_INITIATE_SIZE)),
    Side.SERVER: (("WELCOME", lambda n: n == WELCOME_SIZE), ("READY", lambda n: n >= MIN_READY_SIZE)),
}
# where each command carries its short nonce (RFC 26): name octets, then the fields before it
_NONCE_AT = {"HELLO": 6 + 2 + 72 + 32, "INITIATE": 9 + 96, "READY": 6, "MESSAGE": 8}


@dataclass
class _Direction:
    greeting: GreetingDecoder = field(default_factory=GreetingDecoder)
    frames: StreamDecoder = field(default_factory=StreamDecoder)
    step: int = 0  # handshake commands seen
    ready: bool = False  # the handshake is over for this side's sending
    broken: bool = False
    parts: list[bytes] = field(default_factory=list)
    nonce: int = 0


class ZmtpMonitor:
    def __init__(self, on_message: MessageCheck | None = None) -> None:
        self.on_message = on_message
        self.violations: list[Violation] = []
        self.notes: list[str] = []
        self.frames = 0
        self.messages = 0
        self._sides = {side: _Direction() for side in Side}

    @property
    def mechanism(self) -> str | None:
        greeting = self._sides[Side.SERVER].greeting.greeting or self._sides[Side.CLIENT].greeting.greeting
        return greeting.mechanism if greeting else None

    def feed(self, side: Side, data: bytes) -> list[Violation]:
        """The violations the bytes SIDE sent just now complete."""
        before = len(self.violations)
        state = self._sides[side]
        if state.broken:
            return []
        try:
            if state.greeting.greeting is None:
                data = state.greeting.feed(data)
                if state.greeting.greeting is None:
                    return []
                self._greeted(side)
            for frame in state.frames.frames(data):
                self._frame(side, state, frame)
                self.frames += 1
        except CodecError as exc:
            self._violate(side, exc.code, str(exc))
            state.broken = True
        return self.violations[before:]

    def _violate(self, side: Side, rule: str, detail: str = "") -> None:
        self.violations.append(Violation(side, rule, self.frames, detail))

    def _greeted(self, side: Side) -> None:
        greeting = self._sides[side].greeting.greeting
        other = self._sides[side.other].greeting.greeting
        if greeting.mechanism != "NULL" and greeting.as_server != (side is Side.SERVER):
            # read as the reference does (zmtp/connection.py): libzmq 4.3 sends 0 even as a CURVE or PLAIN
            # server, which is not held against it; a client that claims the server role is
            if side is Side.CLIENT:
                self._violate(side, "client-as-server", f"as-server 1 from the {greeting.mechanism} client")
            else:
                self.notes.append(f"the {greeting.mechanism} server's greeting says as-server 0 (as libzmq's "
                                  "does); not held against it")
        if other is not None and other.mechanism != greeting.mechanism:
            self.notes.append(f"mechanisms differ: {side.value} {greeting.mechanism}, "
                              f"{side.other.value} {other.mechanism} (the peers must close)")
        if greeting.mechanism == "CURVE" and side is Side.SERVER:
            self.notes.append("CURVE: messages are encrypted with session keys; checked: greetings, handshake "
                              "commands and their sizes, framing, MESSAGE boxes only, increasing nonces; "
                              "the messages' content is not checked")

    def _frame(self, side: Side, state: _Direction, frame) -> None:
        mechanism = state.greeting.greeting.mechanism
        if not state.ready:
            if not frame.command:
                self._violate(side, "message-before-handshake", f"{len(frame.body)}-octet message frame")
                return
            name, _ = split_command(frame.body)
            if name == "ERROR":
                state.broken = True  # the side gives up: nothing more to check from it
                return
            if mechanism == "CURVE":
                self._curve_step(side, state, name, frame.body)
            elif name == "READY":
                decode_command(frame.body)
                state.ready = True
            elif mechanism == "NULL":
                self._violate(side, "null-not-ready-first", f"{name} before READY")
            else:
                state.ready = True  # another mechanism's handshake: not followed here
            return
        if mechanism == "CURVE":
            self._curve_message(side, state, frame)
        elif frame.command:
            decode_command(frame.body)
        else:
            self._message_part(side, state, frame)

    def _curve_step(self, side: Side, state: _Direction, name: str, body: bytes) -> None:
        steps = _CURVE_STEPS[side]
        expected, size_ok = steps[state.step]
        if name != expected:
            self._violate(side, "curve-handshake-order", f"{name} where {expected} belongs")
            state.broken = True
            return
        if not size_ok(len(body)):
            self._violate(side, "curve-command-size", f"{name} of {len(body)} octets")
        if name == "HELLO" and body[6:8] != b"\x01\x00":
            self._violate(side, "curve-hello-version", f"version {body[6:8].hex()}, not 1.0")
        if name != "WELCOME":  # WELCOME carries a long nonce
            self._nonce(side, state, name, body)
        state.step += 1
        state.ready = state.step == len(steps)

    def _curve_message(self, side: Side, state: _Direction, frame) -> None:
        # libzmq sends each MESSAGE in a frame without the COMMAND flag: both forms are read
        if frame.command and frame.body[:1] == b"\x05" and frame.body[1:6] == b"ERROR":
            state.broken = True
            return
        if frame.body[:8] != b"\x07MESSAGE":
            self._violate(side, "clear-frame-under-curve", f"{len(frame.body)}-octet frame not boxed in MESSAGE")
            return
        if frame.more:
            self._violate(side, "curve-message-more", "MORE set on the frame carrying a MESSAGE")
        if len(frame.body) < MIN_MESSAGE_SIZE:
            self._violate(side, "curve-command-size", f"MESSAGE of {len(frame.body)} octets")
            return
        self._nonce(side, state, "MESSAGE", frame.body)

    def _nonce(self, side: Side, state: _Direction, name: str, body: bytes) -> None:
        at = _NONCE_AT[name]
        nonce = int.from_bytes(body[at:at + 8], "big")
        if nonce <= state.nonce:
            self._violate(side, "curve-nonce-not-increasing", f"{name} nonce {nonce} after {state.nonce}")
        state.nonce = max(state.nonce, nonce)

    def _message_part(self, side: Side, state: _Direction, frame) -> None:
        state.parts.append(frame.body)
        if frame.more:
            return
        parts, state.parts = state.parts, []
        self.messages += 1
        if self.on_message is not None:
            for rule, detail in self.on_message(side, parts):
                self._violate(side, rule, detail)
