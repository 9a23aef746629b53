"""The benchmark scripts run (tiny counts, no timing asserted): codec, ZMTP beside libzmq, suites."""

from __future__ import annotations

import cProfile
import importlib
import pstats
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture
def bench(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))

    def load(name: str):
        return importlib.import_module(name)
    return load


def test_bench_codec_covers_every_protocol_and_round_trips(bench, monkeypatch, capsys) -> None:
    codec = bench("bench_codec")
    monkeypatch.setattr(codec, "MIX_SIZE", 24)
    monkeypatch.setattr(codec, "REPEATS", 1)
    codec.main()
    out = capsys.readouterr().out
    for protocol in ("stmp", "micromessage2", "rsio", "zmtp", "mc0", "mtl"):
        assert f"\n{protocol} " in out
    assert "on ZMTP frames" in out


def test_bench_zmtp_moves_the_mix_through_every_pair(bench, monkeypatch, capsys) -> None:
    pytest.importorskip("zmq")
    zmtp = bench("bench_zmtp")
    monkeypatch.setattr(zmtp, "MIX_SIZE", 36)
    rows = zmtp.run(rounds=1, repeats=1, mechanism="null", mixed=True)
    names = {r.name for r in rows}
    assert {"ours codec: encode + decode", "libzmq tcp DEALER -> ROUTER", "ours asyncio tcp Dealer -> Router",
            "ours Dealer -> libzmq ROUTER", "libzmq DEALER -> ours Router"} <= names
    assert all(r.messages == 36 and r.wall > 0 for r in rows)
    assert "ratio ours/libzmq" in capsys.readouterr().out


def test_bench_zmtp_curve_pair(bench, monkeypatch) -> None:
    pytest.importorskip("zmq")
    zmtp = bench("bench_zmtp")
    monkeypatch.setattr(zmtp, "MIX_SIZE", 12)
    rows = zmtp.ours_rows(zmtp.message_mix(), 1, "curve", mixed=True)
    assert len(rows) == 3


def test_bench_suites_reads_the_scenarios_and_a_run(bench, tmp_path: Path, capsys) -> None:
    suites = bench("bench_suites")
    for protocol in suites.PROTOCOLS:
        shapes = suites.case_shapes(protocol, suites.ref_params(protocol))
        assert shapes, protocol
    stmp = suites.case_shapes("stmp", suites.ref_params("stmp"))
    assert stmp["stmp/error-disconnect/heartbeat-timeout"].timers == {"heartbeat_timeout_ms"}
    assert stmp["stmp/ack-wrap/client-id-wrap"].role == "client"
    run = suites.run_suite("rsio", "ref", tmp_path / "rsio", keyword="rsio/ack-wrap/initial-demand-exact",
                           timeout=120)
    assert run.code == 0 and len(run.records) == 1
    suites.report_runs([run], top=1, markdown=True)
    suites.report_docker([(run, run)], markdown=False)
    out = capsys.readouterr().out
    assert "rsio/ack-wrap/initial-demand-exact" in out and "ratio docker/ref" in out


def test_bench_suites_owners_split_a_profile(bench) -> None:
    suites = bench("bench_suites")
    prof = cProfile.Profile()
    prof.enable()
    suites.case_shapes("rsio", suites.ref_params("rsio"))
    prof.disable()
    split = suites.owners(pstats.Stats(prof))
    assert split.get("yaml, jsonschema (loading scenarios)", 0) > 0
    assert "C" not in split


def teardown_module() -> None:
    for name in ("bench_codec", "bench_zmtp", "bench_suites"):
        sys.modules.pop(name, None)
