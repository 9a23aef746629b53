"""Micromessage2's test service and test clients (docs/profiles/micromessage2.md, "Test service
(server role)" and "Test cases (client role)") as a capture shows them broken, for traffic of a
conformance run only (Rules.services): in other traffic what a side implements is its own, and not
on the wire.

The profile pins what the suite's active cases already rely on:

* the test service implements no extension named `x-conformance-...`, and no name without the
  `x-` prefix but the spec's and the profile's own (json, dotnet, ack, batch-ack, pubsub): a client
  hello or final message requiring one is owed ERROR and the close (mm2-server-lacks-required, as
  the cases required-missing-vendor, required-missing-unknown and required-missing-in-final test);
* the test clients implement no extension named `x-conformance-...` or `x-suite-...` but those
  their own hello lists (the `required-missing` case requires x-conformance-missing): a server
  hello requiring another is owed ERROR, not the final message (mm2-client-error-on-required, the
  case client-lacks-server-required); a suggestion of one is not activated (mm2-client-final, the
  case client-final-message);
* the test service sends what it owes without delay (the suite waits `expect_ms` for each item):
  test/push's N messages go out as fast as the ack window allows.  A server silent that long with
  messages owed and its window open (counted cumulatively across the wrap, as the acks are) is
  judged only where an ack across the wrap, sent with the window full, gave it that room
  (mm2-ack-across-wrap, as the case cumulative-across-wrap tests): a server that counts such an
  ack short stops there.  The silence is proven by a later frame or close of the client's, a wait
  or more after the connection's last frame; a capture that just ends proves nothing.
"""

from __future__ import annotations

from reference_impl.micromessage2.extensions import REGISTERED, parse_properties
from reference_impl.common.errors import CodecError

#: the names the spec and the profile give (json, dotnet, ack, batch-ack, pubsub)
SPEC_NAMES = REGISTERED
SERVICE_LACKS_PREFIX = "x-conformance-"
CLIENT_LACKS_PREFIXES = ("x-conformance-", "x-suite-")


def service_lacks(name: str) -> bool:
    """An extension the test service does not implement."""
    return name.startswith(SERVICE_LACKS_PREFIX) or not name.startswith("x-") and name not in SPEC_NAMES


def client_lacks(name: str, own: set[str]) -> bool:
    """An extension a test client whose hello listed ``own`` does not implement."""
    return name.startswith(CLIENT_LACKS_PREFIXES) and name not in own


PUSH = "test/push"
#: the destinations the test service serves: a valid SEND to one is taken, never refused
SERVED = frozenset({"test/echo", PUSH, "test/topic"})


class PushStall:
    """test/push's messages on one connection: how many the test service still owes, when either side
    last sent a frame, and whether the server's window room came from an ack across the wrap."""

    def __init__(self, wait: float) -> None:
        self.wait = wait  # s: the suite's wait for an item (expect_ms)
        self.owed = 0
        self.known = True  # every SEND to test/push named a count the profile's promise covers
        self.wrap_room = False  # the last ack that freed room acked across the wrap, the window full before it
        self.quiet_since = 0.0

    def frame(self, side: str, f: dict, ts: float) -> None:
        self.quiet_since = max(self.quiet_since, ts)
        if f.get("frame") != "message" or f.get("destination") != PUSH:
            return
        if side == "server":
            self.owed = max(0, self.owed - 1)
            return
        try:
            props = parse_properties(f.get("properties") or "")
        except CodecError:
            props = {}
        count, size = props.get("count", ""), props.get("size", "")
        if count.isascii() and count.isdigit() and size.isascii() and size.isdigit():
            self.owed += int(count)
        else:
            self.known = False  # a push the promise does not spell out: what is owed is unknown

    def acked(self, seqs: tuple[int, ...], was_full: bool) -> None:
        """The client acked ``seqs`` (in the order sent) of the server's messages."""
        if seqs:
            self.wrap_room = was_full and any(b < a for a, b in zip(seqs, seqs[1:]))

    def stalled(self, ts: float, room: int) -> float | None:
        """How long the server has been silent with messages owed and room for them, when that is a
        wait or more; else None."""
        if not (self.known and self.owed and self.wrap_room and room > 0) or ts - self.quiet_since < self.wait:
            return None
        return ts - self.quiet_since

