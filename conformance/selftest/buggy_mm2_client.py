"""The reference Micromessage2 client with one switchable bug, for proving the client-role cases
can fail; and one correct client that acks differently from the reference.

Each bug patches one rule of the reference connection while that client runs; the suite acting
as server uses the codec only, so the patches never reach the side doing the grading.
"""

from __future__ import annotations

import contextlib
import dataclasses
from unittest import mock

from reference_impl.micromessage2 import client as mm2_client
from reference_impl.micromessage2 import connection as mm2_connection
from reference_impl.micromessage2.codec import ERROR_FIRST_BYTES, ErrorFrame, ExtensionFrame, encode_frame, error_frame
from reference_impl.micromessage2.connection import Connection
from reference_impl.micromessage2.events import ErrorSent

_on_handshake = Connection._on_handshake
_on_error = Connection._on_error
_fail = Connection._fail
_client_final_lists = mm2_connection.client_final_lists
_next_item = Connection._next_item
_dispatch = Connection._dispatch
_parse_extension_list = mm2_connection.parse_extension_list


def _adopts_the_server_minor(self, hs, events):
    if self.role is mm2_connection.Role.CLIENT and self.negotiated is None:
        self.version = (hs.major, hs.minor)  # "upgrades" to the server's 1.9 instead of keeping the lower
    _on_handshake(self, hs, events)


def _silent_on_other_major(self, code, detail, events):
    if code != "version-mismatch":
        return _fail(self, code, detail, events)
    self.state = mm2_connection.State.CLOSING  # gives up without the ERROR frame
    events.append(ErrorSent(code, detail))


def _answers_error_with_error(self, frame, events):
    """Correct too: saying why it closes (docs/profiles/micromessage2.md: whoever closes may send ERROR first)."""
    self._out += encode_frame(error_frame("peer-error: " + frame.reason))
    _on_error(self, frame, events)


def _ignores_error(self, frame, events):
    pass  # reads the server's ERROR as nothing and keeps waiting for the handshake


def _activates_every_suggestion(own_required, own_optional, server_required, server_optional, supported):
    required, optional = _client_final_lists(own_required, own_optional, server_required, server_optional, supported)
    listed = {e.name for e in optional}
    return required, [*optional, *(e for e in server_optional if e.name not in listed)]


def _drops_server_required(own_required, own_optional, server_required, server_optional, supported):
    _, optional = _client_final_lists(own_required, own_optional, server_required, server_optional, supported)
    return list(own_required), optional


def _acks_on_the_next_id(self, seq=None):
    seq = self._recv_window.unacked[-1] if seq is None else seq
    count = self._recv_window.ack(seq)
    wrong = self._active_id("batch-ack") + 1  # an ID no extension was given
    self._out += encode_frame(ExtensionFrame(wrong, seq.to_bytes(2, "big")))
    return count


def _refuses_only_higher_majors(self, events):
    """Reads a server hello whose major is below its own (only a higher major counts as 'cannot speak')."""
    first = self._decoder.peek() if self.state is mm2_connection.State.HANDSHAKE else None
    if first is not None and first < self.version[0] and first not in ERROR_FIRST_BYTES:
        item = self._decoder.next_handshake()
        if item is None:
            return False
        self._on_handshake(item, events)
        return True
    return _next_item(self, events)


def _lowest_unless_higher_major(ours, theirs):
    return min(ours, theirs) if theirs[0] <= ours[0] else None


@contextlib.contextmanager
def _accepts_lower_major():
    with mock.patch.object(Connection, "_next_item", _refuses_only_higher_majors), \
            mock.patch.object(mm2_connection, "common_version", _lowest_unless_higher_major):
        yield


def _colon_tolerant_list(text):
    """Takes the spec's own example form `name:key:value` as `name:key=value`."""
    items = []
    for item in text.split(";"):
        name, colon, props = item.partition(":")
        pairs = [p if "=" in p else p.replace(":", "=", 1) for p in props.split(",")] if colon else []
        items.append(name + colon + ",".join(pairs))
    return _parse_extension_list(";".join(items))


