"""mc0 fuzz targets.

``mc0-codec``  the first byte picks a check:
    0 decode_message on frames cut from the input (length-prefixed records,
      see :func:`fuzz.common.records`): a message that decodes encodes back
      to exactly those frames, and :func:`salvage_id` agrees with its ``ID``;
      ``salvage_id`` takes any frames;
    1 the same frames without the delimiter (``delimiter=False``);
    2 the input as ZMTP wire bytes (one message, frames with MORE), then as 0;
    3 a message built from the records (verb, pairs, byte 1 bit 0: a
      separator, the rest positional) encodes, or is refused with CodecError,
      and decodes back to itself.
``mc0-broker``  the sans-IO broker with up to four peers: each record is one
    step (first octet: bits 0-1 the peer, bits 2-4 what it does: 0-4 send the
    message whose frames are the rest of the record (nested records), 5 let
    time pass and tick, 6 detach, 7 attach).  Checked after every step:
    everything the broker sends decodes and uses a broker verb; the sender
    gets at most one OK/ERROR, exactly one carrying the request's ID when it
    has one, ERROR (never OK) when the request is refused, an ERROR for
    whatever does not decode; deliveries go only to subscribers of the PUT's
    topic, as ``MESSAGE TOPIC t <X- headers> '' body``; a tick sends NOOPs
    only; the subscription tables agree with each other.

Allowed: CodecError from the codec; nothing may escape the broker (it
answers every bad input with ERROR).
"""

from __future__ import annotations

from reference_impl.common.errors import CodecError
from reference_impl.mc0 import codec
from reference_impl.mc0.broker import Broker, Refused, check_request
from reference_impl.mc0.codec import BROKER_VERBS, ERROR, MESSAGE, NOOP, OK, PUT, TOPIC, Mc0Message
from reference_impl.zmtp.codec import decode_message, encode_message

from fuzz.common import InvariantViolation, check, must, record, records

MAX_FRAME = 1 << 16
STEP = 0.05
PEERS = 4


def _frames(data: bytes) -> list[bytes]:
    return [payload for _, payload in records(data)]


def _wire_frames(wire: bytes) -> list[bytes]:
    """One ZMTP message's frame bodies (CodecError when the octets are not exactly one)."""
    return decode_message(wire, MAX_FRAME)


def _check_frames(frames: list[bytes], delimiter: bool = True) -> None:
    salvaged = codec.salvage_id(frames) if delimiter else None  # must take anything
    msg = codec.decode_message(frames, delimiter=delimiter)
    again = must(f"{msg!r} does not re-encode", codec.encode_message, msg, delimiter=delimiter)
    check(again == list(frames), f"{msg!r} encodes to {again!r}, not {frames!r}")
    check(all(k != codec.SEPARATOR for k, _ in msg.headers), "a decoded header key is empty")
    if delimiter:
        check(salvaged == msg.id, f"salvage_id gives {salvaged!r}, the message's ID is {msg.id!r}")


def codec_one_input(data: bytes) -> None:
    if len(data) < 2:
        return
    mode, rest = data[0] % 4, data[1:]
    if mode == 0:
        _check_frames(_frames(rest))
    elif mode == 1:
        _check_frames(_frames(rest), delimiter=False)
    elif mode == 2:
        _check_frames(_wire_frames(rest))
    else:
        frames = _frames(rest[1:])
        if not frames:
            return
        verb, body = frames[0], frames[1:]
        pairs = tuple(zip(body[0::2], body[1::2]))
        positional = tuple(body[2 * len(pairs):]) if rest[0] & 1 else None
        msg = Mc0Message(verb, pairs, positional)
        encoded = codec.encode_message(msg)  # CodecError: empty verb or key
        wire = encode_message(encoded)
        check(codec.decode_message(_wire_frames(wire)) == msg, f"{msg!r} does not survive the wire")


# -- the broker ------------------------------------------------------------------------


def _decode_sent(frames: list[bytes]) -> Mc0Message:
    try:
        msg = codec.decode_message(frames)
    except CodecError as exc:
        raise InvariantViolation(f"the broker sent frames mc0 refuses: {frames!r}: {exc}") from None
    check(msg.verb in BROKER_VERBS, f"the broker sent the verb {msg.verb!r}")
    return msg


def _check_tables(broker: Broker) -> None:
    for topic, peers in broker.subscribers.items():
        check(bool(peers), f"an empty subscriber set is kept for {topic!r}")
        for peer in peers:
            check(peer in broker.peers and topic in broker.peers[peer].topics,
                  f"{peer!r} is listed under {topic!r} but does not hold it")
    for peer, state in broker.peers.items():
        for topic in state.topics:
            check(peer in broker.subscribers.get(topic, ()), f"{peer!r} holds {topic!r} but is not listed")


