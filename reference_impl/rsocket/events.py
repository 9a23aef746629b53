"""The words a :class:`~reference_impl.rsocket.connection.Connection` speaks in: the role and
transport it is made with, the kinds of request, and the events it reports (what ``receive_data``,
``tick`` and the rest return).  Apart from the connection so that the modules it is built from can
name them without importing it."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Union

from reference_impl.rsocket.codec import Setup

if TYPE_CHECKING:
    from reference_impl.rsocket.connection import Connection


class Role(Enum):
    CLIENT = "client"
    SERVER = "server"


class Transport(Enum):
    TCP = "tcp"
    WEBSOCKET = "websocket"


class Kind(Enum):
    RESPONSE = "request-response"
    FNF = "fire-and-forget"
    STREAM = "request-stream"
    CHANNEL = "request-channel"


@dataclass(frozen=True)
class SetupAccepted:
    setup: Setup


@dataclass(frozen=True)
class RequestReceived:
    kind: Kind
    stream_id: int
    metadata: bytes | None
    data: bytes
    initial_n: int = 0
    complete: bool = False  # REQUEST_CHANNEL with C


@dataclass(frozen=True)
class PayloadReceived:
    stream_id: int
    metadata: bytes | None
    data: bytes
    next: bool
    complete: bool


@dataclass(frozen=True)
class CreditReceived:
    stream_id: int
    n: int
    credit: int  # after saturation


@dataclass(frozen=True)
class CancelReceived:
    stream_id: int


@dataclass(frozen=True)
class StreamErrorReceived:
    stream_id: int
    code: int
    data: bytes


@dataclass(frozen=True)
class KeepaliveReceived:
    respond: bool
    data: bytes


@dataclass(frozen=True)
class MetadataPushReceived:
    metadata: bytes


@dataclass(frozen=True)
class FrameIgnored:
    reason: str
    stream_id: int | None = None


@dataclass(frozen=True)
class PeerViolation:
    """The peer broke a MUST on one stream; the stream was cancelled."""
    stream_id: int
    reason: str


@dataclass(frozen=True)
class Resumed:
    """A RESUME took over ``session``: it goes on over this transport (its RESUME_OK and the
    replayed frames are in its send buffer); this connection is done."""
    session: Connection


@dataclass(frozen=True)
class ConnectionClosed:
    reason: str
    code: int | None = None  # the ERROR code sent or received, if any
    by_peer: bool = False


Event = Union[SetupAccepted, RequestReceived, PayloadReceived, CreditReceived, CancelReceived,
              StreamErrorReceived, KeepaliveReceived, MetadataPushReceived, FrameIgnored,
              PeerViolation, Resumed, ConnectionClosed]
