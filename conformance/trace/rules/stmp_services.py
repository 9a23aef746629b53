"""STMP's test service (docs/profiles/stmp.md, "Test service (server role)") as a capture shows it
broken, for traffic of a conformance run only (Rules.services): in other traffic a server may
implement any ACTION, and what it answers one is its own.

The service has Request ACTIONs 0x100 (echo) and 0x102 (delayed Ok); a Notify 0x101 is echoed.
"Any other non-reserved ACTION gets a Response NotFound (0x24; another error status >= 0x20 is
NON-STRICT)", which the suite's cases file under stmp-action-dispatch:

* a status below 0x20 (Ok, the 0x1x statuses, an unassigned one) answers an unknown ACTION as if
  it were served: FAILED (the MUST case unknown-action-is-error);
* an error status that says the server does not know the ACTION, or that the request is wrong
  (BadRequest, NotImplemented, ...): NON-STRICT, as the SHOULD case unknown-action-not-found
  grades it.  Not judged: the statuses a correct server may owe whatever the ACTION, for its own
  state or the request's size (Unauthorized, PaymentRequired, Forbidden, RequestTimeout,
  RequestEntityTooLarge, TooManyRequests, the 0x30 and 0x32..0x34 server errors), and the
  user-defined 0x80..0xFF, whose meaning the spec leaves to each ACTION.

A Request ACTION 0x101 (the service names 0x101 for a Notify only) is not judged either.
"""

from __future__ import annotations

from reference_impl.stmp.service import ACTION_DELAY, ACTION_ECHO, ACTION_NOTIFY_ECHO

from conformance.trace.findings import SHOULD

NOT_FOUND = 0x24
#: the non-reserved ACTIONs the service names (0x101 as a Notify; a Request 0x101 is left alone)
SERVICE_ACTIONS = frozenset({ACTION_ECHO, ACTION_NOTIFY_ECHO, ACTION_DELAY})
#: error statuses a correct server may send before it looks at the ACTION
_NOT_ABOUT_THE_ACTION = frozenset({0x21, 0x22, 0x23, 0x25, 0x26, 0x27, 0x30, 0x32, 0x33, 0x34})
_USER_DEFINED = range(0x80, 0x100)


def unknown_action(action: int) -> bool:
    """A non-reserved ACTION the test service answers NotFound."""
    return action >= 0x100 and action not in SERVICE_ACTIONS


def answer_to_unknown(action: int, request_id: int, status: int):
    """The violation (side, requirement, message[, SHOULD]) of the server's Response with ``status``
    to the client's Request ``request_id`` with the unknown ACTION ``action``, or None."""
    said = f"Response ID {request_id:#x} STATUS {status:#x} answers Request ACTION {action:#x}, which the " \
           f"test service does not have"
    if status < 0x20:
        return ("server", "stmp-action-dispatch", f"{said}, with a status that is not an error: any other "
                f"non-reserved ACTION gets NotFound ({NOT_FOUND:#x})")
    if status == NOT_FOUND or status in _NOT_ABOUT_THE_ACTION or status in _USER_DEFINED:
        return None
    return ("server", "stmp-action-dispatch", f"{said}: any other non-reserved ACTION gets NotFound "
            f"({NOT_FOUND:#x}; another error status is NON-STRICT)", SHOULD)
