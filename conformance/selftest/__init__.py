"""One-bug targets and the self-test that proves the suite catches each of them.

A suite that cannot fail proves nothing. Every one-bug server here is a reference server with
one rule turned off, and every one-bug client a reference client with one; `conformance
selftest` runs the suite against each and reports which case catches which bug. A bug no case
catches makes the self-test fail.
"""

from conformance.selftest.catalog import OneBug, catalog

__all__ = ["OneBug", "catalog"]
