"""check-trace throughput: frames checked per second per core, single process and Spark local[2].

    .venv/bin/python benchmarks/bench_trace.py [--sizes-mb 10 50] [--files 8] [--no-spark] [--markdown]

Generates STMP captures (classic pcap, Ethernet/IPv4/TCP, checksums left zero): connections of a
negotiation and then request/response echoes of 16-byte payloads, 16 messages per TCP segment,
each connection 2000 messages a side, then closed.  For each size: one file checked by one process (frames/s,
and the process's peak RSS, in a fresh subprocess so peaks do not carry over), then the same bytes
as --files files: one process checking them in turn, and `check-trace --spark --master local[2]`
(frames/s per core = frames / seconds / 2, and its ratio to the single process).
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

_PCAP_HEADER = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1)
_ETH = b"\0" * 12 + b"\x08\x00"
NEGOTIATE = bytes.fromhex("68" "0000" "00000000" "00000001" "01")
NEGOTIATED = bytes.fromhex("e8" "0000" "00" "00000001" "01")
PER_SEGMENT = 16
PER_CONNECTION = 2000


def _packet(ts: float, src_port: int, dst_port: int, seq: int, flags: int, payload: bytes) -> bytes:
    tcp = struct.pack(">HHIIBBHHH", src_port, dst_port, seq, 0, 5 << 4, flags, 65535, 0, 0)
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp) + len(payload), 0, 0, 64, 6, 0,
                     b"\x7f\0\0\x01", b"\x7f\0\0\x01")
    frame = _ETH + ip + tcp + payload
    sec = int(ts)
    return struct.pack("<IIII", sec, int((ts - sec) * 1e6), len(frame), len(frame)) + frame


def _connection(n: int, t0: float) -> tuple[bytes, int]:
    """One connection's packets, and the frames in it."""
    cport, sport = 20000 + n % 40000, 9000
    seq = {"c": 1000, "s": 5000}
    out = [_packet(t0, cport, sport, seq["c"], 0x02, b""), _packet(t0, sport, cport, seq["s"], 0x12, b"")]
    seq = {"c": 1001, "s": 5001}

    def send(side: str, payload: bytes, t: float) -> None:
        src, dst = (cport, sport) if side == "c" else (sport, cport)
        out.append(_packet(t, src, dst, seq[side], 0x18, payload))
        seq[side] += len(payload)

    send("c", NEGOTIATE, t0)
    send("s", NEGOTIATED, t0)
    frames = 2
    for batch in range(PER_CONNECTION // PER_SEGMENT):
        ids = [(batch * PER_SEGMENT + i) % 65535 + 1 for i in range(PER_SEGMENT)]
        body = b"0123456789abcdef"
        send("c", b"".join(struct.pack(">BHII", 0x68, i, 1, len(body)) + body for i in ids), t0 + batch * 1e-4)
        send("s", b"".join(struct.pack(">BHBI", 0xE8, i, 0, len(body)) + body for i in ids), t0 + batch * 1e-4)
        frames += 2 * PER_SEGMENT
    t_end = t0 + PER_CONNECTION * 1e-4
    out.append(_packet(t_end, cport, sport, seq["c"], 0x11, b""))  # FIN, ACK both ways: the connection ends
    out.append(_packet(t_end, sport, cport, seq["s"], 0x11, b""))
    return b"".join(out), frames


def generate(path: Path, size: int) -> int:
    """A capture of at least ``size`` bytes; returns its frame count."""
    frames, n = 0, 0
    with path.open("wb") as fh:
        fh.write(_PCAP_HEADER)
        written = len(_PCAP_HEADER)
        while written < size:
            data, count = _connection(n, 1_700_000_000 + n)
            fh.write(data)
            written += len(data)
            frames += count
            n += 1
    return frames


def _single(paths: list[Path]) -> dict:
    """One process checks the files in turn (a fresh interpreter: its peak RSS is this work's)."""
    code = (
        "import json, resource, sys, time\n"
        "from pathlib import Path\n"
        "from conformance.trace.check import check_file\n"
        "t = time.perf_counter(); cpu = time.process_time(); frames = findings = 0\n"
        "for p in sys.argv[1:]:\n"
        "    r = check_file(Path(p), {9000: 'stmp'}, None, {})\n"
        "    frames += r.frames; findings += len(r.findings)\n"
        "print(json.dumps({'seconds': time.perf_counter() - t, 'cpu': time.process_time() - cpu,\n"
        "                  'frames': frames, 'findings': findings,\n"
        "                  'rss_mb': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code, *map(str, paths)], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _pss_bytes(pid: int) -> int:
    """Proportional set size: a page shared by n processes counts 1/n in each (forked Python
    workers share most of their pages with their daemon, which an RSS sum counts n times)."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass  # gone meanwhile, or no smaps_rollup: counts nothing
    return 0


def _tree_memory_mb(root: int) -> dict[str, float]:
    """The memory of a process's descendants (from /proc), in MB: the JVM's RSS, the Python
    processes' (the CLI that drives Spark and the workers) RSS summed and PSS summed, and the
    largest single Python process's RSS."""
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    java: set[int] = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                head, rest = (entry / "stat").read_text().rsplit(")", 1)
            except OSError:
                continue  # gone meanwhile
            fields = rest.split()
            pid = int(entry.name)
            parents[pid] = int(fields[1])
            rss[pid] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
            if head.endswith("(java"):
                java.add(pid)
    tree, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent and pid not in tree]
        tree.update(children)
        frontier.extend(children)
    python = tree - java
    mb = 2**20
    return {"jvm_mb": sum(rss.get(pid, 0) for pid in tree & java) / mb,
            "python_mb": sum(rss.get(pid, 0) for pid in python) / mb,
            "python_pss_mb": sum(_pss_bytes(pid) for pid in python) / mb,
            "python_largest_mb": max((rss.get(pid, 0) for pid in python), default=0) / mb}


def _spark(paths: list[Path], out: Path) -> dict:
    """`check-trace --spark`, its process tree's memory (the CLI, the JVM, the Python workers)
    sampled every half second: each peak is the largest sample of its measure."""
    t = time.perf_counter()
    run = subprocess.Popen([sys.executable, "-m", "conformance.cli", "check-trace", "--spark", "--master", "local[2]",
                            "--port", "9000=stmp", *map(str, paths), "--out", str(out)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           env={**os.environ, "PYTHONPATH": str(ROOT)})
    peaks: dict[str, float] = {}
    while run.poll() is None:
        for name, value in _tree_memory_mb(run.pid).items():
            peaks[name] = max(peaks.get(name, 0.0), value)
        time.sleep(0.5)
    summary = json.loads((out / "summary.json").read_text())
    return {"seconds": time.perf_counter() - t, "frames": summary["frames"], **peaks}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes-mb", type=int, nargs="+", default=[10, 50])
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--no-spark", action="store_true")
    parser.add_argument("--spark-only", action="store_true", help="skip the single-process runs (their cells show -)")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-trace-") as tmp:
        for mb in args.sizes_mb:
            one = Path(tmp) / f"one-{mb}.pcap"
            frames = generate(one, mb * 10**6)
            single = None if args.spark_only else _single([one])
            parts = []
            for i in range(args.files):
                part = Path(tmp) / f"part-{mb}-{i}.pcap"
                generate(part, mb * 10**6 // args.files)
                parts.append(part)
            many = None if args.spark_only else _single(parts)
            spark = None if args.no_spark else _spark(parts, Path(tmp) / f"spark-{mb}")
            one.unlink()
            for part in parts:
                part.unlink()
            rows.append((mb, frames, single, many, spark))
            assert args.spark_only or single["findings"] == 0 and many["findings"] == 0, "a capture gave findings"
    head = ("| capture | frames | one file: frames/s | one file: frames/s of CPU | peak RSS MB | "
            f"{args.files} files, one process: frames/s | {args.files} files, Spark local[2]: frames/s/core | "
            "Spark / single | Spark peak RSS MB: JVM | Spark peak MB, Python (driver CLI + workers): RSS summed | "
            "PSS summed | largest process's RSS |")
    print(head if args.markdown else head.replace("|", " "))
    if args.markdown:
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for mb, frames, single, many, spark in rows:
        per_core = spark["frames"] / spark["seconds"] / 2 if spark else None
        ratio = (spark["seconds"] / many["seconds"]) if spark and many else None
        cells = [f"{mb} MB", f"{frames:,}",
                 *([f"{single['frames'] / single['seconds']:,.0f}", f"{single['frames'] / single['cpu']:,.0f}",
                    f"{single['rss_mb']:.0f}"] if single else ["-"] * 3),
                 f"{many['frames'] / many['seconds']:,.0f}" if many else "-", f"{per_core:,.0f}" if per_core else "-",
                 f"{ratio:.2f}" if ratio else "-", f"{spark['jvm_mb']:.0f}" if spark else "-",
                 *([f"{spark[k]:.0f}" for k in ("python_mb", "python_pss_mb", "python_largest_mb")]
                   if spark else ["-"] * 3)]
        print("| " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
