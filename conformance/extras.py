"""Optional features and the pip extras that bring their third-party modules.

A plain `pip install protocol-conformance` runs the suite; building images, the matrix and
the compliance report need more. A command that lacks its extra says so in one line
instead of a ModuleNotFoundError traceback.
"""

from __future__ import annotations

DISTRIBUTION = "protocol-conformance"

#: extra -> the top-level modules its distributions provide (kept in step with pyproject.toml
#: by tests/harness/test_harness_dependencies.py)
MODULES_OF_EXTRA = {
    "images": frozenset({"docker", "requests", "packaging", "testcontainers"}),
    "matrix": frozenset({"docker", "requests", "packaging", "testcontainers"}),
    "report": frozenset({"pyspark", "py4j"}),
    "trace": frozenset({"dpkt"}),
}


class MissingExtra(RuntimeError):
    """A feature's extra is not installed; str() is the one line to show."""


def missing_extra(exc: ModuleNotFoundError, extra: str, what: str) -> MissingExtra | None:
    """The one-line error for `exc` when the missing module belongs to `extra`, else None."""
    module = (exc.name or "").split(".")[0]
    if module not in MODULES_OF_EXTRA[extra]:
        return None
    return MissingExtra(f"{what} needs the '{extra}' extra (Python module {module!r} is missing): "
                        f"pip install '{DISTRIBUTION}[{extra}]'")
