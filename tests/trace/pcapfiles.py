"""Hand-built captures: TCP segments with chosen sequence numbers, written by dpkt."""

from __future__ import annotations

import socket
from pathlib import Path

import dpkt

CLIENT = ("127.0.0.1", 40000)
SERVER = ("127.0.0.1", 9000)
ISN = {CLIENT: 100, SERVER: 5000}

# STMP, hand-computed (docs/profiles/stmp.md): Request ID 0 ACTION 0 Raw (0x40 | 5 << 3 = 0x68),
# PS 1, version byte 0x01 (0.1); its Ok: Response (0xC0 | 5 << 3 = 0xE8) ID 0 STATUS 0, PS 1, 0x01
NEGOTIATE = bytes.fromhex("68" "0000" "00000000" "00000001" "01")
NEGOTIATED = bytes.fromhex("e8" "0000" "00" "00000001" "01")
ECHO = bytes.fromhex("68" "0007" "00000001" "00000002" "6869")  # Request ID 7 ACTION 1 Raw "hi"
ECHOED = bytes.fromhex("e8" "0007" "00" "00000002" "6869")  # its Ok with "hi"
WRONG_ID = bytes.fromhex("e8" "0008" "00" "00000002" "6869")  # an Ok for ID 8: nobody asked


def tcp_frame(src, dst, seq, flags, payload=b"", cut=0) -> bytes:
    tcp = dpkt.tcp.TCP(sport=src[1], dport=dst[1], seq=seq, ack=0, flags=flags, win=65535, data=payload)
    ip = dpkt.ip.IP(src=socket.inet_aton(src[0]), dst=socket.inet_aton(dst[0]), p=6, ttl=64, data=tcp)
    ip.len = 20 + len(bytes(tcp))
    frame = bytes(dpkt.ethernet.Ethernet(src=b"\0" * 6, dst=b"\0" * 6, type=dpkt.ethernet.ETH_TYPE_IP, data=ip))
    return frame[:len(frame) - cut] if cut else frame


def syns():
    return [(CLIENT, SERVER, ISN[CLIENT], dpkt.tcp.TH_SYN, b""),
            (SERVER, CLIENT, ISN[SERVER], dpkt.tcp.TH_SYN | dpkt.tcp.TH_ACK, b"")]


def data(src, offset, payload, flags=dpkt.tcp.TH_ACK | dpkt.tcp.TH_PUSH):
    dst = SERVER if src == CLIENT else CLIENT
    return (src, dst, ISN[src] + 1 + offset, flags, payload)


def write_pcap(path: Path, segments, cut_last: int = 0, extra_frames=(), times=None) -> Path:
    """``times``: each segment's capture time (default: a millisecond apart from 1000 s)."""
    with path.open("wb") as fh:
        writer = dpkt.pcap.Writer(fh, snaplen=65535)
        for i, (src, dst, seq, flags, payload) in enumerate(segments):
            cut = cut_last if i == len(segments) - 1 else 0
            writer.writepkt(tcp_frame(src, dst, seq, flags, payload, cut), ts=times[i] if times else 1000.0 + i / 1000)
        for frame in extra_frames:
            writer.writepkt(frame, ts=2000.0)
    return path


def conversation(client, server, moves, start: int = 100, fin: bool = True):
    """One connection's segments: a handshake, then ``moves`` ((sender "client"/"server", payload)
    in order, each at its side's next offset), then both sides' FIN (the client's first)."""
    ends = {"client": client, "server": server}
    isn = {"client": start, "server": start + 5000}
    offset = {"client": 0, "server": 0}
    out = [(client, server, isn["client"], dpkt.tcp.TH_SYN, b""),
           (server, client, isn["server"], dpkt.tcp.TH_SYN | dpkt.tcp.TH_ACK, b"")]
    for side, payload in moves:
        peer = "server" if side == "client" else "client"
        out.append((ends[side], ends[peer], isn[side] + 1 + offset[side], dpkt.tcp.TH_ACK | dpkt.tcp.TH_PUSH, payload))
        offset[side] += len(payload)
    if fin:
        for side, peer in (("client", "server"), ("server", "client")):
            out.append((ends[side], ends[peer], isn[side] + 1 + offset[side], dpkt.tcp.TH_ACK | dpkt.tcp.TH_FIN, b""))
    return out
