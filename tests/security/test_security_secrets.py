"""No credential appears in what a run leaves behind: wire logs, records.jsonl, junit.xml, allure-results.

One real run of the suite (pytest with the plugin, in a child process, against the reference
targets) plays cases that put credentials to use and then fail, so that each keeps a wire
log: MTL's SASL PLAIN login (alice/wonderland, base64 in JSON on the wire), a ZMTP PLAIN
HELLO (its password in clear on the wire, RFC 24), and two CURVE handshakes, one with a
client secret key given in the scenario and one with the project's test key.  Every output
file is searched for each credential in every form it could take: raw, base64, hex, Z85,
and in the bytes a wire log's hex dump shows (rebuilt from the dump, so a credential split
over two dump lines is found too).
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
from pathlib import Path

from reference_impl.mc0 import testkeys
from reference_impl.mtl.sasl import plain_response
from reference_impl.zmtp.curve import KeyPair
from reference_impl.zmtp.z85 import z85_encode

ROOT = Path(__file__).resolve().parent.parent.parent
ZMTP_PASSWORD = "zmtp-plain-s3cret"
SASL_PASSWORD = "wonderland"  # docs/profiles/mtl.md: the MTL SASL test user is alice/wonderland
CURVE_SECRET = bytes(range(101, 133))  # a client secret key written into the scenario below

SPEC = '"The middleware and connector SHALL support the CURVE protocol as outlined in http://rfc.zeromq.org/spec:25."'
MTL_CASES = f"""
protocol: mtl
family: secrets
cases:
  - id: mtl/secrets/sasl-plain-login
    title: PLAIN login, then a reply that never comes (the case fails and keeps its wire log)
    spec: "credentials"
    requirement: MUST
    steps:
      - macro: login
      - expect: {{kind: reply, code: 299, within_ms: 300}}
  - id: mtl/secrets/zmtp-plain-hello
    title: a ZMTP PLAIN HELLO to a NULL server (refused; the password was sent all the same)
    spec: "credentials"
    requirement: MUST
    steps:
      - send: {{zmtp: greeting, mechanism: PLAIN}}
      - send: {{zmtp: hello, username: alice, password: "{ZMTP_PASSWORD}"}}
      - expect: {{kind: command, command: WELCOME, within_ms: 1000}}
"""
MC0_CASES = f"""
protocol: mc0
family: secrets
cases:
  - id: mc0/secrets/curve-secret-in-scenario
    title: CURVE with a client secret given in the scenario, then an answer that never comes
    spec: {SPEC}
    requirement: MUST
    steps:
      - send: {{zmtp: handshake, mechanism: CURVE, server_key: test, client_key: "{CURVE_SECRET.hex()}"}}
      - expect: {{zmtp: ready}}
      - send: {{verb: NOOP, id: n1}}
      - expect: {{verb: NEVER, within_ms: 300}}
  - id: mc0/secrets/curve-test-key
    title: CURVE with the test client key, then an answer that never comes
    spec: {SPEC}
    requirement: MUST
    steps:
      - send: {{zmtp: handshake, mechanism: CURVE, server_key: test, client_key: test}}
      - expect: {{zmtp: ready}}
      - expect: {{verb: NEVER, within_ms: 300}}
"""


def _forms() -> dict[str, bytes]:
    forms = {
        "ZMTP PLAIN password": ZMTP_PASSWORD.encode(),
        "SASL password": SASL_PASSWORD.encode(),
        "SASL PLAIN response (base64)": base64.b64encode(plain_response("alice", SASL_PASSWORD)),
    }
    for name, secret in (("scenario CURVE secret", CURVE_SECRET), ("test client CURVE secret", testkeys.CLIENT.secret),
                         ("test server CURVE secret", testkeys.SERVER.secret)):
        forms[f"{name} (raw)"] = secret
        forms[f"{name} (hex)"] = secret.hex().encode()
        forms[f"{name} (HEX)"] = secret.hex().upper().encode()
        forms[f"{name} (z85)"] = z85_encode(secret).encode()
        forms[f"{name} (base64)"] = base64.b64encode(secret)
    return forms


_DUMP_LINE = re.compile(rb"^    [0-9a-f]{8}  ((?:[0-9a-f]{2} )*[0-9a-f]{2})", re.MULTILINE)


def _dumped_bytes(log: bytes) -> bytes:
    """The octets a wire log's hex dumps show, in order."""
    return b"".join(bytes.fromhex(m.group(1).decode()) for m in _DUMP_LINE.finditer(log))


def test_no_credential_in_wire_logs_records_junit_or_allure(tmp_path: Path) -> None:
    for protocol, text in (("mtl", MTL_CASES), ("mc0", MC0_CASES)):
        folder = tmp_path / "scenarios" / protocol
        folder.mkdir(parents=True)
        (folder / "secrets.yaml").write_text(text)
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", str(tmp_path / "scenarios"), "--target", "ref", "-p", "no:cacheprovider",
         "--records", str(out / "records.jsonl"), "--wirelogs", str(out / "wirelogs"),
         "--junitxml", str(out / "junit.xml"), "--alluredir", str(out / "allure-results"), "-q",
         "--rootdir", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    grades = {r["case"]: r["grade"] for r in records}
    assert grades == {"mtl/secrets/sasl-plain-login": "FAILED", "mtl/secrets/zmtp-plain-hello": "FAILED",
                      "mc0/secrets/curve-secret-in-scenario": "FAILED", "mc0/secrets/curve-test-key": "FAILED"}, \
        (grades, proc.stdout[-3000:], proc.stderr[-2000:])
    # the credentials were really used: the logins got through before the cases failed
    by_case = {r["case"]: r for r in records}
    assert "code: 0x12b" in by_case["mtl/secrets/sasl-plain-login"]["message"]  # waited for the 299 after a 201
    assert "verb: NEVER" in by_case["mc0/secrets/curve-secret-in-scenario"]["message"]

    files = [p for p in out.rglob("*") if p.is_file()]
    assert any(p.parent.name == "allure-results" and "attachment" in p.name for p in files), files
    leaks = []
    for path in files:
        data = path.read_bytes()
        shown = data + b"\n" + _dumped_bytes(data)
        for name, form in _forms().items():
            if form in shown:
                leaks.append(f"{name} in {path.relative_to(out)}")
    assert not leaks, leaks

    logs = sorted((out / "wirelogs").glob("*.log"))
    assert len(logs) == 4, logs
    plain_log = next(p for p in logs if "zmtp-plain-hello" in p.name).read_bytes()
    sasl_log = next(p for p in logs if "sasl-plain-login" in p.name).read_bytes()
    assert b"HELLO.alice" in plain_log and b"(credentials masked)" in plain_log  # the HELLO is there, its password not
    assert b"(credentials masked)" in sasl_log
