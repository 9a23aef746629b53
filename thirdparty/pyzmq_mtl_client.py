"""An 11/MTL client on pyzmq (libzmq): a third-party peer for the reference server.

    python thirdparty/pyzmq_mtl_client.py tcp://127.0.0.1:PORT [--user alice --password wonderland]

Written from the spec and docs/profiles/mtl.md alone, with its own encoding (struct,
json, base64): nothing from this project is imported, so it checks the
reference server against libzmq's REQ and DEALER sockets and an independent
reading of the wire format.  It runs:

1. control (REQ): Connection.Open -> 401 (or 201), Connection.Authorize PLAIN -> 201,
   Connection.Profile "test" -> 200, Connection.Writer and Connection.Reader -> 202;
2. data (DEALER, one per lease, on the 202 port): Lease -> 200, Summon -> 200 on the
   reader; the writer sends a Content with a field table; it arrives at the reader;
3. confirm-test: a confirm full reader and writer; the server confirms the writer's
   Content; the reader gets two Contents, confirms the first with multiple FALSE, and
   the second comes back with a new sequence (redelivery), which it confirms too.

Every receive is bounded (``--timeout``); Pings are answered with Pong.  Exit 0 when
all went as the spec says, 1 otherwise (with the reason on stderr).
"""

from __future__ import annotations

import argparse
import base64
import json
import struct
import sys
from urllib.parse import urlsplit

import zmq

LEASE, RESPONSE, SUMMON, DISMISS, CONTENT, CONFIRM, REJECT, PING, PONG = range(1, 10)


class Failure(Exception):
    pass


def short_string(text: str) -> bytes:
    data = text.encode("ascii")
    return bytes([len(data)]) + data


def field_table(pairs: dict[str, str]) -> bytes:
    return struct.pack(">H", len(pairs)) + b"".join(short_string(k) + short_string(v) for k, v in pairs.items())


def parse_content(header: bytes) -> tuple[int, str, dict[str, str]]:
    (seq,) = struct.unpack_from(">Q", header, 1)
    at = 9
    size = header[at]
    resource = header[at + 1:at + 1 + size].decode("ascii")
    at += 1 + size
    (count,) = struct.unpack_from(">H", header, at)
    at += 2
    props = {}
    for _ in range(count):
        n = header[at]
        name = header[at + 1:at + 1 + n].decode("ascii")
        at += 1 + n
        n = header[at]
        props[name] = header[at + 1:at + 1 + n].decode("ascii")
        at += 1 + n
    if at != len(header):
        raise Failure(f"Content header has {len(header) - at} trailing octets")
    return seq, resource, props


class Control:
    def __init__(self, ctx: zmq.Context, url: str, timeout_ms: int) -> None:
        self.sock = ctx.socket(zmq.REQ)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.setsockopt(zmq.RCVTIMEO, timeout_ms)
        self.sock.setsockopt(zmq.SNDTIMEO, timeout_ms)
        self.sock.connect(url)

    def call(self, command: str, body: dict) -> tuple[int, dict]:
        self.sock.send_multipart([command.encode(), json.dumps(body).encode()])
        try:
            frames = self.sock.recv_multipart()
        except zmq.Again:
            raise Failure(f"no reply to {command}") from None
        if len(frames) != 2 or len(frames[0]) != 3 or not frames[0].isdigit():
            raise Failure(f"malformed reply to {command}: {frames!r}")
        return int(frames[0]), json.loads(frames[1])

    def expect(self, code: int, command: str, body: dict) -> dict:
        got, reply = self.call(command, body)
        if got != code:
            raise Failure(f"{command}: expected {code}, got {got} {reply}")
        return reply


class Data:
    def __init__(self, ctx: zmq.Context, host: str, port: int, timeout_ms: int) -> None:
        self.sock = ctx.socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.setsockopt(zmq.RCVTIMEO, timeout_ms)
        self.sock.setsockopt(zmq.SNDTIMEO, timeout_ms)
        self.sock.connect(f"tcp://{host}:{port}")
        self.seq = 0

    def send(self, header: bytes, body: bytes = b"") -> None:
        self.sock.send_multipart([header, body])

    def recv(self) -> tuple[bytes, bytes]:
        while True:
            try:
                frames = self.sock.recv_multipart()
            except zmq.Again:
                raise Failure("nothing arrived on the data connection") from None
            if len(frames) != 2 or not frames[0]:
                raise Failure(f"malformed data command {frames!r}")
            if frames[0][0] == PING:
                self.send(bytes([PONG]))
                continue
            return frames[0], frames[1]

    def command(self, kind: int, rest: bytes) -> int:
        self.seq += 1
        self.send(struct.pack(">BQ", kind, self.seq) + rest)
        header, body = self.recv()
        if header[0] != RESPONSE or struct.unpack_from(">Q", header, 1)[0] != self.seq or len(header) != 9:
            raise Failure(f"expected Response {self.seq}, got {header.hex()}")
        return int(body)

    def content(self, seq: int, resource: str, props: dict[str, str], body: bytes) -> None:
        self.send(struct.pack(">BQ", CONTENT, seq) + short_string(resource) + field_table(props), body)

    def next_content(self) -> tuple[int, str, dict[str, str], bytes]:
        header, body = self.recv()
        if header[0] != CONTENT:
            raise Failure(f"expected Content, got {header.hex()}")
        seq, resource, props = parse_content(header)
        return seq, resource, props, body

    def close(self) -> None:
        self.sock.close(0)


