"""`conformance interop PROTOCOL`: every client implementation against every server implementation,
in the way of the QUIC interop runner, through the suite's proxy, which checks every frame.

    conformance interop rsocket [--out out/interop] [--image IMAGE ...] [--case NAME ...] [--build]
    conformance interop mc0 | mtl [...]
    conformance interop [--out out/interop] [--build]   # every protocol with two or more implementations

mc0 and MTL (conformance/images/interop_zmtp.py) are checked by ZMTP monitors
(reference_impl/zmtp/monitor.py with reference_impl/mc0/monitor.py and reference_impl/mtl/monitor.py):
under CURVE the content is encrypted and only the ZMTP layer is checked (a case's notes say so).
MTL's data connections cross proxies of their own, each with its own monitor: the control proxy
points every 202 reply's port at one (conformance/images/interop_mtl.py; the log says so).
An implementation without a client role has the row "no client in this implementation" (and
likewise for servers).

The implementations are the reference (in-process) and every local image labelled
conformance.protocols with PROTOCOL (docs/image-contract.md; conformance.roles says which roles
it plays). For each pair (client, server) the server starts, a FaultProxy with no fault stands in
front of it, and the client runs each client-role case against the proxy (the image contract's
ROLE=client, TESTCASE, SERVER_URL). The proxy hands every byte of both directions to the
protocol's wire monitor, which decodes each frame with the codec and checks the rules a sender
must keep, so a case's verdict names the side that broke the spec.  Every connection the client
opens through the proxy has a monitor of its own, numbered in the order the proxy accepted them
(a reconnect, an RSocket RESUME on a new transport, a second MTL control connection): with more
than one, each violation, note and close names its connection, and from the second connection on
the wire log names the connection of each chunk (conformance/images/interop_rsocket.py:
what a RESUME connection carries on from the session).  The case's verdict is all of them:

    passed             the client exited 0 and no frame broke a rule
    unsupported        the client exited 127 (and no frame broke a rule)
    client-broke-spec  a frame the client sent broke a rule (server-broke-spec, both-broke-spec)
    failed             the client's checks failed (exit 1), or the server did not keep what a
                       fire-and-forget or METADATA_PUSH sent (read back after the case), and no
                       frame broke a rule: the two disagree on something the wire rules do not cover
    error              the pair could not run (a server that did not start, a client that hung)

OUT/interop.json holds implementations, cases and, per pair and case, the verdict, violations,
exit code and the path of its wire log (OUT/wire/<client>--<server>/<case>.log: the bytes of both
directions, the violations and the client's output). OUT/interop.html is the client x server
table; the same table is printed. TCP only: the monitor reads TCP framing. Exit 0 when every
pair ran (findings are results), 1 when a pair hit an error, 2 when nothing could run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from conformance.images.implementations import Implementation
from conformance.images.interop_protocol import InteropProtocol
from conformance.images.layout import THIRDPARTY_PREFIX

REFERENCE = "reference"
CLIENT_TIMEOUT = 60.0
SETTLE_SECONDS = 0.3  # bytes still crossing the proxy when the client exits
SIDES = {"to-target": "client", "from-target": "server"}


def _rsocket() -> InteropProtocol:
    from conformance.images.interop_rsocket import RSocketMonitors
    from reference_impl.rsocket.client_cases import CASES, run_case, server_kept
    from reference_impl.rsocket.monitor import Side
    from reference_impl.rsocket.server import start_server
    return InteropProtocol(cases=tuple(CASES), start_reference_server=start_server,
                           run_reference_client=lambda case, url, log: run_case(case, url, log=log),
                           monitor=RSocketMonitors, side_of=lambda name: Side(name), server_check=server_kept)


def _mc0() -> InteropProtocol:
    from conformance.images.interop_zmtp import mc0
    return mc0()


def _mtl() -> InteropProtocol:
    from conformance.images.interop_zmtp import mtl
    return mtl()


# One entry per protocol with two or more implementations and a wire monitor.
PROTOCOLS: dict[str, Callable[[], InteropProtocol]] = {"rsocket": _rsocket, "mc0": _mc0, "mtl": _mtl}
# a pair whose client implementation has no client role, or whose server has no server role
MISSING_ROLE = {"no-client": "no client in this implementation", "no-server": "no server in this implementation"}


@dataclass
class CaseResult:
    case: str
    verdict: str
    exit_code: int | None
    violations: list[str]
    seconds: float
    wire: str  # path of the wire log, relative to OUT
    detail: str = ""
    notes: tuple[str, ...] = ()  # what the wire monitor could not check (e.g. encrypted content)

    def as_json(self) -> dict:
        return {"case": self.case, "verdict": self.verdict, "exitCode": self.exit_code,
                "violations": self.violations, "seconds": round(self.seconds, 2), "wire": self.wire,
                "detail": self.detail, "notes": list(self.notes)}


def case_verdict(exit_code: int | None, violation_sides: set[str], error: str | None = None) -> str:
    if error is not None:
        return "error"
    if violation_sides:
        return "both-broke-spec" if len(violation_sides) > 1 else f"{violation_sides.pop()}-broke-spec"
    if exit_code == 0:
        return "passed"
    if exit_code == 127:
        return "unsupported"
    return "failed"


PAIR_ORDER = ("error", "both-broke-spec", "server-broke-spec", "client-broke-spec", "failed", "passed",
              "unsupported")


def pair_verdict(verdicts: list[str]) -> str:
    """The worst case verdict; a pair whose every case is unsupported is unsupported."""
    if not verdicts:
        return "unsupported"
    if all(v == "unsupported" for v in verdicts):
        return "unsupported"
    present = [v for v in PAIR_ORDER if v in verdicts and v != "unsupported"]
    if "both-broke-spec" not in present and {"server-broke-spec", "client-broke-spec"} <= set(present):
        return "both-broke-spec"
    return present[0]


def implementations(protocol: str, images: list[str]) -> list[Implementation]:
    """The reference, then the images (given, or every labelled one) that implement PROTOCOL."""
    from conformance.images.engine import docker_client
    from conformance.images.implementations import discover, explicit
    reference = Implementation(name=REFERENCE, image="", kind="reference", protocols=(protocol,))
    client = docker_client(timeout=60)
    try:
        found = [explicit(client, spec) for spec in images] if images else discover(client)
    finally:
        client.close()
    # a reference image is the in-process reference again; third-party images go by their peer's name
    return [reference] + [replace(impl, name=impl.name.removeprefix(THIRDPARTY_PREFIX))
                          for impl in found if protocol in impl.protocols and impl.kind != "reference"]


class _Server:
    def __init__(self, impl: Implementation, proto: InteropProtocol, protocol: str) -> None:
        self.impl, self.proto, self.protocol = impl, proto, protocol
        self.url = ""
        self._reference = None
        self._container = None

    async def __aenter__(self) -> "_Server":
        if self.impl.kind == "reference":
            self._reference = await self.proto.start_reference_server()
            self.url = self._reference.url
        else:
            from conformance.images.container import ContainerTarget
            self._container = ContainerTarget(self.impl.image, self.protocol)
            await asyncio.to_thread(self._container.start)
            self.url = self._container.url
        return self

    def logs(self) -> str:
        return self._container.logs() if self._container is not None else ""

    async def __aexit__(self, *exc) -> None:
        if self._reference is not None:
            await self._reference.close()
        if self._container is not None:
            await asyncio.to_thread(self._container.stop)


async def _run_client(impl: Implementation, proto: InteropProtocol, protocol: str, case: str,
                      url: str) -> tuple[int | None, str]:
    if impl.kind == "reference":
        lines: list[str] = []
        code = await proto.run_reference_client(case, url, lines.append)
        return code, "\n".join(lines)
    from conformance.images.container import ContainerTimeoutError, run_client
    try:
        return await asyncio.to_thread(run_client, impl.image, protocol, case, url, timeout=CLIENT_TIMEOUT)
    except ContainerTimeoutError as exc:
        return None, str(exc)


async def run_case(client: Implementation, server: _Server, proto: InteropProtocol, protocol: str, case: str,
                   out: Path, wire_path: Path) -> CaseResult:
    from conformance.faultproxy import FaultProxy
    from conformance.wirelog import WireLog
    started = time.monotonic()
    monitor = proto.monitor()  # the case's: a monitor per connection the proxy accepts
    log = WireLog()
    closed: list[tuple[int, str]] = []  # (connection, side) as each side closed its end, in order
    proxy = await FaultProxy.start(server.url, {}, log)
    proxy.tap_for_connection = _connection_taps(monitor, proto, log, closed)
    follow = getattr(monitor, "follow", None)  # connections a reply points to (MTL's data ports) get proxies too
    if follow is not None:
        proxy.rewrite_for_connection = follow(log)
    error = None
    try:
        code, client_log = await _run_client(client, proto, protocol, case, proxy.url_for(server.url))
        await asyncio.sleep(SETTLE_SECONDS)
    finally:
        await proxy.close()
        if follow is not None:
            await monitor.aclose()
    if code is None:
        error = "the client did not exit in time"
    elif proxy.upstream_error or getattr(monitor, "upstream_error", None):
        error = proxy.upstream_error or monitor.upstream_error
    kept_wrong = await proto.server_check(case, server.url) if code == 0 and error is None else None
    if kept_wrong:
        log.note(f"server check: {kept_wrong}")
        code_seen = 1  # the exchange did not do what the case is for, though the client could not tell
    else:
        code_seen = code
    notes = list(monitor.notes)  # what the monitors could not check, and why
    if monitor.messages is not None:
        log.note(f"monitor: read {monitor.frames} frames, {monitor.messages} messages")
    if hasattr(monitor, "data"):
        log.note(f"monitor: {len(monitor.data)} data connections, {monitor.data_frames} of those frames theirs")
    for note in notes:
        log.note(f"monitor: {note}")
    sides = {v.side.value for v in monitor.violations}
    verdict = case_verdict(code_seen, set(sides), error)
    violations = [str(v) for v in monitor.violations]
    wire_path.parent.mkdir(parents=True, exist_ok=True)
    wire_path.write_text(
        f"interop {protocol}: client {client.name} x server {server.impl.name}, case {case}\n"
        f"verdict: {verdict}; client exit code: {code}\n"
        + "".join(f"violation: {v}\n" for v in violations)
        + "\n--- wire (>> client to server, << server to client) ---\n" + log.render()
        + "\n--- client output ---\n" + client_log[-20000:] + "\n")
    detail = error or kept_wrong or next((line for line in reversed(client_log.splitlines()) if "FAILED" in line), "")
    if verdict == "failed" and closed and closed[0][1] == "server":
        # not a frame, so no rule of the monitor: said beside the client's own words
        which = f"{monitor.label} {closed[0][0]}" if len(monitor.connections) > 1 else "the connection"
        detail = f"the server closed {which} first; {detail}"
    return CaseResult(case, verdict, code, violations, time.monotonic() - started,
                      str(wire_path.relative_to(out)), detail[:500], tuple(notes))


def _connection_taps(monitor, proto: InteropProtocol, log, closed: list[tuple[int, str]]):
    """The proxy's tap for each connection it accepts, numbered in accept order: that connection's
    own monitor.  The wire log reads as before while there is one connection; from the second on,
    it says which connection each chunk, close and violation is of."""

    def tap_for_connection():
        connection = monitor.connection()
        number = len(monitor.connections)
        name = f"{monitor.label} {number}"
        if number == 2:
            log.note(f"{name} opened: what is above is {monitor.label} 1's; from here on a line before each "
                     "chunk names its connection")
        elif number > 2:
            log.note(f"{name} opened")

        def tap(direction: str, data: bytes) -> None:
            side = SIDES[direction]
            several = len(monitor.connections) > 1
            if not data:
                closed.append((number, side))
                log.note(f"the {side} closed its end of {name if several else 'the connection'}")
                return
            if several:  # every chunk: other taps (MTL's data connections) log between them
                log.note(f"{name}:")
            (log.sent if direction == "to-target" else log.received)(data)
            for violation in connection.feed(proto.side_of(side), data):
                log.note(f"VIOLATION {name}: {violation}" if several else f"VIOLATION {violation}")
        return tap
    return tap_for_connection


async def run_pair(client: Implementation, server_impl: Implementation, proto: InteropProtocol, protocol: str,
                   cases: list[str], out: Path) -> dict:
    started = time.monotonic()
    results: list[CaseResult] = []
    folder = out / "wire" / f"{client.name}--{server_impl.name}"
    try:
        async with _Server(server_impl, proto, protocol) as server:
            for case in cases:
                results.append(await run_case(client, server, proto, protocol, case, out, folder / f"{case}.log"))
            server_logs = server.logs()
    except Exception as exc:  # a server that did not start: every case of the pair is an error
        detail = f"{type(exc).__name__}: {exc}"
        results = [CaseResult(case, "error", None, [], 0.0, "", detail[:500]) for case in cases]
        server_logs = ""
    if server_logs:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "server.log").write_text(server_logs[-200000:])
    return {"client": client.name, "server": server_impl.name,
            "verdict": pair_verdict([r.verdict for r in results]),
            "cases": [r.as_json() for r in results], "seconds": round(time.monotonic() - started, 1)}


def run_interop(protocol: str, impls: list[Implementation], out: Path, cases: list[str] | None = None,
                log: Callable[[str], None] = print) -> dict:
    proto = PROTOCOLS[protocol]()
    chosen = list(cases or proto.cases)
    # every implementation on both axes: a cell of a missing role says so
    clients = servers = list(impls)
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    pairs = []
    for client in clients:
        for server in servers:
            missing = "no-client" if "client" not in client.roles else "no-server" if "server" not in server.roles \
                else None
            if missing:
                pairs.append({"client": client.name, "server": server.name, "verdict": missing, "cases": [],
                              "detail": MISSING_ROLE[missing], "seconds": 0.0})
                continue
            pair = asyncio.run(run_pair(client, server, proto, protocol, chosen, out))
            log(f"{client.name:>22} x {server.name:<22} {pair['verdict']:<18} ({pair['seconds']:.0f}s)")
            pairs.append(pair)
    document = {"protocol": protocol, "transport": "tcp", "cases": chosen,
                "implementations": [impl.as_json() for impl in impls],
                "clients": [c.name for c in clients], "servers": [s.name for s in servers],
                "pairs": pairs, "seconds": round(time.monotonic() - started, 1)}
    (out / "interop.json").write_text(json.dumps(document, indent=1))
    from conformance.images.matrix_report import interop_html
    (out / "interop.html").write_text(interop_html(document))
    return document


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    if args.protocol is not None and args.protocol not in PROTOCOLS:
        print(f"conformance interop: no interop matrix for {args.protocol} (known: {', '.join(PROTOCOLS)})",
              file=sys.stderr)
        return 2
    if args.protocol is None:
        # every protocol with two or more implementations, each in OUT/<protocol>/
        if args.cases:
            print("conformance interop: --case needs a protocol", file=sys.stderr)
            return 2
        codes = [run_protocol(protocol, args, Path(args.out) / protocol, only_matrices=True)
                 for protocol in PROTOCOLS]
        ran = [code for code in codes if code != 2]
        return max(ran) if ran else 2
    return run_protocol(args.protocol, args, Path(args.out))


def run_protocol(protocol: str, args: argparse.Namespace, out: Path, only_matrices: bool = False) -> int:
    """One protocol's matrix; with only_matrices, a protocol with one implementation is skipped (exit 2)."""
    from conformance.images.engine import EngineUnavailableError
    from conformance.images.implementations import SelectionError
    from conformance.images.matrix_report import print_interop_table
    from conformance.images.results import ImageBuildError
    try:
        if args.build:
            from conformance.images.build import build_peer_images
            from conformance.images.thirdparty import available_peers
            names = [p.name for p in available_peers(protocols=[protocol])]
            build_peer_images(names, log=lambda line: print(line, flush=True))
        impls = implementations(protocol, args.images)
    except (EngineUnavailableError, ImageBuildError, SelectionError) as exc:
        print(f"conformance interop: {exc}", file=sys.stderr)
        return 2
    if only_matrices and len(impls) < 2:
        print(f"conformance interop: {protocol}: skipped, one implementation only ({impls[0].name})", flush=True)
        return 2
    unknown = sorted(set(args.cases or []) - set(PROTOCOLS[protocol]().cases))
    if unknown:
        print(f"conformance interop: unknown case(s) {', '.join(unknown)}", file=sys.stderr)
        return 2
    document = run_interop(protocol, impls, out, args.cases, log=lambda line: print(line, flush=True))
    print_interop_table(document, out)
    return 1 if any(pair["verdict"] == "error" for pair in document["pairs"]) else 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="conformance interop", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("protocol", nargs="?", help=f"one of: {', '.join(PROTOCOLS)}; none: every one of them "
                                                    "with two or more implementations, each in OUT/PROTOCOL/")
    parser.add_argument("--out", default="out/interop", help="folder for interop.json, interop.html and wire logs")
    parser.add_argument("--image", action="append", dest="images", default=[], metavar="IMAGE",
                        help="only this image beside the reference (repeatable); default: every local image "
                             "labelled conformance.protocols with PROTOCOL")
    parser.add_argument("--case", action="append", dest="cases", metavar="NAME",
                        help="only this client-role case (repeatable)")
    parser.add_argument("--build", action="store_true", help="build the protocol's third-party images first (cached)")
    return parser
