"""The `conformance` command.

    conformance serve stmp --port 9000 [--transport ws]
    conformance serve stmp --role client --connect tcp://127.0.0.1:9000 --testcase echo
    conformance run stmp --target tcp://127.0.0.1:9000 [--out DIR] [-k CASE-ID] [--strict] [--jobs N|auto]
                         [--summary-md FILE [--baseline RECORDS]]
    conformance cases [stmp]
    conformance vectors check [PATH ...]
    conformance proxy --to tcp://127.0.0.1:9000 --listen 9001 --chunk 1
    conformance report --input RUN... --out DIR
    conformance images build
    conformance matrix --out DIR
    conformance selftest [PROTOCOL ...] [--exhaustive]
    conformance check-trace --protocol stmp [--port 9000=stmp ...] CAPTURE...
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

from conformance.paths import scenarios_dir
from conformance.protocols import KNOWN, adapter_for, available


#: serve flags that mean something to one protocol only, and their defaults.
_SERVE_FLAGS_OF = {
    "mc0": {"curve_secret": None, "null": False},
    "micromessage2": {"read_timeout": None},
    "mtl": {"redeliver": None, "data_port": 0, "anonymous": False, "auth_ttl": None},
}


def _serve(args: argparse.Namespace) -> int:
    if args.role == "client" and not (args.connect and args.testcase):
        print("conformance serve: --role client needs --connect URL and --testcase NAME", file=sys.stderr)
        return 2
    for protocol, flags in _SERVE_FLAGS_OF.items():
        given = [name for name, default in flags.items() if getattr(args, name) != default]
        if given and args.protocol != protocol:
            flag = "--" + given[0].replace("_", "-")
            print(f"conformance serve: {flag} is a {protocol} option, not {args.protocol}'s", file=sys.stderr)
            return 2
    try:
        return adapter_for(args.protocol).serve(args)
    except KeyboardInterrupt:
        return 0


def _unknown_protocol(command: str, protocols: list[str]) -> str | None:
    """The usage error for the first name that is not a protocol of this build, if any."""
    known = available()
    for name in protocols:
        if name not in known:
            return f"conformance {command}: unknown protocol {name!r}; the protocols are: {', '.join(known)}"
    return None


def _run(args: argparse.Namespace, extra: list[str]) -> int:
    import pytest
    protocols = available() if args.protocols == ["all"] else args.protocols
    if error := _unknown_protocol("run", protocols):
        print(error + " (or all)", file=sys.stderr)
        return 2
    folders = []
    for protocol in protocols:
        folder = scenarios_dir() / protocol
        if not folder.is_dir():
            print(f"conformance run: no scenarios for {protocol!r} in {scenarios_dir()}", file=sys.stderr)
            return 2
        folders.append(str(folder))
    if args.baseline and not args.summary_md:
        print("conformance run: --baseline is compared in the summary: give --summary-md FILE too", file=sys.stderr)
        return 2
    if args.baseline and not Path(args.baseline).is_file():
        print(f"conformance run: --baseline {args.baseline} is not a records file", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    argv = folders + [
        # --assert=plain: cases are graded by the suite's own exceptions, never by assert statements,
        # and assertion rewriting recompiles every module of every pytest11 plugin's distribution
        # (hypothesis: 70 modules) on each run when bytecode is not cached: about 1.5 s per run.
        # the project's other pytest plugins grade no scenario: hypothesis alone costs 0.2 s of start-up
        "-p", "no:hypothesispytest", "-p", "no:benchmark",
        "-p", "no:cacheprovider", "--assert=plain", f"--rootdir={scenarios_dir().parent}",
        f"--target={args.target}", f"--records={out / 'records.jsonl'}",
        f"--junitxml={out / 'junit.xml'}", f"--alluredir={out / 'allure-results'}",
        "-o", "junit_family=xunit2", "-o", "testpaths=",
    ]
    if args.impl_version:
        argv.append(f"--impl-version={args.impl_version}")
    if args.impl_name:
        argv.append(f"--impl-name={args.impl_name}")
    if args.target_client:
        argv.append(f"--target-client={args.target_client}")
    if args.strict:
        argv.append("--strict")
    if args.keyword:
        argv += ["-k", args.keyword]
    for param in args.param:
        argv.append(f"--param={param}")
    if args.time_scale is not None:
        argv.append(f"--time-scale={args.time_scale}")
    argv.append(f"--jobs={args.jobs}")
    argv += ["-q", "-rfE"] + extra
    if args.pcap:
        from conformance.trace import capture
        recorder = capture.start()
    try:
        code = pytest.main(argv)
    finally:
        if args.pcap:
            capture.stop()
    if args.pcap:
        error = _write_pcap(recorder, Path(args.pcap), args.param, args.time_scale)
        if error:
            print(error, file=sys.stderr)
            return 2
    print(f"results: {out / 'records.jsonl'}  junit: {out / 'junit.xml'}  allure-results: {out / 'allure-results'}")
    if args.summary_md:
        from conformance.summary_md import write
        write(out / "records.jsonl", Path(args.summary_md), Path(args.baseline) if args.baseline else None)
        print(f"summary: {args.summary_md}")
    return int(code)


def _write_pcap(recorder, path: Path, params: list[str], time_scale: float | None) -> str | None:
    """The run's TCP traffic as pcapng, with the run's waits; a one-line error when it cannot be written."""
    from conformance.extras import missing_extra
    from conformance.trace import capture
    from conformance.trace.cli import parse_params
    # the run itself refused malformed --param values; here they are only left out
    waits = capture.run_waits(parse_params(params, []), time_scale or 1.0)
    try:
        count = capture.write(recorder, path, waits)
    except ModuleNotFoundError as exc:
        return str(missing_extra(exc, "trace", "conformance run --pcap") or exc)
    except OSError as exc:
        return f"conformance run: cannot write --pcap {path}: {exc.strerror or exc}"
    print(f"capture: {path} ({len(recorder.conns)} connections, {count} packets)")
    if keys := capture.session_keys(recorder):
        from conformance.trace.keylog import beside
        print(f"key log: {beside(path)} ({len(keys)} CURVE session keys; check-trace --keylog {beside(path)})")
    return None


def _cases(args: argparse.Namespace) -> int:
    from conformance.scenario.loader import BrokenCase, ScenarioError, load_file
    protocols = args.protocols or available()
    if error := _unknown_protocol("cases", protocols):
        print(error, file=sys.stderr)
        return 2
    status = 0
    for protocol in protocols:
        for path in sorted((scenarios_dir() / protocol).glob("*.yaml")):
            try:
                adapter = adapter_for(protocol)
                loaded = load_file(path, adapter.frame_check, adapter.shared_state_use)
            except ScenarioError as exc:
                print(f"BROKEN {exc}")
                status = 1
                continue
            for case in loaded.cases:
                if isinstance(case, BrokenCase):
                    print(f"BROKEN {case.error}")
                    status = 1
                else:
                    print(f"{case.id:<60} {case.requirement:<6} {case.title}")
    return status


def _proxy(args: argparse.Namespace) -> int:
    from conformance.faultproxy import FaultProxy
    options = {"direction": args.direction}
    if args.chunk:
        options["chunk"] = "random" if args.chunk == "random" else int(args.chunk)
    if args.delay_ms:
        options["delay_ms"] = args.delay_ms
    if args.cut_after is not None:
        options["cut_after_bytes"] = args.cut_after

    async def main() -> None:
        proxy = await FaultProxy.start(args.to, options, listen_port=args.listen)
        print(f"listening on tcp://127.0.0.1:{proxy.port} -> {args.to}", flush=True)
        await asyncio.Event().wait()

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
    return 0


def _time_scale(text: str) -> float:
    from conformance.scenario.timing import parse_time_scale
    try:
        return parse_time_scale(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a number above 0, got {text!r}") from None


def _check_trace(args: argparse.Namespace) -> int:
    from conformance.extras import missing_extra
    try:
        from conformance.trace.cli import run
        return run(args)
    except ModuleNotFoundError as exc:
        error = missing_extra(exc, "trace", "conformance check-trace")
        if error is None and args.spark:
            error = missing_extra(exc, "report", "conformance check-trace --spark")
        if error is None:
            raise
        print(error, file=sys.stderr)
        return 2


def _jobs(text: str) -> str:
    from conformance.scenario.schedule import parse_jobs
    try:
        parse_jobs(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a whole number from 1, or auto; got {text!r}") from None
    return text


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="conformance", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run a reference implementation")
    serve.add_argument("protocol", choices=KNOWN)
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=0, help="0 lets the OS pick; the URL is printed")
    serve.add_argument("--transport", choices=["tcp", "ws"], default=None)
    serve.add_argument("--role", choices=["server", "client"], default="server")
    serve.add_argument("--connect", help="client role: the server URL")
    serve.add_argument("--testcase", help="client role: which client test case to run")
    serve.add_argument("--heartbeat-interval", type=float, default=5.0, help="seconds")
    serve.add_argument("--heartbeat-timeout", type=float, default=15.0, help="seconds")
    serve.add_argument("--curve-secret", help="mc0: the broker's CURVE secret key file")
    serve.add_argument("--null", action="store_true", help="mc0: allow the NULL mechanism")
    serve.add_argument("--read-timeout", type=float, default=None,
                       help="micromessage2: seconds a frame may stay incomplete")
    serve.add_argument("--redeliver", type=float, default=None,
                       help="mtl: seconds before an unconfirmed Content is sent again")
    serve.add_argument("--data-port", type=int, default=0, help="mtl: the data port (0: the OS picks)")
    serve.add_argument("--anonymous", action="store_true", help="mtl: answer Connection.Open with 201 Ready")
    serve.add_argument("--auth-ttl", type=float, default=None, help="mtl: seconds an authentication lasts")

    run = sub.add_parser("run", help="run the suite (pytest) against a target; extra args after -- go to pytest")
    run.add_argument("protocols", nargs="+", help="protocol names, or all")
    run.add_argument("--target", default="ref")
    run.add_argument("--target-client", default=None)
    run.add_argument("--out", default="out/run", help="folder for records, JUnit and allure-results")
    run.add_argument("--strict", action="store_true")
    run.add_argument("--summary-md", metavar="FILE", default=None,
                     help="write a Markdown summary (counts, FAILED cases, baseline diff); "
                          "appended to $GITHUB_STEP_SUMMARY when set")
    run.add_argument("--baseline", metavar="RECORDS", default=None,
                     help="with --summary-md: an earlier records.jsonl whose grades the summary compares")
    run.add_argument("-k", dest="keyword", default=None, help="pytest -k expression, e.g. a case id")
    run.add_argument("--impl-name", default=None)
    run.add_argument("--impl-version", default=None,
                     help="implementation version (default: a docker image's org.opencontainers.image.version "
                          "label, the suite's version for ref, else unknown)")
    run.add_argument("--param", action="append", default=[], metavar="NAME=MS",
                     help="a target timer or one of the suite's waits, e.g. silence_ms=1000")
    run.add_argument("--pcap", default=None, metavar="FILE",
                     help="write the suite's traffic as a pcapng capture (for Wireshark and check-trace; its "
                     "header names the application 'conformance run --pcap', which check-trace's "
                     "--test-services auto reads), and the CURVE session keys the suite generated as a key "
                     "log beside it, FILE.keys (for check-trace --keylog)")
    run.add_argument("--time-scale", default=None, metavar="F", type=_time_scale,
                     help="stretch every wait on the target by F > 0 (a slow target); default 1")

    run.add_argument("--jobs", default="auto", metavar="N|auto", type=_jobs,
                     help="cases at once, each on its own connections (protocols side by side); default auto: "
                          "concurrent against ref and the suite's own images, one at a time against any other "
                          "target unless N is given. Reports keep the serial order")

    cases = sub.add_parser("cases", help="list the cases")
    cases.add_argument("protocols", nargs="*")

    vectors = sub.add_parser("vectors", help="byte-level vectors")
    vectors.add_argument("action", choices=["check"])
    vectors.add_argument("rest", nargs=argparse.REMAINDER)

    proxy = sub.add_parser("proxy", help="a fault proxy in front of a target")
    proxy.add_argument("--to", required=True)
    proxy.add_argument("--listen", type=int, default=0)
    proxy.add_argument("--chunk", default=None,
                       help="N bytes per write, or random; each piece is followed by a pause (about 1 ms, or "
                            "--delay-ms) so it arrives on its own: at --chunk 1 that is about 1 KB/s, so cases "
                            "that move megabytes time out through it (a larger N, or -k to leave them out)")
    proxy.add_argument("--delay-ms", type=int, default=0,
                       help="with --chunk: a pause between pieces; without: every read forwarded this late")
    proxy.add_argument("--cut-after", type=int, default=None)
    proxy.add_argument("--direction", choices=["to-target", "from-target", "both"], default="to-target")

    selftest = sub.add_parser("selftest", help="run every one-bug server and client: which case catches each bug")
    from conformance.selftest.command import add_arguments
    add_arguments(selftest)

    check = sub.add_parser("check-trace", help="check captured traffic (pcap, pcapng) against the protocol cores")
    from conformance.trace.cli import add_arguments as add_check_arguments
    add_check_arguments(check)

    # listed for --help; their arguments are parsed by the commands themselves (see DELEGATED)
    sub.add_parser("report", help="compliance reports from result records (PySpark): report --help")
    sub.add_parser("images", help="build and list implementation images: images --help")
    sub.add_parser("matrix", help="every image x protocol x case, re-running failed pairs: matrix --help")
    sub.add_parser("interop", help="every client x every server implementation through the checking proxy: "
                                   "interop --help")
    return parser


def _delegated(name: str):
    if name == "report":
        from reports.cli import main
    elif name == "images":
        from conformance.images.cli import main
    elif name == "interop":
        from conformance.images.interop import main
    else:
        from conformance.images.matrix import main
    return main


DELEGATED = ("report", "images", "matrix", "interop")


def _run_delegated(name: str, argv: list[str]) -> int:
    from conformance.extras import missing_extra
    try:
        return _delegated(name)(argv)
    except ModuleNotFoundError as exc:
        # modules of these commands are imported lazily, some only once work has begun
        error = missing_extra(exc, name, f"conformance {name}")
        if error is None:
            raise
        print(error, file=sys.stderr)
        return 2


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:
        # the reader of our output went away (`conformance cases | head`): no traceback, and no
        # second one when Python flushes stdout at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + 13  # what a shell reports for a process ended by SIGPIPE


def _main(argv: list[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] and argv[0] in DELEGATED:
        # before argparse: these commands own their whole command line (argparse.REMAINDER
        # would refuse one that starts with an option)
        return _run_delegated(argv[0], argv[1:])
    extra: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1:]
    args = build_parser().parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    if args.command == "run":
        return _run(args, extra)
    if args.command == "cases":
        return _cases(args)
    if args.command == "vectors":
        from conformance.vectors.check import main as check_main
        return check_main(args.rest)
    if args.command == "proxy":
        return _proxy(args)
    if args.command == "check-trace":
        return _check_trace(args)
    if args.command == "selftest":
        from conformance.selftest.command import run as selftest
        return selftest(args)
    return 2


if __name__ == "__main__":
    sys.exit(main())
