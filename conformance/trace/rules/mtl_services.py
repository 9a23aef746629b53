"""MTL's test service (docs/profiles/mtl.md, "Test service (server role)") as a capture shows it
broken, for traffic of a conformance run only (Rules.services): in other traffic a server may
serve any virtual host or none, and a 400 to a Connection.Open may be owed to its body.

The service serves virtual host `test-env`: a Connection.Open of it with the spec's protocol
({"name": "MTL", "version": 1}) gets 201, or 401 where the server asks for authentication, and
the suite's cases all open it.  Command names are case-insensitive (mtl-command-names, the
requirement of the case command-names-case-insensitive, which opens with CONNECTION.OPEN): so
400 (Bad Request) or 501 (Not Implemented) to that very request spelled in another letter case
refuses the spelling.  Judged only where nothing else can explain the refusal:

* the request is the connection's first control request (no state: not a second Open), and the
  rules saw the connection from its start (a capture that begins mid-connection leaves the
  client's side blind from its first byte);
* its name is ASCII and differs from "Connection.Open" in letter case only (a name that matches
  only under Unicode case folding is not judged);
* its body is exactly the suite's: the same JSON object once parsed, each value of the same JSON
  type (1, not 1.0), no key twice (a duplicate may be read either way), no other key;
* the reply is the first one on the connection (REQ replies come in order) and both sides'
  frames were all seen up to it.

Later commands spelled in another case (connection.authorize, cOnNeCtIoN.pRoFiLe, ...) are not
judged: whether their canonical spelling would be served rests on the session's state
(authentication, its expiry, the profile chosen), not on the service alone.
"""

from __future__ import annotations

import json

from conformance.protocols.mtl import OPEN_BODY  # the body every case's Connection.Open sends

CANONICAL_OPEN = "Connection.Open"
#: the answers that refuse a command as such (unknown or not implemented)
REFUSED = (400, 501)


def _no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise ValueError("a key twice")
    return dict(pairs)


def _typed(value) -> str:
    """JSON text that tells 1 from 1.0 and true (and keys in order)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def pinned_open(command: str, body: bytes) -> bool:
    """The service's Connection.Open of test-env, spelled in another ASCII letter case."""
    if not command.isascii() or command == CANONICAL_OPEN or command.lower() != CANONICAL_OPEN.lower():
        return False
    try:
        parsed = json.loads(bytes(body).decode("utf-8"), object_pairs_hook=_no_duplicates)
    except (ValueError, RecursionError):
        return False
    return _typed(parsed) == _typed(OPEN_BODY)


def open_refused(command: str, code):
    """The violation of a reply ``code`` to the connection's first request, the pinned
    Connection.Open spelled ``command`` (pinned_open), or None."""
    if code not in REFUSED:
        return None
    return ("server", "mtl-command-names",
            f"{command}, the connection's first request, a Connection.Open of the test service's virtual host "
            f"test-env (MTL version 1) in another letter case, was refused {code}: the service serves that Open "
            f"(201 or 401), and command names are case-insensitive", "client")


def zmtp30_refused(greeted: float | None, ts: float, how: str):
    """The server's close of a connection whose client greeted as ZMTP 3.0 (``greeted``: when) and sent
    nothing invalid, before the server sent anything but its greeting.  RFC 23: "a ZMTP peer MUST
    accept protocol versions greater or equal to 3.0", and the test service closes a connection only
    for what the profile names; filed under the requirement mtl/handshake/zmtp-3-0-client tests."""
    if greeted is None:
        return []
    return [("server", "mtl-router", f"the server closed ({how}) {ts - greeted:.3f} s after the client's ZMTP 3.0 "
             "greeting, before its READY: a ZMTP peer must accept protocol versions 3.0 and above, and the test "
             "service serves a 3.0 client")]