def _server_suggestions_first(own_required, own_optional, server_required, server_optional, supported):
    """Lists the server's suggestions before the client's own offers: every extension ID after shifts."""
    required, optional = _client_final_lists(own_required, own_optional, server_required, server_optional, supported)
    offered = {e.name for e in own_optional}
    return required, [e for e in optional if e.name not in offered] + [e for e in optional if e.name in offered]


def _keeps_unechoed_optional(own_required, own_optional, server_required, server_optional, supported):
    """Activates every optional extension it offered and supports, even those the server left out."""
    required, optional = _client_final_lists(own_required, own_optional, server_required, server_optional, supported)
    names = {e.name for e in (*required, *optional)}
    return required, [*optional, *(e for e in own_optional if e.name not in names and e.name in supported)]


def _lenient_optional_list(self, hs, events):
    """Reads the server hello's optional list leniently: items that break the grammar are dropped."""
    keep = []
    for part in hs.optional.split(";"):
        with contextlib.suppress(Exception):
            if part:
                _parse_extension_list(part)
                keep.append(part)
    _on_handshake(self, dataclasses.replace(hs, optional=";".join(keep)), events)


def _ignores_error_once_open(self, frame, events):
    if isinstance(frame, ErrorFrame):
        return  # ERROR is handled by the handshake code only
    _dispatch(self, frame, events)


BUGS = {
    "final-takes-server-minor": lambda: mock.patch.object(Connection, "_on_handshake", _adopts_the_server_minor),
    "no-error-on-other-major": lambda: mock.patch.object(Connection, "_fail", _silent_on_other_major),
    "ignores-server-required": lambda: mock.patch.object(Connection, "_require_supported", lambda *a: None),
    "ignores-error": lambda: mock.patch.object(Connection, "_on_error", _ignores_error),
    "activates-unsupported-suggestion": lambda: mock.patch.object(
        mm2_connection, "client_final_lists", _activates_every_suggestion),
    "drops-server-required": lambda: mock.patch.object(mm2_connection, "client_final_lists", _drops_server_required),
    "acks-on-an-unused-extension-id": lambda: mock.patch.object(Connection, "send_ack", _acks_on_the_next_id),
    "accepts-lower-major": _accepts_lower_major,
    "colon-for-equals-accepted": lambda: mock.patch.object(mm2_connection, "parse_extension_list", _colon_tolerant_list),
    "ignores-error-once-open": lambda: mock.patch.object(Connection, "_dispatch", _ignores_error_once_open),
    "final-server-suggestions-first": lambda: mock.patch.object(
        mm2_connection, "client_final_lists", _server_suggestions_first),
    "final-keeps-unechoed-optional": lambda: mock.patch.object(
        mm2_connection, "client_final_lists", _keeps_unechoed_optional),
    "optional-list-lenient": lambda: mock.patch.object(Connection, "_on_handshake", _lenient_optional_list),
}


#: correct clients that take another allowed path
VARIANTS = {
    "answers-error-with-error": lambda: mock.patch.object(Connection, "_on_error", _answers_error_with_error),
}


def buggy_client(bug: str | None):
    """launch(testcase, url) -> exit code: the reference client, with ``bug`` (None: none)."""

    async def launch(testcase: str, url: str) -> int:
        with {**BUGS, **VARIANTS}[bug]() if bug else contextlib.nullcontext():
            return await mm2_client.run_client_testcase(url, testcase)
    return launch


async def _ack_every_third(url: str) -> bool:
    """Correct too: a batch-ack receiver may leave acks until max-count messages are pending."""
    client = await mm2_client.connect(url, required=["batch-ack:max-count=3"])
    try:
        await client.send("test/push", properties="count:10;size:16;")
        seqs = []
        for _ in range(10):
            seqs.append((await client.receive()).seq)
            if len(client.conn.received_unacked) == 3:
                await client.ack()
        return seqs == list(range(1, 11))
    finally:
        await client.close()


async def ack_every_third_client(testcase: str, url: str) -> int:
    with mock.patch.dict(mm2_client._CASES, {"ack-window": _ack_every_third}):
        return await mm2_client.run_client_testcase(url, testcase)