def lease(ctx, control: Control, host: str, kind: str, confirm: str, timeout_ms: int) -> Data:
    reply = control.expect(202, f"Connection.{kind}", {"resources": ["resource"], "confirm": confirm})
    if not isinstance(reply.get("port"), int) or not isinstance(reply.get("lease"), str):
        raise Failure(f"202 without a numeric port and a lease: {reply}")
    data = Data(ctx, host, reply["port"], timeout_ms)
    if (code := data.command(LEASE, short_string(reply["lease"]))) != 200:
        raise Failure(f"Lease answered {code}")
    return data


def run(url: str, user: str, password: str, timeout_ms: int) -> None:
    host = urlsplit(url).hostname or "127.0.0.1"
    ctx = zmq.Context()
    sockets: list = []
    try:
        control = Control(ctx, url, timeout_ms)
        sockets.append(control.sock)
        code, reply = control.call("Connection.Open", {"protocol": {"name": "MTL", "version": 1},
                                                       "virtual-host": "test-env"})
        if code == 401:
            if "PLAIN" not in reply.get("mechanisms", []):
                raise Failure(f"PLAIN not offered: {reply}")
            plain = base64.b64encode(f"\0{user}\0{password}".encode()).decode()
            reply = control.expect(201, "Connection.Authorize", {"mechanism": "PLAIN", "response": plain})
        elif code != 201:
            raise Failure(f"Connection.Open answered {code} {reply}")
        if "test" not in [p.lower() for p in reply.get("profiles", [])]:
            raise Failure(f"no test profile in {reply}")
        print("authenticated; profiles:", reply["profiles"], flush=True)

        # -- the test profile: fan-out, no confirms
        control.expect(200, "Connection.Profile", {"profile": "test"})
        writer = lease(ctx, control, host, "Writer", "none", timeout_ms)
        reader = lease(ctx, control, host, "Reader", "none", timeout_ms)
        sockets += [writer, reader]
        if (code := reader.command(SUMMON, short_string("resource"))) != 200:
            raise Failure(f"Summon answered {code}")
        writer.content(1, "resource", {"sender": "pyzmq"}, b"hello from libzmq")
        seq, resource, props, body = reader.next_content()
        if body != b"hello from libzmq" or props != {"sender": "pyzmq"} or resource not in ("resource", ""):
            raise Failure(f"wrong Content: {seq} {resource} {props} {body!r}")
        print(f"test profile: Content {seq} arrived at the reader", flush=True)
        if (code := reader.command(DISMISS, short_string("resource"))) != 200:
            raise Failure(f"Dismiss answered {code}")

        # -- confirm-test: confirms both ways, redelivery of what is not confirmed
        control.expect(200, "Connection.Profile", {"profile": "confirm-test"})
        writer2 = lease(ctx, control, host, "Writer", "full", timeout_ms)
        reader2 = lease(ctx, control, host, "Reader", "full", timeout_ms)
        sockets += [writer2, reader2]
        if (code := reader2.command(SUMMON, short_string("resource"))) != 200:
            raise Failure(f"Summon answered {code}")
        writer2.content(41, "resource", {}, b"first")
        header, _ = writer2.recv()
        if header[0] != CONFIRM or struct.unpack_from(">Q", header, 1)[0] != 41 or header[9] != 0:
            raise Failure(f"the writer's Content 41 was not confirmed: {header.hex()}")
        writer2.content(42, "resource", {}, b"second")
        s1, _, _, b1 = reader2.next_content()
        s2, _, _, b2 = reader2.next_content()
        if (b1, b2) != (b"first", b"second"):
            raise Failure(f"wrong Contents {b1!r} {b2!r}")
        reader2.send(struct.pack(">BQB", CONFIRM, s1, 0))
        s3, _, _, b3 = reader2.next_content()
        if b3 != b"second" or s3 in (s1, s2):
            raise Failure(f"expected 'second' again with a new sequence, got {s3} {b3!r}")
        reader2.send(struct.pack(">BQB", CONFIRM, s3, 1))
        print(f"confirm-test: confirmed {s1}, 'second' redelivered as {s3} and confirmed", flush=True)
    finally:
        for s in sockets:
            (s.close() if isinstance(s, Data) else s.close(0))
        ctx.term()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("url", help="the server's control endpoint, tcp://127.0.0.1:PORT")
    parser.add_argument("--user", default="alice")
    parser.add_argument("--password", default="wonderland")
    parser.add_argument("--timeout", type=float, default=5.0, help="seconds per receive")
    args = parser.parse_args(argv)
    try:
        run(args.url, args.user, args.password, int(args.timeout * 1000))
    except (Failure, zmq.ZMQError, ValueError, KeyError, struct.error) as exc:
        print(f"pyzmq MTL client: FAILED: {exc}", file=sys.stderr)
        return 1
    print("pyzmq MTL client: OK", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
