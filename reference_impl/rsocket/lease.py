"""LEASE, server side, sans-IO ("Lease Semantics" of Protocol.md, docs/profiles/rsocket.md).

A SETUP with L gets a LEASE of ``lease_requests`` requests for ``lease_ttl_ms`` at once, renewed by
the connection's ``tick`` once used up or expired and granted again after a resume; a request
beyond the lease gets ERROR[REJECTED].  A client honouring a LEASE is not implemented: the client
never sets L.
"""

from __future__ import annotations

from reference_impl.rsocket.codec import Lease


class ServerLease:
    """What the last LEASE granted; a mixin of ``Connection``.

    A mixin, like :class:`~reference_impl.rsocket.resume.Resumption` and for the same reason:
    granting a lease is sending a frame on the connection at the connection's clock, from its
    SETUP, its ``tick`` and a resume, and the state is the connection's own, where the selftest's
    buggy server (conformance/selftest/buggy_rsocket.py) withholds or keeps a lease.

    What it uses of the connection: ``_send`` and ``_now``.
    """

    def _init_lease(self, ttl_ms: int, requests: int) -> None:
        self.lease_ttl_ms, self.lease_requests = ttl_ms, requests
        self._lease_left: int | None = None  # None: the SETUP did not ask for a lease
        self._lease_until = 0.0

    def _grant_lease(self) -> None:
        self._send(Lease(self.lease_ttl_ms, self.lease_requests))
        self._lease_left = self.lease_requests
        self._lease_until = self._now + self.lease_ttl_ms / 1000

    def _within_lease(self) -> bool:
        """A request the last LEASE covers (and counts it)."""
        if self._lease_left is None:
            return True
        if self._lease_left <= 0 or self._now >= self._lease_until:
            return False
        self._lease_left -= 1
        return True

    def _renew_lease(self, now: float) -> None:
        """The timer: a new LEASE once the last one is used up or expired."""
        if self._lease_left is not None and (self._lease_left <= 0 or now >= self._lease_until):
            self._grant_lease()

    def _restart_lease(self) -> None:
        """"LEASE semantics MUST be restarted upon a new connection" (after a resume)."""
        if self._lease_left is not None:
            self._grant_lease()
