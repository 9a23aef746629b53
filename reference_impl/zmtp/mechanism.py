"""What every security mechanism offers the connection (RFC 23 "Authentication and Confidentiality").

A mechanism is a sans-IO state machine created fresh for each connection by
its config.  It turns handshake command bodies into replies, and once
``complete`` it wraps and unwraps traffic frames (CURVE boxes them; NULL and
PLAIN pass them through).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar, Protocol

from reference_impl.common.errors import ProtocolViolation
from reference_impl.zmtp.codec import Frame
from reference_impl.zmtp.commands import Metadata


class HandshakeError(ProtocolViolation):
    """The handshake failed; ``error_reason`` is what to send in an ERROR command, or None to close silently."""

    def __init__(self, code: str, detail: str = "", *, error_reason: bytes | None = None) -> None:
        super().__init__(code, detail)
        self.error_reason = error_reason


class Mechanism(ABC):
    """Base class: handshake state and the pass-through traffic of clear-text mechanisms."""

    name: ClassVar[str]
    #: Octets the mechanism adds around a frame body on the wire.
    frame_overhead: ClassVar[int] = 0
    #: Traffic travels in boxes, so nothing (not even ERROR) goes out in clear after the handshake.
    encrypted: ClassVar[bool] = False

    def __init__(self, as_server: bool, metadata: Metadata) -> None:
        self.as_server = as_server
        self.metadata = metadata
        self.complete = False
        self.peer_metadata: Metadata | None = None
        #: The peer's authenticated user: PLAIN username or CURVE public key.
        self.peer_user: bytes | None = None

    def start(self) -> list[bytes]:
        """Command bodies to send once the greetings are exchanged."""
        return []

    @abstractmethod
    def receive(self, body: bytes) -> list[bytes]:
        """Handle one handshake command body; return the command bodies to send back."""

    def wrap(self, frame: Frame) -> Frame:
        return frame

    def unwrap(self, frame: Frame) -> Frame:
        return frame


class MechanismConfig(Protocol):
    """Per-socket settings of a mechanism; ``create`` makes the per-connection state machine."""

    name: str
    as_server: bool

    def create(self, metadata: Metadata) -> Mechanism: ...


def unexpected(name: str, state: str) -> HandshakeError:
    return HandshakeError("unexpected-command", f"{name} while {state}")
