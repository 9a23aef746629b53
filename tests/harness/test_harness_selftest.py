"""`conformance selftest`: every one-bug target is in the catalogue, every client case has a bug,
and the command reports a bug no case catches as a failure."""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.registry import PROTOCOLS
from conformance.selftest import catalog as catalog_module
from conformance.selftest.catalog import MODULES, OneBug, catalog
from conformance.selftest.command import run as selftest
from tests.harness.suite_helpers import all_cases

ROOT = Path(__file__).resolve().parents[2]
#: protocol -> (server module, client module or None)
BUGGY = {
    "stmp": ("buggy_stmp", "buggy_stmp_client"),
    "micromessage2": ("buggy_mm2", "buggy_mm2_client"),
    "rsio": ("buggy_rsio", "buggy_rsio_client"),
    "mc0": ("buggy_mc0", None),
    "mtl": ("buggy_mtl", None),
    "rsocket": ("buggy_rsocket", "buggy_rsocket_client"),
}


@pytest.mark.parametrize("protocol", sorted(MODULES))
def test_every_one_bug_target_is_catalogued_with_real_cases(protocol: str) -> None:
    entries = catalog(protocol)
    cases = all_cases(protocol)
    server_module, client_module = BUGGY[protocol]
    server_bugs = importlib.import_module(f"conformance.selftest.{server_module}").BUGS
    assert {e.bug for e in entries if e.role == "server"} == set(server_bugs)
    if client_module:
        client_bugs = importlib.import_module(f"conformance.selftest.{client_module}").BUGS
        assert {e.bug for e in entries if e.role == "client"} == set(client_bugs)
    for entry in entries:
        assert entry.cases, entry
        for case_id in entry.cases:
            assert case_id in cases, f"{entry.bug}: no case {case_id}"
            assert cases[case_id].role == entry.role, f"{entry.bug}: {case_id} is not a {entry.role}-role case"


@pytest.mark.parametrize("protocol", sorted(MODULES))
def test_every_graded_client_case_has_a_one_bug_client(protocol: str) -> None:
    graded = {c.id for c in all_cases(protocol).values()
              if c.role == "client" and c.requirement in ("MUST", "SHOULD")}
    covered = {case for e in catalog(protocol) if e.role == "client" for case in e.cases}
    assert graded <= covered, sorted(graded - covered)


def test_the_command_reports_what_catches_a_bug() -> None:
    result = subprocess.run([sys.executable, "-m", "conformance.cli", "selftest", "stmp", "--bug", "no-close-after-0x35"],
                            cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "caught" in result.stdout and "stmp/handshake/version-unsupported (FAILED)" in result.stdout


def test_a_bug_no_case_catches_fails_the_selftest(monkeypatch, capsys) -> None:
    from conformance.protocols import adapter_for

    async def correct_server(bug):  # "buggy" in name only: the reference server
        adapter = adapter_for("stmp")
        return await adapter.start_reference("tcp", {**adapter.params, **adapter.ref_params})

    fake = OneBug("stmp", "server", "not-really-a-bug", ("stmp/handshake/version-unsupported",), start=correct_server)
    monkeypatch.setattr("conformance.selftest.command.catalog", lambda protocol: [fake])
    code = selftest(argparse.Namespace(protocols=["stmp"], bug=[], exhaustive=False))
    out = capsys.readouterr().out
    assert code == 1
    assert "MISSED" in out and "not-really-a-bug" in out


def test_an_unknown_protocol_is_a_usage_error() -> None:
    assert selftest(argparse.Namespace(protocols=["nope"], bug=[], exhaustive=False)) == 2


def test_the_readme_table_counts_every_catalogued_bug() -> None:
    import re
    names = {p.label: p.name for p in PROTOCOLS if p.selftest}
    assert {"STMP", "Micromessage2", "rsio", "mc0", "11/MTL", "RSocket"} <= set(names)
    readme = (ROOT / "README.md").read_text()
    for label, protocol in names.items():
        row = re.search(rf"^\| {re.escape(label)} \| (\d+) of (\d+) \| (?:(\d+) of (\d+)|\(no client-role cases\)) \|$",
                        readme, flags=re.M)
        assert row, f"no detection-power row for {label}"
        entries = catalog(protocol)
        servers = sum(e.role == "server" for e in entries)
        clients = sum(e.role == "client" for e in entries)
        assert int(row[2]) == servers and int(row[1]) == servers
        assert (int(row[4]) if row[4] else 0) == clients and (int(row[3]) if row[3] else 0) == clients
