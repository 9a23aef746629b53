"""check-trace's work: capture files -> connections -> observers -> findings and notes.

One file's problems (not a capture, cut short, no TCP) are messages about that file; the other
files are still checked.  Connections are streamed through the reassembler into their observers
as the file is read, so memory grows with the open connections, not with the capture.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from conformance.trace.findings import Finding, Note
from conformance.trace.observer import Observer
from conformance.trace.packets import CaptureProblem, ReadStats, SuiteHeader, read_segments, suite_header
from conformance.trace.rules import rules_for
from conformance.trace.tcp import CLIENT, Reassembler

#: protocols with a WebSocket binding: a connection that starts with an HTTP GET is read as one
WS_BINDINGS = frozenset({"stmp", "rsocket"})
#: check-trace --test-services: whether the rules may judge what the profiles' test services promise
TEST_SERVICES = ("auto", "on", "off")


def services_for(path: Path, mode: str) -> bool:
    """``mode`` of --test-services for one file: "auto" is on only for a capture `conformance run
    --pcap` wrote (its peers were asked only for the test services), off for any other traffic."""
    return judged_by(path, mode)[0]


def judged_by(path: Path, mode: str) -> tuple[bool, SuiteHeader]:
    """Whether the test services hold for ``path`` (services_for), and, when they do, what its suite
    header records (the run's waits, the target's client connections; empty for another capture):
    one read of the header per file."""
    if mode not in TEST_SERVICES:
        raise ValueError(f"--test-services {mode!r}: one of {', '.join(TEST_SERVICES)}")
    header = suite_header(path) if mode != "off" else None
    services = mode == "on" or mode == "auto" and header is not None
    return services, header if services and header is not None else SuiteHeader()


@dataclass
class FileResult:
    path: Path
    findings: list[Finding] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    stats: ReadStats = field(default_factory=ReadStats)
    connections: int = 0
    frames: int = 0
    #: (protocol, session key, fact) of the connections whose rules gave any (trace/sessions)
    facts: list[tuple[str, str, dict]] = field(default_factory=list)


class _LazyObserver:
    """Picks TCP or WebSocket on the client's first bytes, then is that connection's observer."""

    def __init__(self, protocol: str, client, server, params: dict[str, int], keys=None,
                 services: bool = False, test_client: bool = False) -> None:
        self.protocol, self.client, self.server, self.params, self.keys = protocol, client, server, params, keys
        self.services, self.test_client = services, test_client
        self.observer: Observer | None = None
        self.early: list[tuple] = []  # what came before the client's first bytes (a server greeting)

    def _open(self, transport: str) -> None:
        self.observer = Observer(self.protocol, transport, self.client, self.server,
                                 rules_for(self.protocol, transport, self.params, self.keys, self.services,
                                           self.test_client))
        for method, args in self.early:
            getattr(self.observer, method)(*args)

    def data(self, sender, ts, offset, data) -> None:
        if self.observer is None and sender == CLIENT:
            ws = self.protocol in WS_BINDINGS and offset == 0 and data[:4] == b"GET "
            self._open("ws" if ws else "tcp")
        self._call("data", sender, ts, offset, data)

    def gap(self, sender, offset, reason) -> None:
        self._call("gap", sender, offset, reason)

    def end(self, sender, ts, how) -> None:
        self._call("end", sender, ts, how)

    def abort(self, sender, ts) -> None:
        self._call("abort", sender, ts)

    def _call(self, method: str, *args) -> None:
        if self.observer is None:
            self.early.append((method, args))
            if len(self.early) > 10_000:  # a server that talks first for long: not a binding we guess
                self._open("tcp")
        else:
            getattr(self.observer, method)(*args)

    def finish(self) -> Observer:
        if self.observer is None:
            self._open("tcp")
        self.observer.finish()
        return self.observer


class _Sinks:
    def __init__(self, protocol_of_port: dict[int, str], default: str | None, params: dict[str, int],
                 keys=None, services: bool = False, target_clients: frozenset[str] = frozenset()) -> None:
        self.protocol_of_port, self.default, self.params, self.keys = protocol_of_port, default, params, keys
        self.services, self.target_clients = services, target_clients
        self.server_ports = set(protocol_of_port)
        self.opened = 0

    def __call__(self, client, server):
        protocol = self.protocol_of_port.get(server[1], self.default)
        if protocol is None:
            return None
        self.opened += 1
        test_client = f"{client[0]}:{client[1]} -> {server[0]}:{server[1]}" in self.target_clients
        return _LazyObserver(protocol, client, server, self.params, self.keys, self.services, test_client)


def check_segments(segments, result: FileResult, protocol_of_port: dict[int, str], default: str | None,
                   params: dict[str, int], keys=None, services: bool = False,
                   target_clients: frozenset[str] = frozenset()) -> _Sinks:
    """Reassemble and observe ``segments`` (one file's, or one connection's, in capture order);
    each connection's findings are collected as it closes, and its state let go.  ``keys``: the
    key log's session keys (keylog.KeyLog), for the rules that open encrypted sessions;
    ``services``: the test services' promises hold (services_for); ``target_clients``: the
    connections whose client was the target (judged_by)."""
    sinks = _Sinks(protocol_of_port, default, params, keys, services, target_clients)

    def done(conn) -> None:
        observer = conn.sink.finish()
        result.findings += observer.findings
        result.notes += observer.notes
        result.frames += observer.frames_checked
        result.facts += observer.facts
        result.connections += 1

    reassembler = Reassembler(sinks, done)
    for segment in segments:
        reassembler.feed(segment)
    reassembler.finish()
    return sinks


def check_file(path: Path, protocol_of_port: dict[int, str], default: str | None,
               params: dict[str, int], keys=None, test_services: str = "auto") -> FileResult:
    """``test_services``: --test-services's mode (services_for)."""
    result = FileResult(path)
    services, header = judged_by(path, test_services)
    try:
        sinks = check_segments(read_segments(path, result.stats), result, protocol_of_port, default,
                               header.params_under(params), keys, services, header.target_clients)
    except CaptureProblem as exc:
        result.problems.append(str(exc))
        return result
    result.problems += result.stats.problems
    if result.stats.packets and not result.stats.tcp:
        result.problems.append(f"{path}: {result.stats.packets} packets, none of them TCP: nothing to check")
    elif result.stats.tcp and not sinks.opened:
        result.problems.append(f"{path}: no connection to a port the port map names (ports: "
                               f"{', '.join(map(str, sorted(protocol_of_port))) or 'none'})")
    return result
