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
  case client-final-message).
"""

from __future__ import annotations

from reference_impl.micromessage2.extensions import REGISTERED

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
