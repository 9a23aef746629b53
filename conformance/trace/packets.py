"""TCP segments out of a capture file (pcap or pcapng, read by dpkt).

Every problem of one file is a :class:`CaptureProblem` the caller reports for that file: a file
that is no capture, a capture cut short (what was read before the cut is still checked), a link
type we cannot read.  Packets that are not TCP over IPv4/IPv6 are counted, not errors.
"""

from __future__ import annotations

import json
import socket
from struct import error as struct_error  # dpkt raises it on short headers
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import dpkt

_PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"
# link types (https://www.tcpdump.org/linktypes.html) whose frames we can unwrap to IP
_ETHERNET, _NULL, _LOOP, _RAW, _RAW_OLD, _SLL, _SLL2, _IPV4, _IPV6 = 1, 0, 108, 101, 12, 113, 276, 228, 229
_READABLE = frozenset({_ETHERNET, _NULL, _LOOP, _RAW, _RAW_OLD, _SLL, _SLL2, _IPV4, _IPV6})


class CaptureProblem(Exception):
    """A file that cannot be read (at all, or past some point): the message names it."""


@dataclass(frozen=True)
class Segment:
    ts: float
    src: tuple[str, int]
    dst: tuple[str, int]
    seq: int
    flags: int
    payload: bytes
    missing: int = 0  # payload bytes the capture's snap length cut off (the segment carried them)

    @property
    def syn(self) -> bool:
        return bool(self.flags & dpkt.tcp.TH_SYN)

    @property
    def fin(self) -> bool:
        return bool(self.flags & dpkt.tcp.TH_FIN)

    @property
    def rst(self) -> bool:
        return bool(self.flags & dpkt.tcp.TH_RST)


@dataclass
class ReadStats:
    packets: int = 0
    tcp: int = 0
    other: int = 0  # not TCP over IP: skipped
    problems: list[str] = field(default_factory=list)


class _ShortReads:
    """The capture file, noting a read that got fewer bytes than asked for but not none: the
    file ends inside a packet (dpkt's pcap reader would hand out the cut packet as if whole).

    In a pcapng file, a block header that opens a second section ends the file for the reader
    (``second_section``: where): dpkt reads on as if the first section went on, with its byte
    order, interfaces and time resolution, and would take the new section's length field in the
    old byte order (a read of up to 4 GiB); and --test-services auto judges the file by its first
    section header, which says nothing of traffic another tool captured."""

    def __init__(self, fh) -> None:
        self.fh, self.short = fh, False
        self.pcapng = False  # _reader sets it from the file's magic
        self.name = getattr(fh, "name", "capture")
        self.second_section: int | None = None

    def read(self, size: int = -1) -> bytes:
        if self.second_section is not None:
            return b""
        data = self.fh.read(size)
        if 0 < len(data) < size:
            self.short = True
        elif self.pcapng and size == 8 and data[:4] == _PCAPNG_MAGIC:  # dpkt reads each block's header alone
            self.second_section = self.fh.tell() - 8
            return b""
        return data

    def __getattr__(self, name):
        return getattr(self.fh, name)


def _reader(fh, path: Path):
    magic = fh.fh.read(4)
    fh.fh.seek(0)
    fh.pcapng = magic == _PCAPNG_MAGIC
    try:
        if fh.pcapng:
            return dpkt.pcapng.Reader(fh)
        return dpkt.pcap.Reader(fh)
    except (ValueError, dpkt.dpkt.Error, EOFError) as exc:
        raise CaptureProblem(f"{path}: not a pcap or pcapng capture ({exc or type(exc).__name__})") from None


def _ip_of(linktype: int, buf: bytes):
    if linktype == _ETHERNET:
        return dpkt.ethernet.Ethernet(buf).data
    if linktype in (_NULL, _LOOP):
        return dpkt.loopback.Loopback(buf).data
    if linktype == _SLL:
        return dpkt.sll.SLL(buf).data
    if linktype == _SLL2:
        return dpkt.sll2.SLL2(buf).data
    if linktype in (_RAW, _RAW_OLD, _IPV4, _IPV6):
        return dpkt.ip6.IP6(buf) if buf[:1] and buf[0] >> 4 == 6 else dpkt.ip.IP(buf)
    return None


def _segment(ts: float, ip) -> Segment | None:
    if isinstance(ip, dpkt.ip.IP):
        family, total = socket.AF_INET, ip.len - ip.hl * 4
    elif isinstance(ip, dpkt.ip6.IP6):
        family, total = socket.AF_INET6, ip.plen
    else:
        return None
    tcp = ip.data
    if not isinstance(tcp, dpkt.tcp.TCP):
        return None
    payload = bytes(tcp.data)
    expected = max(0, total - tcp.off * 4)
    src = (socket.inet_ntop(family, ip.src), tcp.sport)
    dst = (socket.inet_ntop(family, ip.dst), tcp.dport)
    return Segment(ts, src, dst, tcp.seq, tcp.flags, payload[:expected] if expected else payload,
                   max(0, expected - len(payload)))


