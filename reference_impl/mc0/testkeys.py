"""The fixed CURVE test key pairs of mc0 targets (docs/profiles/mc0.md, "Test service (server role)").

A broker under test is configured with :data:`SERVER` (its secret key is in
``testkeys.json``, Z85, or pass it as a file with ``--curve-secret``); the
suite connects as :data:`CLIENT`.  :data:`WRONG_SERVER` is a valid key that
no broker uses, for the wrong-server-key case.  ``server`` and ``client``
are the example keys of the zmq_curve(7) man page.

:func:`load_secret_file` reads a broker secret from a file holding the
40-character Z85 secret, 64 hex digits, or a czmq/zcert secret certificate
(``secret-key = "..."``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from reference_impl.common.errors import CodecError
from reference_impl.zmtp.curve import KeyPair
from reference_impl.zmtp.z85 import z85_decode, z85_encode

KEYS_FILE = Path(__file__).with_name("testkeys.json")


def _load() -> dict[str, KeyPair]:
    doc = json.loads(KEYS_FILE.read_text(encoding="utf-8"))
    pairs = {}
    for name, pair in doc.items():
        if isinstance(pair, dict):
            keys = KeyPair.from_secret(z85_decode(pair["secret"]))
            if z85_encode(keys.public) != pair["public"]:
                raise ValueError(f"{KEYS_FILE}: {name}: the public key does not belong to the secret key")
            pairs[name] = keys
    return pairs


_PAIRS = _load()
SERVER: KeyPair = _PAIRS["server"]
CLIENT: KeyPair = _PAIRS["client"]
WRONG_SERVER: KeyPair = _PAIRS["wrong_server"]

_ZCERT_SECRET = re.compile(r'^\s*secret-key\s*=\s*"(.{40})"\s*$', re.MULTILINE)


def parse_secret(text: str) -> KeyPair:
    """A key pair from its secret key: Z85 (40 characters), hex (64 digits) or a zcert secret file."""
    match = _ZCERT_SECRET.search(text)
    value = match.group(1) if match else text.strip()
    if len(value) == 64 and re.fullmatch(r"[0-9a-fA-F]{64}", value):
        return KeyPair.from_secret(bytes.fromhex(value))
    if len(value) == 40:
        return KeyPair.from_secret(z85_decode(value))
    raise CodecError("bad-key", "a CURVE secret key is 40 Z85 characters, 64 hex digits or a zcert secret file")


def load_secret_file(path: str | Path) -> KeyPair:
    return parse_secret(Path(path).read_text(encoding="utf-8"))
