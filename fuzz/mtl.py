"""11/MTL fuzz targets.

``mtl-codec``  the first byte picks a decoder:
    0 decode_data on frames cut from the input (length-prefixed records, see
      :func:`fuzz.common.records`): the header re-encodes to exactly its
      octets, and a Content/Response body too;
    1 decode_field_table (re-encodes exactly);
    2 control.decode_request (frames as in 0): encodes back to a request that
      decodes to the same command and the same parsed body;
    3 control.decode_reply, the same way;
    4 sasl.decode_plain (re-encodes exactly);
    5 sasl.b64decode of the input as text (what it returns encodes back and
      decodes to the same octets).
``mtl-connection``  the test service (reference_impl.mtl.service.Broker) with
    two control peers (ControlSession, SASL PLAIN and SCRAM-SHA-256 included)
    and four data connections, driven as server.py drives it.  Byte 0 sets
    the options (bit 0 anonymous, bit 1 a 1 s authentication TTL, bit 2 no
    heartbeats); each record after it is one step (first octet: bits 0-1 the
    connection, bits 2-4 what happens):
      0 a control request whose frames (envelope included) are the rest of
        the record, nested records; dropped when ill-formed, as server.py does;
      1 Connection.Authorize, mechanism picked by the next octet, the rest the
        raw SASL response (base64-encoded here);
      2 one step of a SCRAM-SHA-256 client for alice (next octet bit 0: right
        or wrong password), fed the server's last challenge (four exchanges per
        input at most: each costs a PBKDF2);
      3 a scripted control request (Open, Profile test/confirm-test,
        Reader/Writer none/full) picked by the next octet;
      4 a data message: frames from the rest of the record;
      5 a Lease presenting a token the control side granted (next octet picks it);
      6 time passes (next octet x 0.1 s), then tick;
      7 the data connection closes, or opens if it is closed.
    Checked: every well-formed control request gets one reply whose code is
    one the spec defines and which encodes to JSON that decodes back to it;
    SCRAM with the right password ends in 201 and the server-final proves the
    password, with a wrong one in 401; everything the broker sends is a
    well-formed data command for an open connection; every Response answers
    the sequence of the command it answers; closes name open connections.

Allowed: CodecError (and ProtocolViolation) from the decoders; nothing may
escape the control sessions or the broker.
"""

from __future__ import annotations

import contextlib
import json

import scramp.core

from reference_impl.common.errors import CodecError, IncompleteFrame
from reference_impl.mtl import codec, control, sasl
from reference_impl.mtl.codec import Content, Lease, Response, decode_data, encode_data
from reference_impl.mtl.control import Request
from reference_impl.mtl.service import TEST_USERS, Broker, BrokerOptions
from reference_impl.zmtp.codec import decode_frame

from fuzz.common import InvariantViolation, check, must, record, records

#: Derived once: a PBKDF2 per broker would cost more than the rest of an input.
CREDENTIALS = sasl.Credentials(TEST_USERS)


_SALTED: dict[tuple, bytes] = {}


@contextlib.contextmanager
def _memoized_pbkdf2():
    """The SCRAM client's salted password is a pure function of (hash, password, salt, rounds), and with
    one salt per user the same few values recur in every input: while a target runs, scramp's ``hi``
    (scramp's module, not the code under test; the server side never derives) computes each once."""
    real = scramp.core.hi

    def hi(hf, password, salt, iterations):
        key = (hf, bytes(password), bytes(salt), int(iterations))
        if key not in _SALTED:
            if len(_SALTED) > 64:
                _SALTED.clear()
            _SALTED[key] = real(hf, password, salt, iterations)
        return _SALTED[key]

    scramp.core.hi = hi
    try:
        yield
    finally:
        scramp.core.hi = real


REPLY_CODES = {200, 201, 202, 400, 401, 402, 403, 501}
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "scram-sha-256", "plain", "ANONYMOUS", "")
SCRIPTED = [
    ("Connection.Open", {"protocol": {"name": "MTL", "version": 1}, "virtual-host": "test-env"}),
    ("Connection.Profile", {"profile": "test"}),
    ("Connection.Profile", {"profile": "confirm-test"}),
    ("Connection.Reader", {"resources": ["resource"], "confirm": "none"}),
    ("Connection.Reader", {"resources": ["resource"], "confirm": "full"}),
    ("Connection.Writer", {"resources": [], "confirm": "none"}),
    ("Connection.Writer", {"resources": ["resource"], "confirm": "full"}),
    ("Connection.Authorize", {"mechanism": "PLAIN", "response": sasl.b64encode(b"\0alice\0wonderland")}),
]
STEP = 0.05
#: SCRAM exchanges per input: each builds a client (SASLprep, nonces) and a proof; bounded so they do not
#: crowd out the rest of the state machine.
SCRAM_PROOFS = 4