def _check_receive(broker: Broker, peer: int, frames: list[bytes], now: float) -> None:
    subscribers_before = {t: set(p) for t, p in broker.subscribers.items()}
    sends = broker.receive(peer, frames, now)
    try:
        request: Mc0Message | None = codec.decode_message(frames)
    except CodecError:
        request = None
    refused = request is None
    if request is not None:
        try:
            check_request(request)
        except Refused:
            refused = True
    replies = []
    for send in sends:
        msg = _decode_sent(send.frames)
        if msg.verb in (OK, ERROR):
            check(send.peer == peer, f"an {msg.verb!r} went to {send.peer!r}, not to the requester {peer!r}")
            replies.append(msg)
        elif msg.verb == MESSAGE:
            check(request is not None and request.verb == PUT and not refused, "a MESSAGE not caused by a PUT")
            assert request is not None
            topic = request.header(TOPIC)
            check(msg.headers[:1] == ((TOPIC, topic),), f"delivery {msg!r} does not start with TOPIC {topic!r}")
            check(msg.headers[1:] == request.extensions and msg.positional == request.positional,
                  f"delivery {msg!r} does not carry the PUT's X- headers and body untouched")
            check(send.peer in subscribers_before.get(topic, ()), f"{send.peer!r} got {topic!r} unsubscribed")
        else:
            raise InvariantViolation(f"a reply {msg!r} to a request")
    check(len(replies) <= 1, f"{len(replies)} replies to one request")
    request_id = codec.salvage_id(frames) if request is None else request.id
    if refused:
        check([m.verb for m in replies] == [ERROR], f"a refused request got {replies!r}")
    elif request_id is not None:
        check([m.verb for m in replies] == [OK], f"a served request with ID got {replies!r}")
    else:
        check(not replies, f"a served request without ID got {replies!r}")
    if request_id is not None:
        check(replies[0].id == request_id, f"the reply carries ID {replies[0].id!r}, not {request_id!r}")
    elif replies:
        check(replies[0].id is None, f"a reply carries ID {replies[0].id!r} the request did not have")
    if request is not None and request.verb == PUT and not refused:
        deliveries = sorted(s.peer for s in sends if s.frames[1:2] == [MESSAGE])
        check(deliveries == sorted(subscribers_before.get(request.header(TOPIC), ())),
              "a PUT did not reach exactly the topic's subscribers")



def broker_one_input(data: bytes) -> None:
    broker = Broker()
    now = 0.0
    for peer in range(PEERS):
        broker.attach(peer, now)
    for _, step in records(data):
        if not step:
            continue
        peer, op = step[0] & 3, (step[0] >> 2) & 7
        now += STEP
        if op <= 4:
            _check_receive(broker, peer, _frames(step[1:]), now)
        elif op == 5:
            now += (step[1] if len(step) > 1 else 1) * STEP * 10
            absent_before = len(broker.absent)
            for send in broker.tick(now):
                msg = _decode_sent(send.frames)
                check(msg.verb == NOOP and send.peer in broker.peers, f"a tick sent {msg!r} to {send.peer!r}")
            for gone in broker.absent[absent_before:]:
                check(not broker.peers[gone].topics, f"absent {gone!r} keeps its subscriptions")
            deadline = broker.next_deadline()
            check(deadline is None or deadline >= now, f"a tick at {now} leaves the deadline {deadline} overdue")
        elif op == 6:
            broker.detach(peer)
            check(peer not in broker.peers, "a detached peer is still known")
        else:
            broker.attach(peer, now)
        _check_tables(broker)


TARGETS = {"mc0-codec": codec_one_input, "mc0-broker": broker_one_input}


# -- seeds ------------------------------------------------------------------------------


def _records(frames: list[bytes]) -> bytes:
    return b"".join(record(False, f) for f in frames)


def _step(peer: int, op: int, payload: bytes) -> bytes:
    return record(False, bytes([(op << 2) | peer]) + payload)


def seeds(vectors: list[tuple[dict, dict]]) -> dict[str, list[bytes]]:
    codec_seeds: list[bytes] = []
    steps: list[bytes] = []
    exchanges: list[bytes] = []
    for context, test in vectors:
        wire = bytes.fromhex(test["wire"])
        codec_seeds.append(b"\x02" + wire)
        try:
            frames = _wire_frames(wire)
        except CodecError:
            continue
        codec_seeds.append(b"\x00" + _records(frames))
        codec_seeds.append(b"\x01" + _records(frames[1:]))
        codec_seeds.append(b"\x03\x01" + _records(frames[1:]))
        if context.get("kind") == "request":
            steps.append(_step(len(steps) % PEERS, 0, _records(frames)))
        elif context.get("kind") == "exchange":  # the vector's own sequence, on peer 0
            exchange = [_step(0, 0, _records(_wire_frames(bytes.fromhex(w)))) for w in context.get("before", [])]
            if context.get("reconnect"):
                exchange.append(_step(0, 7, b""))
            exchanges.append(b"".join(exchange) + _step(0, 0, _records(frames)))
    session = [
        _step(0, 0, _records([b"", b"CONNECT", b"ID", b"c", b"VERSION", b"0.3", b"TTL", b"1000"])),
        _step(1, 0, _records([b"", b"SUB", b"ID", b"s", b"", b"t", b"u"])),
        _step(2, 0, _records([b"", b"SUB", b"", b"t"])),
        _step(0, 0, _records([b"", b"PUT", b"ID", b"p", b"TOPIC", b"t", b"X-A", b"1", b"", b"body"])),
        _step(0, 5, b"\x0c"),
        _step(1, 0, _records([b"", b"UNSUB", b"", b"t"])),
        _step(2, 6, b""),
        _step(0, 0, _records([b"", b"PUT", b"TOPIC", b"t", b"", b"x", b"y"])),
        _step(2, 7, b""),
        _step(1, 0, _records([b"", b"DISCONNECT", b"ID", b"d"])),
        _step(0, 5, b"\x40"),
        _step(3, 0, _records([b"", b"NOOP", b"ID", b"5", b"X-A"])),
    ]
    broker_seeds = [b"".join(session), b"".join(steps), *exchanges]
    broker_seeds += [b"".join(steps[i:i + 8]) for i in range(0, len(steps), 8)]
    return {"mc0-codec": codec_seeds, "mc0-broker": broker_seeds}
