"""The NULL mechanism (RFC 23 "The NULL Security Mechanism"): one READY each way.

Both peers send READY as soon as the greetings are exchanged, as libzmq does;
RFC 37 has the server answer the client's READY, and an early READY still
is an answer.  The as-server octet is zero and ignored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from reference_impl.zmtp.commands import Metadata, Ready, decode_command, encode_command, split_command
from reference_impl.zmtp.mechanism import Mechanism, unexpected


class NullMechanism(Mechanism):
    name = "NULL"

    def start(self) -> list[bytes]:
        return [encode_command(Ready(self.metadata))]

    def receive(self, body: bytes) -> list[bytes]:
        command = decode_command(body)
        if not isinstance(command, Ready):
            raise unexpected(split_command(body)[0], "expecting READY")
        self.peer_metadata = command.metadata
        self.complete = True
        return []


@dataclass(frozen=True)
class NullConfig:
    name: ClassVar[str] = "NULL"
    as_server: ClassVar[bool] = False

    def create(self, metadata: Metadata) -> NullMechanism:
        return NullMechanism(False, metadata)