def _suite_header_options(path: Path) -> list | None:
    """The options of the file's first section header when `conformance run --pcap` wrote it (its
    shb_userappl names capture.USERAPPL as the application), else None: a pcap, another tool's
    pcapng or a file that cannot be read."""
    from conformance.trace.capture import USERAPPL

    try:
        with path.open("rb") as fh:
            head = fh.read(12)
            if len(head) < 12 or head[:4] != _PCAPNG_MAGIC:
                return None
            order = {b"\x4d\x3c\x2b\x1a": "<", b"\x1a\x2b\x3c\x4d": ">"}.get(head[8:12])
            if order is None:
                return None
            length = int.from_bytes(head[4:8], "little" if order == "<" else "big")
            if not 28 <= length <= 1 << 16:
                return None
            block = head + fh.read(length - 12)
        cls = dpkt.pcapng.SectionHeaderBlockLE if order == "<" else dpkt.pcapng.SectionHeaderBlock
        options = cls(block).opts
    except (OSError, dpkt.dpkt.Error, ValueError, struct_error):
        return None
    mine = any(o.code == dpkt.pcapng.PCAPNG_OPT_SHB_USERAPPL and o.data == USERAPPL.encode() for o in options)
    return options if mine else None


def written_by_suite(path: Path) -> bool:
    """Whether the file is a capture `conformance run --pcap` wrote: the traffic of a conformance
    run, for which the profiles' test services hold."""
    return _suite_header_options(path) is not None


@dataclass(frozen=True)
class SuiteHeader:
    """What the section header of a capture `conformance run --pcap` wrote records beside its
    marker: the run's waits (ms, after --param and --time-scale; capture.WAITS_COMMENT) and the
    connections (``client -> server`` as findings name them) whose client was the target, running
    a client-role test case against the suite (capture.TARGET_CLIENTS_COMMENT).  A comment that is
    missing or malformed gives none."""

    waits: dict[str, int] = field(default_factory=dict)
    target_clients: frozenset[str] = frozenset()

    def params_under(self, params: dict[str, int]) -> dict[str, int]:
        """The recorded waits under ``params`` (a user's --param wins)."""
        return {**self.waits, **params}


def suite_header(path: Path) -> SuiteHeader | None:
    """The file's SuiteHeader, one read of its section header; None for a file the suite did not write."""
    from conformance.trace.capture import TARGET_CLIENTS_COMMENT, WAITS_COMMENT

    options = _suite_header_options(path)
    if options is None:
        return None
    waits, names = _json_after(options, WAITS_COMMENT), _json_after(options, TARGET_CLIENTS_COMMENT)
    valid_waits = isinstance(waits, dict) and all(isinstance(k, str) and type(v) is int and v >= 0
                                                  for k, v in waits.items())
    valid_names = isinstance(names, list) and all(isinstance(n, str) for n in names)
    return SuiteHeader(waits if valid_waits else {}, frozenset(names) if valid_names else frozenset())


def _json_after(options: list, prefix: str):
    """The JSON value after ``prefix`` in the first of ``options`` that is a comment starting with it;
    None where there is none or it does not parse."""
    for option in options:
        text = getattr(option, "text", None) or ""
        if option.code == dpkt.pcapng.PCAPNG_OPT_COMMENT and text.startswith(prefix):
            try:
                return json.loads(text[len(prefix):])
            except ValueError:
                return None
    return None


def recorded_waits(path: Path) -> dict[str, int]:
    """The run's waits (ms) a capture `conformance run --pcap` wrote records (SuiteHeader.waits); {} for
    any other file, or one whose comment does not parse."""
    header = suite_header(path)
    return header.waits if header is not None else {}


def recorded_target_clients(path: Path) -> frozenset[str]:
    """The connections whose client was the target, as a capture `conformance run --pcap` wrote records
    them (SuiteHeader.target_clients); empty for any other file, or a malformed list."""
    header = suite_header(path)
    return header.target_clients if header is not None else frozenset()


def read_segments(path: Path, stats: ReadStats) -> Iterator[Segment]:
    """Every TCP segment of the file, in capture order.  Raises CaptureProblem for a file that
    is no capture; a capture that ends mid-packet ends the iteration with a problem noted."""
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise CaptureProblem(f"{path}: cannot open: {exc.strerror or exc}") from None
    with fh:
        watched = _ShortReads(fh)
        reader = _reader(watched, path)
        linktype = reader.datalink()
        if linktype not in _READABLE:
            raise CaptureProblem(f"{path}: link type {linktype} is not one we read "
                                 "(Ethernet, loopback, Linux cooked, raw IP)")
        packets = iter(reader)
        while True:
            try:
                ts, buf = next(packets)
            except StopIteration:
                if watched.second_section is not None:
                    stats.problems.append(f"{path}: a second pcapng section begins at byte {watched.second_section}: "
                                          "only the first is read (split the file, e.g. with editcap, and check "
                                          "each part)")
                return
            except (dpkt.dpkt.Error, ValueError, EOFError, struct_error) as exc:
                stats.problems.append(f"{path}: the capture is cut short after packet {stats.packets} "
                                      f"({type(exc).__name__}): the rest of the file is not read")
                return
            if watched.short:
                stats.problems.append(f"{path}: the capture is cut short inside packet {stats.packets + 1}: "
                                      "the file ends there")
                return
            stats.packets += 1
            try:
                seg = _segment(float(ts), _ip_of(linktype, buf))
            except (dpkt.dpkt.Error, ValueError, IndexError, struct_error):
                seg = None  # a mangled or cut header: counted with the packets we skip
            if seg is None:
                stats.other += 1
                continue
            stats.tcp += 1
            yield seg