def _frames(data: bytes) -> list[bytes]:
    return [payload for _, payload in records(data)]


def codec_one_input(data: bytes) -> None:
    if len(data) < 2:
        return
    mode, rest = data[0] % 6, data[1:]
    if mode == 0:
        frames = _frames(rest)
        command = decode_data(frames)
        header = must(f"{command!r} does not re-encode", codec.encode_header, command)
        check(header == frames[0], f"{command!r} re-encodes to {header.hex()}, not {frames[0].hex()}")
        if isinstance(command, (Content, Response)):
            body = must(f"{command!r}: the body does not re-encode", codec.encode_body, command)
            check(body == frames[1], f"{command!r}: the body re-encodes to {body!r}")
    elif mode == 1:
        table = codec.decode_field_table(rest)
        again = must(f"{table!r} does not re-encode", codec.encode_field_table, table)
        check(again == rest, f"{table!r} does not re-encode to its octets")
    elif mode == 2:
        request = control.decode_request(_frames(rest))
        frames = must(f"{request!r} does not re-encode", control.encode_request, request.command, request.body)
        check(_strict_json(frames[1]), f"{request!r} encodes to a body that is not JSON: {frames[1][:80]!r}")
        again = must(f"{request!r} does not read back", control.decode_request, frames)
        check(again == request, f"{request!r} reads back as {again!r}")
    elif mode == 3:
        reply = control.decode_reply(_frames(rest))
        if reply.body is None:
            return  # a JSON null body decodes, but encode_reply(code, None) means "the default body"
        frames = must(f"{reply!r} does not re-encode", control.encode_reply, reply.code, reply.body)
        check(_strict_json(frames[1]), f"{reply!r} encodes to a body that is not JSON: {frames[1][:80]!r}")
        again = must(f"{reply!r} does not read back", control.decode_reply, frames)
        check(again == reply, f"{reply!r} reads back as {again!r}")
    elif mode == 4:
        authzid, authcid, password = sasl.decode_plain(rest)
        check(sasl.plain_response(authcid, password, authzid) == rest, "PLAIN does not re-encode")
    else:
        decoded = sasl.b64decode(rest.decode("latin-1"))
        again = must("base64 of decoded octets", sasl.b64decode, sasl.b64encode(decoded))
        check(again == decoded, "base64 does not round-trip")


def _strict_json(data: bytes) -> bool:
    """Whether ``data`` is RFC 8259 JSON (no NaN/Infinity), parsed independently of control.decode_json."""
    def refuse(name: str) -> None:
        raise ValueError(name)

    try:
        json.loads(data.decode("utf-8"), parse_constant=refuse)
    except (ValueError, RecursionError):
        return False
    return True


# -- the service -------------------------------------------------------------------------


class _Scram:
    """The client side of one SCRAM exchange, for a control peer."""

    def __init__(self, right: bool) -> None:
        self.right = right
        self.exchange = sasl.ScramClientExchange("alice", "wonderland" if right else "looking-glass", "fuzznonce")
        self.stage = "first"


