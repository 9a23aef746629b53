"""The reference rsio client with one switchable bug, for proving the client-role cases can fail.

Each bug patches one rule of the reference client or its connection while that client runs; the
suite acting as server uses the codec only, so the patches never reach the side doing the grading.
"""

from __future__ import annotations

import contextlib
from unittest import mock

from reference_impl.rsio import client as rsio_client
from reference_impl.rsio import codec
from reference_impl.rsio import connection as rsio_connection
from reference_impl.rsio import session as rsio_session
from reference_impl.rsio.codec import Goodbye, OnError, OnNextLastPart, OnNextPart, Request, encode_message
from reference_impl.rsio.connection import Connection, ConnectionClosed, State

EXTENSION_TYPE_MESSAGE = bytes([64])  # type 64, the first extension type, with no contents

_receive_hello = Connection._receive_hello
_elements = Connection._elements
_fail = Connection._fail
_request = rsio_client.Client.request
_cancel = rsio_client.Client.cancel
_ends = rsio_client._ends
_next_message = codec.StreamDecoder.next_message


def _any_version_hello(self, message, events):
    with mock.patch.object(rsio_connection, "VERSION", message.version):
        _receive_hello(self, message, events)


def _hello_then_extension_message(self, message, events):
    _receive_hello(self, message, events)
    if message.extensions:  # the server offers one: used without having listed it
        self._out += EXTENSION_TYPE_MESSAGE


def _keeps_reading_after_unknown_type(self, code, events):
    if code != "unknown-type":
        _fail(self, code, events)


def _closes_without_answering(self, message, events):
    self._release_all("goodbye", events)
    self.state = State.CLOSED
    events.append(message)
    events.append(ConnectionClosed(message.reason, orderly=True))


def _request_zero_first(self, sid, n):
    self.conn._out += encode_message(Request(sid, 0))
    _request(self, sid, n)


def _cancel_then_request(self, sid):
    _cancel(self, sid)
    self.conn._out += encode_message(Request(sid, 1))
    self.session._flush()


def _on_error_not_an_end(sid, event):
    return not isinstance(event, OnError) and _ends(sid, event)


def _each_part_an_element(self, stream, message):
    if isinstance(message, (OnNextPart, OnNextLastPart)):
        return [bytes(message.data)]  # each part delivered as an element of its own
    return _elements(self, stream, message)


async def _goodbye_without_waiting(self, reason=""):
    if self.conn.state is State.OPEN:
        self.send(Goodbye(reason))
    self._lost()
    await self._close_writer()
    return True  # counted as orderly, though the peer's goodbye was never awaited


def _empty_last_part_skipped(self, stream, message):
    if isinstance(message, OnNextLastPart) and not message.data:
        return []  # an empty last part taken for "nothing here": the element is never finished
    return _elements(self, stream, message)


def _version_in_a_byte(self, message, events):
    # the version kept in one byte: 256 reads as 0
    _receive_hello(self, type(message)(message.version & 0xFF, message.extensions), events)


def _zero_type_skipped(self):
    while self._buf and self._buf[0] == 0:  # a type-0 byte taken for padding
        del self._buf[0]
    return _next_message(self)


def _string_replaced(self):
    return self.bytes_field().decode("utf-8", errors="replace")  # invalid UTF-8 taken, not refused


BUGS = {
    "hello-version-1": lambda: mock.patch.object(rsio_connection, "VERSION", 1),
    "accepts-any-version": lambda: mock.patch.object(Connection, "_receive_hello", _any_version_hello),
    "uses-unlisted-extension": lambda: mock.patch.object(Connection, "_receive_hello", _hello_then_extension_message),
    "ignores-unknown-type": lambda: mock.patch.object(Connection, "_fail", _keeps_reading_after_unknown_type),
    "goodbye-unanswered": lambda: mock.patch.object(Connection, "_receive_goodbye", _closes_without_answering),
    "requests-zero": lambda: mock.patch.object(rsio_client.Client, "request", _request_zero_first),
    "requests-after-cancel": lambda: mock.patch.object(rsio_client.Client, "cancel", _cancel_then_request),
    "on-error-ignored": lambda: mock.patch.object(rsio_client, "_ends", _on_error_not_an_end),
    "parts-not-joined": lambda: mock.patch.object(Connection, "_elements", _each_part_an_element),
    "fixed-size-read-as-prefixed": lambda: mock.patch.object(Connection, "_incoming_element_size", lambda self, sid: 0),
    "goodbye-no-wait": lambda: mock.patch.object(rsio_session.Session, "goodbye", _goodbye_without_waiting),
    "empty-last-part-skipped": lambda: mock.patch.object(Connection, "_elements", _empty_last_part_skipped),
    "version-u8": lambda: mock.patch.object(Connection, "_receive_hello", _version_in_a_byte),
    "type-0-skipped": lambda: mock.patch.object(codec.StreamDecoder, "next_message", _zero_type_skipped),
    "lenient-utf8": lambda: mock.patch.object(codec._Reader, "string", _string_replaced),
}


def buggy_client(bug: str | None):
    """launch(testcase, url) -> exit code: the reference client, with ``bug`` (None: none)."""

    async def launch(testcase: str, url: str) -> int:
        with BUGS[bug]() if bug else contextlib.nullcontext():
            return await rsio_client.run_client_testcase(url, testcase)
    return launch
