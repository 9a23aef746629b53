"""The mc0 wire monitor: ZMTP checked by :mod:`reference_impl.zmtp.monitor`, each clear-text
message read with the mc0 codec (docs/profiles/mc0.md "Message structure").

A connector sends CONNECT, DISCONNECT, SUB, UNSUB, PUT, NOOP; a broker MESSAGE, ERROR, OK,
NOOP, each as '' VERB k v ... ['' positional ...].  A broker's OK or ERROR that carries an ID
answers a request with that ID.  Under CURVE (the profile's default) the messages are boxes: only
the ZMTP layer is checked, and ``notes`` says so.
"""

from __future__ import annotations

from reference_impl.common.errors import CodecError
from reference_impl.mc0 import codec
from reference_impl.common.wire_monitor import Side, Violation
from reference_impl.zmtp.monitor import ZmtpMonitor

__all__ = ["Mc0Monitor", "Side", "Violation"]

_VERBS = {Side.CLIENT: codec.CLIENT_VERBS, Side.SERVER: codec.BROKER_VERBS}


class Mc0Monitor(ZmtpMonitor):
    def __init__(self) -> None:
        super().__init__(self._check)
        self._asked: set[bytes] = set()  # IDs of the connector's requests not answered yet

    def _check(self, side: Side, parts: list[bytes]):
        try:
            message = codec.decode_message(parts)
        except CodecError as exc:
            return [(f"mc0-{exc.code}", str(exc))]
        if message.verb not in _VERBS[side]:
            return [("mc0-verb-of-the-other-side", f"{message.verb[:20]!r} from the {side.value}")]
        request_id = message.id
        if side is Side.CLIENT and request_id is not None:
            self._asked.add(request_id)
        elif side is Side.SERVER and message.verb in (codec.OK, codec.ERROR) and request_id is not None:
            if request_id not in self._asked:
                return [("mc0-answer-to-no-request", f"{message.verb.decode()} ID {request_id[:20]!r}")]
            self._asked.discard(request_id)
        return []
