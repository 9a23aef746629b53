"""Errors shared by every protocol core.

Codecs raise :class:`CodecError` with a stable ``code`` (a short kebab-case
reason).  Vector files name the same code in their ``error`` field, so a
vector checks *why* an input is invalid, not only that it is.
"""

from __future__ import annotations


class CodecError(ValueError):
    """Bytes that do not form a valid frame/message, or fields that cannot be encoded."""

    def __init__(self, code: str, detail: str = "") -> None:
        self.code = code
        self.detail = detail
        super().__init__(f"{code}: {detail}" if detail else code)


class IncompleteFrame(Exception):
    """More bytes are needed.  Never escapes a streaming decoder's ``feed``."""


class ProtocolViolation(Exception):
    """A well-formed frame that the connection state machine must refuse.

    ``code`` is a stable reason like :class:`CodecError`'s; ``fatal`` tells
    whether the connection must be closed.
    """

    def __init__(self, code: str, detail: str = "", *, fatal: bool = True) -> None:
        self.code = code
        self.detail = detail
        self.fatal = fatal
        super().__init__(f"{code}: {detail}" if detail else code)
