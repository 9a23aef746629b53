"""The mc0 suite as users run it: separate processes, the reference and a third-party broker side by side."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from reference_impl.mc0 import testkeys
from reference_impl.mc0.client import Mc0Client
from reference_impl.zmtp.curve import KeyPair
from reference_impl.zmtp.sockets import HandshakeFailed
from reference_impl.zmtp.z85 import z85_encode
from suite_helpers import all_cases

ROOT = Path(__file__).resolve().parents[2]
CONFORMANCE = [sys.executable, "-m", "conformance.cli"]
REFERENCE = f"cmd:{sys.executable} -m conformance.cli serve mc0 --port {{port}}"
THIRD_PARTY = f"cmd:{sys.executable} {ROOT / 'thirdparty' / 'pyzmq_mc0_broker.py'} --port {{port}}"
GRADES = {"PASSED", "FAILED", "NON-STRICT", "INFORMATIONAL", "UNSUPPORTED", "NOT-APPLICABLE", "ERROR"}


def records(out: Path) -> dict[str, dict]:
    return {r["case"]: r for r in map(json.loads, (out / "records.jsonl").read_text().splitlines())}


def test_reference_and_third_party_side_by_side(tmp_path: Path) -> None:
    pytest.importorskip("zmq")
    runs = {"reference": REFERENCE, "pyzmq-mc0-broker": THIRD_PARTY}
    procs = {name: subprocess.Popen(CONFORMANCE + ["run", "mc0", "--target", target, "--out", str(tmp_path / name),
                                                   "--impl-name", name],
                                    cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for name, target in runs.items()}
    outputs = {}
    for name, proc in procs.items():
        try:
            outputs[name] = proc.communicate(timeout=180)[0]
        except subprocess.TimeoutExpired:
            proc.kill()
            outputs[name] = proc.communicate()[0]
    cases = all_cases("mc0")
    ref, third = records(tmp_path / "reference"), records(tmp_path / "pyzmq-mc0-broker")
    # the reference passes every case in its own process
    assert procs["reference"].returncode == 0, outputs["reference"][-3000:]
    assert set(ref) == set(cases)
    wrong = {c: (r["grade"], r["message"]) for c, r in ref.items()
             if r["grade"] != ("INFORMATIONAL" if cases[c].requirement in ("INFO", "MAY") else "PASSED")}
    assert not wrong, wrong
    # the third party ran every case and got a grade for each (it need not pass them all)
    assert set(third) == set(cases), outputs["pyzmq-mc0-broker"][-3000:]
    assert all(r["grade"] in GRADES and r["implementation"] == "pyzmq-mc0-broker" for r in third.values())
    assert not [c for c, r in third.items() if r["grade"] == "ERROR"], outputs["pyzmq-mc0-broker"][-3000:]
    side_by_side = {c: {"requirement": cases[c].requirement, "reference": ref[c]["grade"],
                        "pyzmq-mc0-broker": third[c]["grade"], "message": third[c]["message"]}
                    for c in sorted(cases)}
    (tmp_path / "side-by-side.json").write_text(json.dumps(side_by_side, indent=2))
    differences = {c: row for c, row in side_by_side.items() if row["reference"] != row["pyzmq-mc0-broker"]}
    print(json.dumps(differences, indent=2))


def _serve(*extra: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(CONFORMANCE + ["serve", "mc0", "--port", "0", *extra], cwd=ROOT,
                            stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline().strip()
    assert line.startswith("listening on tcp://127.0.0.1:"), line
    return proc, line.split()[-1]


def _stop(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


def test_serve_with_a_curve_secret_file_and_null(tmp_path: Path) -> None:
    keys = KeyPair.generate()
    secret = tmp_path / "broker.key_secret"
    secret.write_text(f'curve\n    public-key = "{z85_encode(keys.public)}"\n    secret-key = "{z85_encode(keys.secret)}"\n')
    proc, url = _serve("--curve-secret", str(secret), "--null")

    async def main() -> None:
        async with asyncio.timeout(20):
            boxed = await Mc0Client.connect(url, server_key=keys.public)
            assert (await boxed.hello()).verb == b"OK"
            plain = await Mc0Client.connect(url, mechanism="NULL")
            assert (await plain.hello(version=b"0.2")).verb == b"OK"
            with pytest.raises(HandshakeFailed):
                await Mc0Client.connect(url, server_key=testkeys.SERVER.public, timeout=2)
            await boxed.close()
            await plain.close()
    try:
        asyncio.run(main())
    finally:
        _stop(proc)


def test_client_role_is_unsupported() -> None:
    result = subprocess.run(CONFORMANCE + ["serve", "mc0", "--role", "client", "--connect", "tcp://127.0.0.1:1",
                                           "--testcase", "anything"], cwd=ROOT, capture_output=True, timeout=60)
    assert result.returncode == 127
