"""ZMTP beside libzmq (pyzmq): the same messages, the same run, and the ratio ours / libzmq.

    .venv/bin/python benchmarks/bench_zmtp.py                        # NULL mechanism, 5 rounds of the mix
    .venv/bin/python benchmarks/bench_zmtp.py --rounds 2 --repeats 1 # quicker
    .venv/bin/python benchmarks/bench_zmtp.py --mechanism curve      # the socket rows with CURVE (RFC 26)

One message mix (MIX_SIZE multipart messages; payloads cycling through
PAYLOAD_SIZES bytes as in bench_codec.py; shapes ``[payload]``,
``['', payload]``, ``['topic', payload, 8 octets]``), sent ``--rounds`` times.
Every row moves the same messages; each is the best of ``--repeats``.

What each row measures, and what it does not:

  ours codec           reference_impl/zmtp/codec.py alone, one thread, no socket:
                       encode every frame (MORE flags), then decode the whole byte
                       stream with StreamDecoder and regroup the messages.  Framing
                       and nothing else: the ceiling of our ZMTP in pure Python.
  libzmq inproc        pyzmq PUSH -> PULL on inproc://: no ZMTP framing and no
                       kernel at all (libzmq hands message objects over a pipe);
                       the floor of libzmq plus pyzmq's per-message Python cost.
  libzmq tcp           pyzmq PUSH -> PULL, then DEALER -> ROUTER, on tcp://127.0.0.1:
                       greeting, ZMTP framing and TCP.  libzmq encodes and decodes
                       on its own I/O thread (C++, outside the GIL); the sender is a
                       Python thread, the receiver the main thread.
  ours asyncio tcp     reference_impl/zmtp/sockets.py: our Dealer -> our Router over
                       tcp://127.0.0.1 in one asyncio loop on one thread: the sans-IO
                       Connection, the asyncio sockets and the kernel.  The like-for-like
                       partner of "libzmq tcp DEALER -> ROUTER".
  ours -> libzmq,      mixed pairs over tcp://127.0.0.1 (ours in the asyncio loop, the
  libzmq -> ours       libzmq end in a thread): which end limits the other.

Every libzmq row is Python driving libzmq: pyzmq's send_multipart/recv_multipart
cost a few microseconds of Python per frame, and that, not libzmq's C++, bounds
those rows (cpu s stays close to wall s).  libzmq on its own is far faster; what is
compared is what a Python peer gets from each.  --mechanism applies to the tcp rows
only (inproc has no mechanism; the codec rows are NULL framing either way).

"cpu s" is the process's CPU time over the same timed window (all threads,
libzmq's I/O thread included), so libzmq's use of a second core shows as cpu > wall.
Connecting, the handshake (CURVE's too) and one warm-up message are not timed.
The ratio lines divide our msgs/s by libzmq's for the same kind of row.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import zmq  # noqa: E402

from reference_impl.zmtp import codec  # noqa: E402

MIX_SIZE = 2000
PAYLOAD_SIZES = (0, 16, 64, 256, 1024, 4096)


def message_mix() -> list[list[bytes]]:
    messages = []
    for i in range(MIX_SIZE):
        size = PAYLOAD_SIZES[i % len(PAYLOAD_SIZES)]
        payload = bytes((i + k) % 256 for k in range(size))
        shape = (i // len(PAYLOAD_SIZES)) % 3  # not in step with the sizes: every shape gets every size
        messages.append([[payload], [b"", payload], [b"topic", payload, b"trailer!"]][shape])
    return messages


def wire_size(messages: list[list[bytes]]) -> int:
    """Octets of these messages as ZMTP frames (NULL mechanism)."""
    return sum(len(f) + (2 if len(f) <= 255 else 9) for m in messages for f in m)


@dataclass
class Row:
    name: str
    kind: str  # for the ratios: codec, tcp-dealer-router, ...
    messages: int
    wire_bytes: int
    wall: float
    cpu: float

    @property
    def rate(self) -> float:
        return self.messages / self.wall

    @property
    def mbs(self) -> float:
        return self.wire_bytes / self.wall / 1e6


def _timed(fn: Callable[[], object]) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def best(repeats: int, fn: Callable[[], object]) -> tuple[float, float]:
    return min((_timed(fn) for _ in range(repeats)), key=lambda t: t[0])


# -- ours: the codec alone ---------------------------------------------------------------

def ours_encode(messages: list[list[bytes]]) -> bytes:
    return b"".join([codec.encode_message(parts) for parts in messages])


def ours_decode(data: bytes) -> list[list[bytes]]:
    decoded, parts = [], []
    for frame in codec.StreamDecoder().feed(data):
        parts.append(frame.body)
        if not frame.more:
            decoded.append(parts)
            parts = []
    return decoded


def codec_rows(messages: list[list[bytes]], repeats: int) -> list[Row]:
    wire = ours_encode(messages)
    assert ours_decode(wire) == messages
    n, size = len(messages), len(wire)
    enc = best(repeats, lambda: ours_encode(messages))
    dec = best(repeats, lambda: ours_decode(wire))
    both = best(repeats, lambda: ours_decode(ours_encode(messages)))
    return [Row("ours codec: encode", "codec-encode", n, size, *enc),
            Row("ours codec: decode", "codec-decode", n, size, *dec),
            Row("ours codec: encode + decode", "codec", n, size, *both)]


# -- libzmq through pyzmq ------------------------------------------------------------------

def _curve_keys() -> tuple[bytes, bytes, bytes, bytes]:
    server_public, server_secret = zmq.curve_keypair()
    client_public, client_secret = zmq.curve_keypair()
    return server_public, server_secret, client_public, client_secret


def _zmq_secure(receiver: zmq.Socket, sender: zmq.Socket, mechanism: str) -> None:
    if mechanism != "curve":
        return
    server_public, server_secret, client_public, client_secret = _curve_keys()
    receiver.curve_server = True
    receiver.curve_secretkey = server_secret
    receiver.curve_publickey = server_public
    sender.curve_serverkey = server_public
    sender.curve_publickey = client_public
    sender.curve_secretkey = client_secret


def libzmq_run(messages: list[list[bytes]], url: str, pair: tuple[int, int], mechanism: str) -> tuple[float, float]:
    """Send every message from a thread, receive them all here; (wall, cpu) seconds after the connect."""
    context = zmq.Context()
    receiver, sender = context.socket(pair[1]), context.socket(pair[0])
    for sock in (receiver, sender):
        sock.linger = 0
    if url.startswith("tcp"):
        _zmq_secure(receiver, sender, mechanism)
    if url.endswith(":0"):
        receiver.bind("tcp://127.0.0.1:*")
        url = receiver.getsockopt_string(zmq.LAST_ENDPOINT)
    else:
        receiver.bind(url)
    sender.connect(url)
    routed = pair[1] == zmq.ROUTER
    # One message both ways through the connection first: greeting and handshake are not timed.
    sender.send_multipart([b"warm-up"])
    receiver.recv_multipart()
    started = threading.Event()

    def send_all() -> None:
        started.wait()
        for parts in messages:
            sender.send_multipart(parts)

    thread = threading.Thread(target=send_all)
    thread.start()
    begin, cpu = time.perf_counter(), time.process_time()
    started.set()
    got = 0
    for _ in messages:
        frames = receiver.recv_multipart()
        got += sum(map(len, frames[1:] if routed else frames))
    wall, cpu = time.perf_counter() - begin, time.process_time() - cpu
    thread.join()
    sender.close()
    receiver.close()
    context.term()
    assert got == sum(len(f) for m in messages for f in m)
    return wall, cpu


def libzmq_rows(messages: list[list[bytes]], repeats: int, mechanism: str) -> list[Row]:
    n, size = len(messages), wire_size(messages)
    rows = []
    for name, kind, url, pair in (
            ("libzmq inproc PUSH -> PULL", "inproc", "inproc://bench", (zmq.PUSH, zmq.PULL)),
            ("libzmq tcp PUSH -> PULL", "tcp-push-pull", "tcp://127.0.0.1:0", (zmq.PUSH, zmq.PULL)),
            ("libzmq tcp DEALER -> ROUTER", "tcp-dealer-router", "tcp://127.0.0.1:0", (zmq.DEALER, zmq.ROUTER))):
        runs = [libzmq_run(messages, url, pair, mechanism) for _ in range(repeats)]
        rows.append(Row(name, kind, n, size, *min(runs)))
    return rows


# -- ours: the asyncio sockets, and mixed pairs ----------------------------------------------

def _our_configs(mechanism: str):
    from reference_impl.zmtp.null import NullConfig
    if mechanism != "curve":
        return NullConfig(), NullConfig()
    from reference_impl.zmtp.curve import CurveClientConfig, CurveServerConfig, KeyPair
    server, client = KeyPair.generate(), KeyPair.generate()
    return CurveServerConfig(server), CurveClientConfig(server.public, client)


async def _ours_pair(messages: list[list[bytes]], mechanism: str) -> tuple[float, float]:
    from reference_impl.zmtp.sockets import bind_router, connect_dealer
    server_config, client_config = _our_configs(mechanism)
    router = await bind_router("127.0.0.1", 0, mechanism=server_config, timeout=60.0)
    dealer = await connect_dealer(f"tcp://127.0.0.1:{router.port}", mechanism=client_config, timeout=60.0)
    try:
        await dealer.send([b"warm-up"])
        await router.recv()

        async def send_all() -> None:
            for parts in messages:
                await dealer.send(parts)

        begin, cpu = time.perf_counter(), time.process_time()
        sending = asyncio.create_task(send_all())
        got = 0
        for _ in messages:
            got += sum(map(len, (await router.recv())[1:]))
        wall, cpu = time.perf_counter() - begin, time.process_time() - cpu
        await sending
    finally:
        await dealer.close()
        await router.close()
    assert got == sum(len(f) for m in messages for f in m)
    return wall, cpu


async def _ours_to_libzmq(messages: list[list[bytes]], mechanism: str) -> tuple[float, float]:
    """Our Dealer sends; a libzmq ROUTER receives in a thread."""
    from reference_impl.zmtp.sockets import connect_dealer
    context = zmq.Context()
    router = context.socket(zmq.ROUTER)
    router.linger = 0
    _, client_config = _our_configs("null")
    if mechanism == "curve":
        from reference_impl.zmtp.curve import CurveClientConfig, KeyPair
        server, client = KeyPair.generate(), KeyPair.generate()
        router.curve_server, router.curve_secretkey, router.curve_publickey = True, server.secret, server.public
        client_config = CurveClientConfig(server.public, client)
    router.bind("tcp://127.0.0.1:*")
    url = router.getsockopt_string(zmq.LAST_ENDPOINT)
    dealer = await connect_dealer(url, mechanism=client_config, timeout=60.0)
    counted: list[int] = []
    go = threading.Event()

    def receive_all() -> None:
        router.recv_multipart()  # the warm-up
        go.set()
        counted.append(sum(sum(map(len, router.recv_multipart()[1:])) for _ in messages))

    thread = threading.Thread(target=receive_all)
    thread.start()
    try:
        await dealer.send([b"warm-up"])
        await asyncio.to_thread(go.wait)
        begin, cpu = time.perf_counter(), time.process_time()
        for parts in messages:
            await dealer.send(parts)
        await asyncio.to_thread(thread.join)
        wall, cpu = time.perf_counter() - begin, time.process_time() - cpu
    finally:
        await dealer.close()
        router.close()
        context.term()
    assert counted == [sum(len(f) for m in messages for f in m)]
    return wall, cpu


async def _libzmq_to_ours(messages: list[list[bytes]], mechanism: str) -> tuple[float, float]:
    """A libzmq DEALER sends from a thread; our Router receives in the loop."""
    from reference_impl.zmtp.sockets import bind_router
    server_config, _ = _our_configs("null")
    context = zmq.Context()
    dealer = context.socket(zmq.DEALER)
    dealer.linger = 0
    if mechanism == "curve":
        from reference_impl.zmtp.curve import CurveServerConfig, KeyPair
        server = KeyPair.generate()
        server_config = CurveServerConfig(server)
        public, secret = zmq.curve_keypair()
        dealer.curve_serverkey, dealer.curve_publickey, dealer.curve_secretkey = server.public, public, secret
    router = await bind_router("127.0.0.1", 0, mechanism=server_config, timeout=60.0)
    dealer.connect(f"tcp://127.0.0.1:{router.port}")
    go = threading.Event()

    def send_all() -> None:
        dealer.send_multipart([b"warm-up"])
        go.wait()
        for parts in messages:
            dealer.send_multipart(parts)

    thread = threading.Thread(target=send_all)
    thread.start()
    try:
        await router.recv()
        begin, cpu = time.perf_counter(), time.process_time()
        go.set()
        got = 0
        for _ in messages:
            got += sum(map(len, (await router.recv())[1:]))
        wall, cpu = time.perf_counter() - begin, time.process_time() - cpu
        await asyncio.to_thread(thread.join)
    finally:
        await router.close()
        dealer.close()
        context.term()
    assert got == sum(len(f) for m in messages for f in m)
    return wall, cpu


def ours_rows(messages: list[list[bytes]], repeats: int, mechanism: str, mixed: bool) -> list[Row]:
    n, size = len(messages), wire_size(messages)
    runs = [("ours asyncio tcp Dealer -> Router", "tcp-dealer-router", _ours_pair)]
    if mixed:
        runs += [("ours Dealer -> libzmq ROUTER", "mixed", _ours_to_libzmq),
                 ("libzmq DEALER -> ours Router", "mixed", _libzmq_to_ours)]
    rows = []
    for name, kind, run in runs:
        times = [asyncio.run(run(messages, mechanism)) for _ in range(repeats)]
        rows.append(Row(name, kind, n, size, *min(times)))
    return rows


# -- the report ------------------------------------------------------------------------------

def print_table(rows: list[Row], markdown: bool) -> None:
    if markdown:
        print("| row | msgs | msgs/s | MB/s | wall s | cpu s |")
        print("|---|---:|---:|---:|---:|---:|")
        for r in rows:
            print(f"| {r.name} | {r.messages:,} | {r.rate:,.0f} | {r.mbs:.1f} | {r.wall:.3f} | {r.cpu:.3f} |")
        return
    print(f"{'row':<36} {'msgs':>7} {'msgs/s':>11} {'MB/s':>8} {'wall s':>8} {'cpu s':>7}")
    for r in rows:
        print(f"{r.name:<36} {r.messages:>7,} {r.rate:>11,.0f} {r.mbs:>8.1f} {r.wall:>8.3f} {r.cpu:>7.3f}")


def ratios(rows: list[Row]) -> list[tuple[str, float]]:
    by = {r.name: r for r in rows}
    out = []

    def ratio(label: str, ours: str, theirs: str) -> None:
        if ours in by and theirs in by:
            out.append((label, by[ours].rate / by[theirs].rate))

    ratio("like for like, ZMTP over tcp 127.0.0.1 (ours asyncio Dealer->Router / libzmq DEALER->ROUTER)",
          "ours asyncio tcp Dealer -> Router", "libzmq tcp DEALER -> ROUTER")
    ratio("our framing alone, no socket (ours codec encode+decode / libzmq tcp DEALER->ROUTER, whole path)",
          "ours codec: encode + decode", "libzmq tcp DEALER -> ROUTER")
    ratio("our framing alone / libzmq inproc (no framing, no kernel)",
          "ours codec: encode + decode", "libzmq inproc PUSH -> PULL")
    ratio("ours Dealer -> libzmq ROUTER / libzmq DEALER -> ROUTER",
          "ours Dealer -> libzmq ROUTER", "libzmq tcp DEALER -> ROUTER")
    ratio("libzmq DEALER -> ours Router / libzmq DEALER -> ROUTER",
          "libzmq DEALER -> ours Router", "libzmq tcp DEALER -> ROUTER")
    return out


def run(rounds: int, repeats: int, mechanism: str, mixed: bool = True, markdown: bool = False) -> list[Row]:
    messages = message_mix() * rounds
    rows = codec_rows(messages, repeats) + libzmq_rows(messages, repeats, mechanism)
    rows += ours_rows(messages, repeats, mechanism, mixed)
    print(f"{len(messages):,} messages ({rounds} x {MIX_SIZE}; {wire_size(messages):,} octets as ZMTP frames), "
          f"best of {repeats}; mechanism {mechanism.upper()} on the socket rows; libzmq {zmq.zmq_version()}, "
          f"pyzmq {zmq.__version__}")
    print_table(rows, markdown)
    print()
    for label, value in ratios(rows):
        print(f"ratio ours/libzmq {value:7.3f}  ({1 / value:,.1f}x slower)  {label}" if value < 1 else
              f"ratio ours/libzmq {value:7.3f}  {label}")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5, help="times the 2000-message mix is sent (default 5)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per row; the best is kept (default 3)")
    parser.add_argument("--mechanism", choices=["null", "curve"], default="null")
    parser.add_argument("--no-mixed", action="store_true", help="skip the ours <-> libzmq rows")
    parser.add_argument("--markdown", action="store_true", help="print the table as markdown")
    args = parser.parse_args()
    run(args.rounds, args.repeats, args.mechanism, mixed=not args.no_mixed, markdown=args.markdown)


if __name__ == "__main__":
    main()
