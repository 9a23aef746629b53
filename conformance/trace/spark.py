"""`conformance check-trace --spark`: the same checks over many captures on a Spark cluster.

Work is split by file, then by connection: each file is read on an executor into its TCP
segments, keyed by (file, the connection's two endpoints, the segment's index in the file), and
partitioned by the first two, so one file's flows spread over partitions (as many as the
captures' size asks).  Each partition is sorted by the whole key (PySpark's external sorter,
which spills past ``spark.python.worker.memory``), so each connection's segments come out
together and in capture order, and stream through the same reassembler and observers as the
single-process checker (check.check_segments) one connection at a time: no connection's
segments are ever gathered in a list, and a worker's memory does not grow with the capture.  The
connections' session facts (trace/sessions) are then grouped by (protocol, session key) and
checked across connections, on the executors too.  The
output is what `--records` writes (one record per finding or note) plus a summary per
implementation, under ``--out`` (a local path or a URI, as for `conformance report`).

Local paths (and ``file:`` URIs) are opened by the executors themselves, so a file never has to
fit in memory; other URIs are read by Spark's ``binaryFiles`` (whole file per task) and spooled
to a temporary file on the executor.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path

from conformance.record_format import SCHEMA_VERSION
from conformance.trace.check import FileResult, check_segments, judged_by
from conformance.trace.packets import CaptureProblem, ReadStats, Segment, read_segments

_PROBLEM = "~problem"  # key of a file's problem lines, sorted apart from connections
#: capture bytes per partition of the sorted connections (fewer, larger sorts spill more)
BYTES_PER_PARTITION = 32 * 2**20
#: a Python worker buffers a task's segments in memory up to this before it spills them to disk
#: (map side and sort); Spark's 512m a worker let the workers grow to 1 GB on two cores
WORKER_MEMORY = ("spark.python.worker.memory", "128m")


def _partitions(on_disk: list[tuple[str, str]], remote: list[str], parallelism: int) -> int:
    """Enough partitions that each holds about BYTES_PER_PARTITION of captures (remote files, whose
    sizes the driver does not read, count as one partition each), and at least the cores."""
    size = 0
    for _, path in on_disk:
        try:
            size += os.path.getsize(path)
        except OSError:
            pass  # the executor that reads it reports the problem
    return max(parallelism, 2, -(-size // BYTES_PER_PARTITION) + len(remote))


def _segments_of(path: str, local: Path | None, data: bytes | None, test_services: str = "auto"):
    """(key, value) pairs of one capture: per segment ((file, endpoints, index), segment, whether
    the test services hold for the file and what its suite header records (check.judged_by, one read
    of the file's header)), and per problem ((_PROBLEM, file, 0), message)."""
    spool = None
    if local is None:
        spool = tempfile.NamedTemporaryFile(suffix=".pcap", delete=False)
        spool.write(data or b"")
        spool.close()
        local = Path(spool.name)
    stats = ReadStats()
    # one header object for the whole file: the batches the shuffle pickles hold it once
    services, header = judged_by(local, test_services)
    try:
        for index, seg in enumerate(read_segments(local, stats)):
            # a plain tuple: the shuffle pickles it several times faster than the dataclass
            yield (path, tuple(sorted((seg.src, seg.dst))), index), (seg.ts, seg.src, seg.dst, seg.seq, seg.flags,
                                                                      seg.payload, seg.missing, services, header)
        problems = stats.problems
        if stats.packets and not stats.tcp:
            problems = problems + [f"{path}: {stats.packets} packets, none of them TCP: nothing to check"]
    except CaptureProblem as exc:
        problems = [str(exc)]
    finally:
        if spool is not None:
            os.unlink(spool.name)
    for message in problems:
        yield (_PROBLEM, path, 0), message.replace(str(local), path) if spool else message


def _connection_of(key) -> tuple:
    """The partitioning key: a connection's segments (or a file's problems) share one partition."""
    return key[:2]


def _check_partition(pairs, ports: dict[int, str], default: str | None, params: dict[str, int],
                     run: str, time: str, impl: str | None, keys=None):
    """One sorted partition: its records, its problems, and one count of frames and connections."""
    from itertools import chain, groupby

    from conformance.trace.findings import record_of
    frames = connections = 0
    for connection, items in groupby(pairs, key=lambda kv: _connection_of(kv[0])):
        if connection[0] == _PROBLEM:
            yield from ({"problem": message} for _, message in items)
            continue
        path = connection[0]
        result = FileResult(Path(path))
        first = next(items)
        services, header = first[1][-2:]  # the same for every segment of the file
        check_segments((Segment(*seg[:-2]) for _, seg in chain([first], items)), result, ports, default,
                       header.params_under(params), keys.value if keys is not None else None, services,
                       header.target_clients)
        frames, connections = frames + result.frames, connections + result.connections
        yield from (record_of(x, run=run, time=time, source=path, implementation=impl)
                    for x in [*result.findings, *result.notes])
        yield from ({"session": (protocol, key), "fact": {**fact, "capture": path}}
                    for protocol, key, fact in result.facts)
    yield {"frames": frames, "connections": connections}


def _check_session(item, run: str, time: str, impl: str | None):
    """The checks across connections of one (protocol, session key), from its facts (trace/sessions)."""
    from conformance.trace.findings import record_of
    from conformance.trace.sessions import findings_of
    (protocol, _), facts = item
    return [record_of(finding, run=run, time=time, source=capture, implementation=impl)
            for capture, finding in findings_of(protocol, list(facts))]


def run_spark(args, ports: dict[int, str], params: dict[str, int], keys=None) -> int:
    """Exit status as `conformance report`'s where they overlap: 2 a bad command line, 3 no
    capture could be read, 4 Spark could not start or the job failed; and 1 on a MUST finding."""
    from pyspark import StorageLevel
    from pyspark.rdd import portable_hash

    from reports.fs import FileSystems, LocationError, child, local_path
    from reports.spark_session import build_session, java_problem, parse_conf

    from conformance.records import new_run_id, utc_now

    if problem := java_problem():
        print(f"conformance check-trace --spark: {problem}", file=sys.stderr)
        return 4
    try:
        conf = parse_conf(args.conf)
        conf.setdefault(*WORKER_MEMORY)
    except ValueError as exc:
        print(f"conformance check-trace --spark: {exc}", file=sys.stderr)
        return 2
    spark = build_session(args.master, app_name="conformance-check-trace", conf=conf)
    try:
        sc = spark.sparkContext
        located = [(uri, local_path(uri)) for uri in args.files]
        on_disk = [(uri, str(path)) for uri, path in located if path is not None]
        mode = getattr(args, "test_services", "auto")
        pairs = sc.parallelize(on_disk, max(1, len(on_disk))).flatMap(
            lambda u: _segments_of(u[0], Path(u[1]), None, mode))
        remote = [uri for uri, path in located if path is None]
        if remote:
            pairs = pairs.union(sc.binaryFiles(",".join(remote)).flatMap(lambda f: _segments_of(f[0], None, f[1], mode)))
        run, time, default, impl = new_run_id(), utc_now(), args.protocol, args.impl_name
        partitions = _partitions(on_disk, remote, sc.defaultParallelism)
        shared = sc.broadcast(keys) if keys else None  # --keylog: the parsed keys, once per executor
        checked = (pairs.repartitionAndSortWithinPartitions(partitions, lambda key: portable_hash(_connection_of(key)))
                   .mapPartitions(lambda part: _check_partition(part, ports, default, params, run, time, impl, shared))
                   .persist(StorageLevel.MEMORY_AND_DISK))  # both stages below read it: checked once
        # second stage: the session facts of all connections, grouped by (protocol, session key)
        across = (checked.filter(lambda r: "session" in r).map(lambda r: (r["session"], r["fact"])).groupByKey()
                  .flatMap(lambda item: _check_session(item, run, time, impl)))
        rows = checked.filter(lambda r: "session" not in r).union(across).collect()
        checked.unpersist()
        return _write(args, rows, FileSystems(spark), child)
    except LocationError as exc:
        print(f"conformance check-trace --spark: {exc}", file=sys.stderr)
        return 3
    except Exception as exc:  # a failed Spark job: one line, like the report pipeline
        if type(exc).__module__.startswith(("py4j", "pyspark")):
            print(f"conformance check-trace --spark: the Spark job failed: {str(exc).splitlines()[0]}", file=sys.stderr)
            return 4
        raise
    finally:
        spark.stop()


def _write(args, rows, fs, child) -> int:
    records = sorted((r for r in rows if "protocol" in r), key=lambda r: (r["capture"], r["connection"], r["message"]))
    problems = sorted(r["problem"] for r in rows if "problem" in r)
    frames = sum(r.get("frames", 0) for r in rows)
    connections = sum(r.get("connections", 0) for r in rows)
    for problem in problems:
        print(f"problem: {problem}", file=sys.stderr)
    summary: dict[str, Counter] = {}
    for r in records:
        summary.setdefault(r["implementation"], Counter())[r["grade"]] += 1
    fs.mkdirs(args.out)
    fs.write_text(child(args.out, "records.jsonl"),
                  "".join(json.dumps({"schemaVersion": SCHEMA_VERSION, **r}, sort_keys=True) + "\n" for r in records))
    fs.write_text(child(args.out, "summary.json"), json.dumps(
        {"connections": connections, "frames": frames, "problems": problems,
         "implementations": {k: dict(v) for k, v in sorted(summary.items())}}, indent=2, sort_keys=True) + "\n")
    findings = [r for r in records if r["grade"] != "INFORMATIONAL"]
    failing = [r for r in findings if r["grade"] == "FAILED" or args.strict and r["grade"] == "NON-STRICT"]
    print(f"{len(args.files)} captures: {connections} connections, {frames} frames checked, {len(findings)} findings; "
          f"records: {child(args.out, 'records.jsonl')}  summary: {child(args.out, 'summary.json')}")
    return 1 if failing else (3 if problems and not connections else 0)
