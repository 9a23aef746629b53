"""What a Micromessage2 connection reports, and the error for misusing it locally."""

from __future__ import annotations

from dataclasses import dataclass

from .negotiation import Negotiated


class LocalProtocolError(Exception):
    """Our own side asked for something the protocol forbids right now (e.g. a MESSAGE past the window)."""

    def __init__(self, code: str, detail: str = "") -> None:
        self.code = code
        self.detail = detail
        super().__init__(f"{code}: {detail}" if detail else code)


@dataclass(frozen=True)
class HandshakeComplete:
    negotiated: Negotiated


@dataclass(frozen=True)
class MessageReceived:
    """A whole MESSAGE/SEND (fragments joined); ``type_name`` is the last dotnet type, if any."""

    seq: int
    destination: str
    properties: str
    payload: bytes
    type_name: str | None = None


@dataclass(frozen=True)
class AckReceived:
    seq: int
    acked: int  # messages newly acknowledged; 0 for a repeated or older ack


@dataclass(frozen=True)
class Subscribed:
    destination: str


@dataclass(frozen=True)
class Unsubscribed:
    destination: str


@dataclass(frozen=True)
class ExtensionFrameReceived:
    """An EXTENSION frame of an active extension the connection does not interpret itself."""

    name: str
    ext_id: int
    payload: bytes


@dataclass(frozen=True)
class ErrorReceived:
    reason: str


@dataclass(frozen=True)
class ErrorSent:
    """We sent ERROR: the transport half-closes, drains its input briefly, then closes."""

    code: str
    reason: str


@dataclass(frozen=True)
class ConnectionClosed:
    mid_frame: bool  # the stream ended inside a frame


Event = (
    HandshakeComplete | MessageReceived | AckReceived | Subscribed | Unsubscribed
    | ExtensionFrameReceived | ErrorReceived | ErrorSent | ConnectionClosed
)