class Harness:
    def __init__(self, flags: int) -> None:
        options = BrokerOptions(anonymous=bool(flags & 1), auth_ttl=1.0 if flags & 2 else None)
        if flags & 4:
            options.heartbeat_interval = options.heartbeat_timeout = None
        self.broker = Broker(options, data_port=5556, credentials=CREDENTIALS)
        self.sessions = [self.broker.control_session() for _ in range(2)]
        self.challenges: list[bytes | None] = [None, None]
        self.scram: list[_Scram | None] = [None, None]
        self.tokens: list[str] = []
        self.open: set[int] = set()
        self.now = 0.0
        self.scram_proofs = SCRAM_PROOFS

    # -- control ------------------------------------------------------------------

    def control_frames(self, peer: int, frames: list[bytes]) -> control.Reply | None:
        try:
            envelope, rest = control.split_envelope(frames)
            request = control.decode_request(rest)
        except CodecError:
            return None  # ill-formed: dropped, as server.py does
        check(envelope[-1:] == [b""], "the envelope does not end with the delimiter")
        return self.control(peer, request)

    def control(self, peer: int, request: Request, scram_step: bool = False) -> control.Reply:
        if not scram_step:
            self.scram[peer % 2] = None  # another request interleaved: the server's exchange is not ours now
        reply = self.sessions[peer % 2].handle(request, self.now)
        check(reply.code in REPLY_CODES, f"reply code {reply.code} to {request!r}")
        frames = control.encode_reply(reply.code, reply.body)
        try:
            again = control.decode_reply(frames)
        except CodecError as exc:
            raise InvariantViolation(f"the reply {reply!r} to {request!r} is not well-formed: {exc}") from None
        check(again == reply, f"the reply {reply!r} reads back as {again!r}")
        if reply.code == 402:
            self.challenges[peer % 2] = sasl.b64decode(reply.body["challenge"])
        if reply.code == 202:
            self.tokens.append(reply.body["lease"])
        return reply

    def authorize(self, peer: int, mechanism: str, response: bytes, scram_step: bool = False) -> control.Reply:
        return self.control(peer, Request("Connection.Authorize",
                                          {"mechanism": mechanism, "response": sasl.b64encode(response)}), scram_step)

    def scram_step(self, peer: int, right: bool) -> None:
        p = peer % 2
        scram = self.scram[p]
        if scram is None:
            if self.scram_proofs <= 0:
                return
            self.scram_proofs -= 1
            scram = self.scram[p] = _Scram(right)
            self.challenges[p] = None
            reply = self.authorize(peer, "SCRAM-SHA-256", scram.exchange.client_first(), True)
            if reply.code == 402:
                scram.stage = "final"
            else:
                self.scram[p] = None
            return
        challenge = self.challenges[p]
        if scram.stage == "final" and challenge is not None:
            try:
                final = scram.exchange.client_final(challenge)
            except Exception:  # noqa: BLE001 - a challenge from another exchange: start again
                self.scram[p] = None
                return
            reply = self.authorize(peer, "SCRAM-SHA-256", final, True)
            if scram.right:
                check(reply.code == 402, f"a right SCRAM proof got {reply!r}")
                check(scram.exchange.verify_server_final(sasl.b64decode(reply.body["challenge"])),
                      "the server-final message does not prove the password")
                scram.stage = "ack"
            else:
                check(reply.code == 401, f"a wrong SCRAM proof got {reply!r}")
                self.scram[p] = None
        elif scram.stage == "ack":
            reply = self.authorize(peer, "SCRAM-SHA-256", b"", True)
            check(reply.code == 201 and self.sessions[p].user == "alice", f"a finished SCRAM exchange got {reply!r}")
            self.scram[p] = None
        else:
            self.scram[p] = None

    # -- data ----------------------------------------------------------------------

    def data(self, key: int, frames: list[bytes]) -> None:
        if key not in self.open:
            self.broker.data_open(key, self.now)
            self.open.add(key)
        try:
            sent = decode_data(frames)
        except CodecError:
            sent = None
        out = self.broker.data_message(key, frames, self.now)
        self.check_output(out)
        if sent is not None and hasattr(sent, "seq") and not isinstance(sent, (Response, codec.Confirm, codec.Reject)):
            answers = [decode_data(f) for k, f in out.sends if k == key]
            responses = [a for a in answers if isinstance(a, Response)]
            for response in responses:
                check(response.seq == sent.seq, f"{response!r} answers {sent!r}")

    def check_output(self, out) -> None:
        for key, frames in out.sends:
            check(key in self.open, f"the broker wrote to {key!r}, which is not open")
            try:
                decode_data(frames)
            except CodecError as exc:
                raise InvariantViolation(f"the broker sent an ill-formed command {frames!r}: {exc}") from None
        for key in out.closes:
            check(key in self.open, f"the broker closed {key!r}, which is not open")
            self.open.discard(key)

    def tick(self, seconds: float) -> None:
        self.now += seconds
        self.check_output(self.broker.tick(self.now))
        deadline = self.broker.next_deadline()
        check(deadline is None or deadline > self.now, f"a tick at {self.now} leaves {deadline} overdue")


def connection_one_input(data: bytes) -> None:
    if len(data) < 2:
        return
    with _memoized_pbkdf2():
        _connection(data)


