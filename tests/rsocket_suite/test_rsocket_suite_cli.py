"""`conformance run rsocket` and `conformance serve rsocket --role client`, as a user runs them."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

from reference_impl.rsocket.client import run_client_testcase
from reference_impl.rsocket.server import start_server

ROOT = Path(__file__).resolve().parents[2]
CONFORMANCE = [sys.executable, "-m", "conformance.cli"]


def test_run_against_ref_is_all_passed_or_informational(tmp_path: Path) -> None:
    result = subprocess.run(CONFORMANCE + ["run", "rsocket", "--target", "ref", "--out", str(tmp_path)],
                            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:]
    records = [json.loads(line) for line in (tmp_path / "records.jsonl").read_text().splitlines()]
    assert {r["transport"] for r in records} == {"tcp", "ws"}
    grades = {(r["case"], r["transport"]): r["grade"] for r in records}
    # the reference resumes and grants LEASEs: nothing is UNSUPPORTED
    wrong = {k: g for k, g in grades.items() if g not in ("PASSED", "INFORMATIONAL")}
    assert wrong == {}
    assert len({case for case, _ in grades}) >= 70


def test_the_reference_client_runs_its_testcases_and_refuses_others() -> None:
    async def run() -> list[int]:
        server = await start_server()
        try:
            codes = [await run_client_testcase(server.url, c) for c in ("request-response", "stream", "fnf", "metadata-push")]
            codes.append(await run_client_testcase(server.url, "lease"))
        finally:
            await server.close()
        codes.append(await run_client_testcase("tcp://127.0.0.1:1", "request-response"))
        return codes

    assert asyncio.run(run()) == [0, 0, 0, 0, 127, 1]
