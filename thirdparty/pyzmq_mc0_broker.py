"""A small third-party mc0 broker on pyzmq: a libzmq ROUTER socket with libzmq's own CURVE.

    python thirdparty/pyzmq_mc0_broker.py --port 5555 [--null] [--curve-secret FILE]

Written apart from reference_impl (it imports nothing from it): ZMTP, the
greeting, CURVE and framing are libzmq's; mc0 is parsed here.  The suite
runs it as a ``cmd:`` target and reports its grades beside the reference's.

Behaviour, from docs/profiles/mc0.md: every message is '' VERB k v ... ['' positional...];
an ID gets one OK or ERROR carrying it; malformed input and unknown verbs get ERROR;
PUT reaches the exact-topic subscribers as MESSAGE TOPIC t <X- headers> '' body...;
CONNECT VERSION 0.3 or 0.2; TTL: NOOP after half a TTL of silence, absent (subscriptions
dropped) after a whole TTL.  Reserved headers it does not know are ignored.

The CURVE secret defaults to the suite's test server key (reference_impl/mc0/testkeys.json,
read as data).  ``--null`` makes the socket a NULL (clear-text) ROUTER instead.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import sys
import time
from pathlib import Path

import zmq

TEST_KEYS = Path(__file__).resolve().parents[1] / "reference_impl" / "mc0" / "testkeys.json"
CLIENT_VERBS = {b"CONNECT", b"DISCONNECT", b"SUB", b"UNSUB", b"PUT", b"NOOP"}
VERSIONS = {b"0.3", b"0.2"}


class Malformed(Exception):
    pass


def parse(frames: list[bytes]) -> tuple[bytes, list[tuple[bytes, bytes]], list[bytes] | None]:
    """(verb, headers, positional or None) of '' VERB k v ... ['' p...]."""
    if not frames or frames[0] != b"":
        raise Malformed("expected an empty delimiter frame first")
    if len(frames) < 2 or not frames[1]:
        raise Malformed("no verb")
    verb, rest = frames[1], frames[2:]
    headers = []
    i = 0
    while i < len(rest):
        if rest[i] == b"":
            return verb, headers, rest[i + 1:]
        if i + 1 == len(rest):
            raise Malformed("odd number of header frames")
        headers.append((rest[i], rest[i + 1]))
        i += 2
    return verb, headers, None


def find_id(frames: list[bytes]) -> bytes | None:
    for i in range(2, len(frames) - 1, 2):
        if frames[i] == b"":
            break
        if frames[i] == b"ID":
            return frames[i + 1]
    return None


class Client:
    def __init__(self, now: float) -> None:
        self.heard = now
        self.noop_at: float | None = None
        self.ttl: float | None = None
        self.topics: set[bytes] = set()


class Broker:
    def __init__(self, sock: zmq.Socket) -> None:
        self.sock = sock
        self.clients: dict[bytes, Client] = {}
        self.topics: dict[bytes, set[bytes]] = {}

    def send(self, peer: bytes, frames: list[bytes]) -> None:
        try:
            self.sock.send_multipart([peer, b""] + frames, flags=zmq.NOBLOCK)
        except zmq.Again:
            pass  # a peer whose pipe is full loses this message (libzmq's high-water mark)

    def error(self, peer: bytes, text: str, request_id: bytes | None) -> None:
        head = [b"ID", request_id] if request_id is not None else []
        self.send(peer, [b"ERROR"] + head + [b"MESSAGE", text.encode()])

    def handle(self, peer: bytes, frames: list[bytes]) -> None:
        now = time.monotonic()
        client = self.clients.setdefault(peer, Client(now))
        client.heard = now
        try:
            verb, headers, positional = parse(frames)
        except Malformed as exc:
            self.error(peer, str(exc), find_id(frames))
            return
        fields = dict(headers)
        request_id = fields.get(b"ID")
        if verb not in CLIENT_VERBS:
            self.error(peer, "unknown verb " + verb.decode("latin-1"), request_id)
            return
        problem = getattr(self, "do_" + verb.decode().lower())(peer, client, headers, fields, positional)
        if problem:
            self.error(peer, problem, request_id)
        elif request_id is not None:
            self.send(peer, [b"OK", b"ID", request_id])

    def do_connect(self, peer, client, headers, fields, positional):
        version = fields.get(b"VERSION", b"0.3")
        if version not in VERSIONS:
            return "version not supported"
        ttl = fields.get(b"TTL")
        if ttl is not None:
            if not re.fullmatch(rb"[0-9]{1,9}", ttl) or int(ttl) == 0:
                return "bad TTL"
            client.ttl = int(ttl) / 1000
        return None

    def do_disconnect(self, peer, client, headers, fields, positional):
        self.drop(peer, client)
        return None

    def do_noop(self, peer, client, headers, fields, positional):
        return None

    def do_sub(self, peer, client, headers, fields, positional):
        if not positional:
            return "SUB needs '' and at least one topic"
        for topic in positional:
            client.topics.add(topic)
            self.topics.setdefault(topic, set()).add(peer)
        return None

    def do_unsub(self, peer, client, headers, fields, positional):
        if not positional:
            return "UNSUB needs '' and at least one topic"
        for topic in positional:
            client.topics.discard(topic)
            self.topics.get(topic, set()).discard(peer)
        return None

    def do_put(self, peer, client, headers, fields, positional):
        topic = fields.get(b"TOPIC")
        if topic is None:
            return "PUT without TOPIC"
        if positional is None:
            return "PUT without '' and body"
        extra = [x for k, v in headers if k.startswith(b"X-") for x in (k, v)]
        for subscriber in sorted(self.topics.get(topic, ())):
            self.send(subscriber, [b"MESSAGE", b"TOPIC", topic] + extra + [b""] + positional)
        return None

    def drop(self, peer: bytes, client: Client) -> None:
        for topic in client.topics:
            self.topics.get(topic, set()).discard(peer)
        client.topics.clear()
        client.ttl = None
        client.noop_at = None

    def tick(self) -> float | None:
        """Send due NOOPs, drop absent clients; return seconds until the next deadline."""
        now = time.monotonic()
        soonest = None
        for peer, client in list(self.clients.items()):
            if client.ttl is None:
                continue
            if now - client.heard > client.ttl:
                self.drop(peer, client)
                del self.clients[peer]
                continue
            due = max(client.heard, client.noop_at or 0.0) + client.ttl / 2
            if now >= due:
                client.noop_at = now
                self.send(peer, [b"NOOP"])
                due = now + client.ttl / 2
            for t in (due, client.heard + client.ttl):
                soonest = t if soonest is None else min(soonest, t)
        return None if soonest is None else max(0.0, soonest - now)


def load_secret(path: Path | None) -> bytes:
    if path is None:
        return json.loads(TEST_KEYS.read_text())["server"]["secret"].encode()
    text = path.read_text()
    match = re.search(r'secret-key\s*=\s*"(.{40})"', text)
    return (match.group(1) if match else text.strip()).encode()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--null", action="store_true", help="NULL mechanism instead of CURVE")
    parser.add_argument("--curve-secret", type=Path, default=None, help="Z85 secret key or zcert secret file")
    args = parser.parse_args()

    ctx = zmq.Context()
    sock = ctx.socket(zmq.ROUTER)
    sock.linger = 0
    if not args.null:
        secret = load_secret(args.curve_secret)
        sock.curve_server = True
        sock.curve_secretkey = secret
        sock.curve_publickey = zmq.curve_public(secret)
    sock.bind(f"tcp://{args.host}:{args.port}")
    print(f"listening on tcp://{args.host}:{args.port}", flush=True)

    running = True

    def stop(*_):
        nonlocal running
        running = False

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    broker = Broker(sock)
    poller = zmq.Poller()
    poller.register(sock, zmq.POLLIN)
    while running:
        wait = broker.tick()
        timeout_ms = 200 if wait is None else min(200, int(wait * 1000) + 1)
        if not dict(poller.poll(timeout_ms)):
            continue
        while True:
            try:
                frames = sock.recv_multipart(flags=zmq.NOBLOCK)
            except zmq.Again:
                break
            broker.handle(frames[0], frames[1:])
    sock.close()
    ctx.term()
    return 0


if __name__ == "__main__":
    sys.exit(main())