def _connection(data: bytes) -> None:
    h = Harness(data[0])
    for _, step in records(data[1:]):
        if not step:
            continue
        who, op, arg, rest = step[0] & 3, (step[0] >> 2) & 7, step[1] if len(step) > 1 else 0, step[2:]
        h.now += STEP
        if op == 0:
            h.control_frames(who, _frames(step[1:]))
        elif op == 1:
            h.authorize(who, MECHANISMS[arg % len(MECHANISMS)], rest)
        elif op == 2:
            h.scram_step(who, bool(arg & 1))
        elif op == 3:
            command, body = SCRIPTED[arg % len(SCRIPTED)]
            h.control(who, Request(command, body))
        elif op == 4:
            h.data(who, _frames(step[1:]))
        elif op == 5:
            if h.tokens:
                h.data(who, encode_data(Lease(int.from_bytes(rest[:8], "big"), h.tokens[arg % len(h.tokens)])))
        elif op == 6:
            h.tick(arg * 0.1)
        elif who in h.open:
            h.broker.data_close(who)
            h.open.discard(who)
        else:
            h.broker.data_open(who, h.now)
            h.open.add(who)


TARGETS = {"mtl-codec": codec_one_input, "mtl-connection": connection_one_input}


# -- seeds ------------------------------------------------------------------------------


def _records(frames: list[bytes]) -> bytes:
    return b"".join(record(False, f) for f in frames)


def _step(who: int, op: int, payload: bytes = b"") -> bytes:
    return record(False, bytes([(op << 2) | who]) + payload)


def _zmtp_frames(wire: bytes) -> list[bytes] | None:
    parts, at = [], 0
    try:
        while at < len(wire):
            frame, used = decode_frame(wire[at:])
            parts.append(frame.body)
            at += used
            if not frame.more:
                break
    except (CodecError, IncompleteFrame):
        return None
    return parts


def seeds(vectors: list[tuple[dict, dict]]) -> dict[str, list[bytes]]:
    codec_seeds: list[bytes] = []
    conn_seeds: list[bytes] = []
    control_steps: list[bytes] = []
    data_steps: list[bytes] = []
    for context, test in vectors:
        wire = bytes.fromhex(test["wire"])
        kind = context.get("kind")
        if kind == "field-table":
            codec_seeds.append(b"\x01" + wire)
        elif kind == "sasl-plain":
            codec_seeds.append(b"\x04" + wire)
            control_steps.append(_step(0, 1, b"\x00" + wire))
        elif kind in ("data", "control-request", "control-reply"):
            frames = _zmtp_frames(wire)
            if frames is None:
                continue
            if kind == "data":
                codec_seeds.append(b"\x00" + _records(frames))
                data_steps.append(_step(len(data_steps) % 4, 4, _records(frames)))
            elif kind == "control-request":
                codec_seeds.append(b"\x02" + _records(frames[1:]))
                control_steps.append(_step(0, 0, _records(frames)))
            else:
                codec_seeds.append(b"\x03" + _records(frames[1:]))
    codec_seeds += [b"\x05" + sasl.b64encode(b"\0alice\0wonderland").encode(), b"\x05QQ=="]
    login = [_step(0, 3, b"\x00"), _step(0, 3, b"\x07"), _step(0, 3, b"\x02"), _step(0, 3, b"\x04"),
             _step(0, 3, b"\x06")]
    scram = [_step(1, 3, b"\x00"), _step(1, 2, b"\x01"), _step(1, 2, b"\x01"), _step(1, 2, b"\x01"),
             _step(1, 3, b"\x01"), _step(1, 3, b"\x03"), _step(1, 2, b"\x00"), _step(1, 2, b"\x00")]
    flow = [_step(0, 5, b"\x00" + (1).to_bytes(8, "big")), _step(1, 5, b"\x01" + (2).to_bytes(8, "big")),
            _step(2, 5, b"\x02" + (3).to_bytes(8, "big")),
            _step(0, 4, _records(encode_data(codec.Summon(4, "resource")))),
            _step(1, 4, _records(encode_data(codec.Content(5, "resource", (("k", "v"),), b"hello")))),
            _step(2, 4, _records(encode_data(codec.Content(6, "", (), b"x")))),
            _step(0, 6, b"\x19"),
            _step(0, 4, _records(encode_data(codec.Reject(1, True, True)))),
            _step(0, 4, _records(encode_data(codec.Confirm(2, False)))),
            _step(0, 4, _records(encode_data(codec.Dismiss(7, "resource")))),
            _step(0, 4, _records(encode_data(codec.Ping()))),
            _step(3, 7), _step(0, 6, b"\xff")]
    for flags in (0, 1, 2, 4):
        conn_seeds.append(bytes([flags]) + b"".join(login + scram + flow))
    conn_seeds.append(b"\x00" + b"".join(control_steps))
    conn_seeds.append(b"\x01" + b"".join(login[:1] + data_steps))
    conn_seeds.append(b"\x00" + b"".join(login + data_steps))
    return {"mtl-codec": codec_seeds, "mtl-connection": conn_seeds}
