"""The reference RSocket client with one switchable bug, for proving the client-role cases can fail.

Each bug patches one rule of the reference connection while that client runs; the suite acting
as server decodes with the codec only, so the patches never reach the side doing the grading.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace
from unittest import mock

from reference_impl.rsocket import client as rsocket_client
from reference_impl.rsocket import codec
from reference_impl.rsocket.codec import CONNECTION_ERROR, Error, Ext, Keepalive, MetadataPush, RequestN, Setup
from reference_impl.rsocket.connection import SETUP_ERRORS, Connection, FrameIgnored, Kind

_setup = Connection.setup
_allocate = Connection.allocate_stream_id
_receive = Connection._receive
_receive_error = Connection._receive_error
_receive_payload = Connection._receive_payload
_frame_error = Connection._frame_error
_deliver_payload = Connection._deliver_payload
_request_response = rsocket_client.RSocketClient.request_response
_start_resume = Connection.start_resume
_receive_while_resuming = Connection._receive_while_resuming


def _setup_version_2(self, *args, **kwargs):
    _setup(self, *args, **{**kwargs, "version": (2, 0)})


def _setup_mime_null_terminated(self, metadata_mime: str = "", data_mime: str = "", **kwargs):
    _setup(self, metadata_mime + "\0", data_mime + "\0", **kwargs)


def _setup_keepalive_zero(self, *args, **kwargs):
    self.keepalive_ms = 0
    _setup(self, *args, **kwargs)


def _starts_at_3(self):
    if self._next_id == 1:
        self._next_id = 3
    return _allocate(self)


def _even_ids(self):
    return _allocate(self) + 1


def _ignores_setup_rejection(self, frame, events):
    if frame.stream_id == 0 and frame.code in SETUP_ERRORS:
        events.append(FrameIgnored("setup-error-ignored", 0))
        return
    _receive_error(self, frame, events)


def _setup_error_always_closes(self, frame, events):
    if frame.stream_id == 0:
        self._established = False  # as if every setup error came during establishment
    _receive_error(self, frame, events)


def _stream_error_ignored(self, frame, events):
    if frame.stream_id != 0:
        events.append(FrameIgnored("stream-error-ignored", frame.stream_id))
        return
    _receive_error(self, frame, events)


def _receive_with(bug: str):
    def receive(self, frame, now, events):
        if isinstance(frame, Setup) and bug == "setup-frame-closes":
            self._connection_error(CONNECTION_ERROR, "unexpected SETUP", events)
        elif isinstance(frame, Ext) and bug == "ignorable-ext-closes":
            self._connection_error(CONNECTION_ERROR, "unknown extension", events)
        elif isinstance(frame, Keepalive) and frame.respond and bug == "keepalive-not-echoed":
            self._send(Keepalive(False, 0, b""))
        else:
            _receive(self, frame, now, events)
    return receive


def _first_fragment_is_whole(self, frame, events):
    _receive_payload(self, replace(frame, follows=False), events)


def _response_complete_only_with_c(self, sid, stream, metadata, data, next_, complete, events):
    kind = stream.kind
    stream.kind = Kind.STREAM  # skips "a response PAYLOAD completes the stream"
    try:
        _deliver_payload(self, sid, stream, metadata, data, next_, complete, events)
    finally:
        stream.kind = kind


async def _response_waits_for_c(self, data, metadata=None):
    sid = self.conn.request_response(data, metadata)
    self._open(sid)
    await self._flush()
    try:
        while not (event := await self._next(sid)).complete:
            pass
        return event
    finally:
        del self._queues[sid]


@contextlib.contextmanager
def _waits_for_complete():
    with mock.patch.object(Connection, "_deliver_payload", _response_complete_only_with_c), \
            mock.patch.object(rsocket_client.RSocketClient, "request_response", _response_waits_for_c):
        yield


def _request_n_zero(self, stream_id, n):
    self._send(RequestN(stream_id, 0))


def _resume_from_zero(self, now):
    self.received_position = 0  # forgets what it received before the drop
    _start_resume(self, now)


def _resumes_after_rejection(self, frame, events):
    """The refusal of its RESUME is dropped, so the close that follows makes it resume again."""
    if isinstance(frame, Error) and frame.stream_id == 0:
        events.append(FrameIgnored("before-resume-ok", frame.stream_id))
    else:
        _receive_while_resuming(self, frame, events)


def _unknown_stream_payload_closes(self, frame, events):
    if frame.stream_id not in self._streams:
        self._connection_error(CONNECTION_ERROR, "PAYLOAD on an unknown stream", events)
        return
    _receive_payload(self, frame, events)


def _error_unknown_stream_closes(self, frame, events):
    if frame.stream_id != 0 and frame.stream_id not in self._streams:
        self._connection_error(CONNECTION_ERROR, "ERROR on an unknown stream", events)
        return
    _receive_error(self, frame, events)


def _payload_stream_zero_closes(self, exc, events):
    # the codec reports a PAYLOAD on stream 0 as an ignorable frame error (stream-id-zero): never a PAYLOAD
    if exc.code == "stream-id-zero" and exc.frame_type == codec.PAYLOAD:
        self._connection_error(CONNECTION_ERROR, "PAYLOAD on stream 0", events)
        return False
    return _frame_error(self, exc, events)


def _complete_is_next(self, sid, stream, metadata, data, next_, complete, events):
    # a PAYLOAD with C alone is delivered as one more (empty) item, then completion
    _deliver_payload(self, sid, stream, metadata, data, next_ or complete, complete, events)


def _metadata_push_m_clear(self, metadata):
    encoded = bytearray(codec.encode_frame(MetadataPush(metadata)))
    encoded[4] &= ~0x01  # the M flag (0x100 of the type-and-flags word) left clear
    self._out_raw(bytes(encoded))


def _metadata_push_on_stream(self, metadata):
    self._send(MetadataPush(metadata, stream_id=1))


BUGS = {
    "setup-version-2": lambda: mock.patch.object(Connection, "setup", _setup_version_2),
    "setup-keepalive-zero": lambda: mock.patch.object(Connection, "setup", _setup_keepalive_zero),
    "mime-null-terminated": lambda: mock.patch.object(Connection, "setup", _setup_mime_null_terminated),
    "first-stream-3": lambda: mock.patch.object(Connection, "allocate_stream_id", _starts_at_3),
    "even-stream-ids": lambda: mock.patch.object(Connection, "allocate_stream_id", _even_ids),
    "ignores-setup-rejection": lambda: mock.patch.object(Connection, "_receive_error", _ignores_setup_rejection),
    "setup-error-always-closes": lambda: mock.patch.object(Connection, "_receive_error", _setup_error_always_closes),
    "stream-error-ignored": lambda: mock.patch.object(Connection, "_receive_error", _stream_error_ignored),
    "setup-frame-closes": lambda: mock.patch.object(Connection, "_receive", _receive_with("setup-frame-closes")),
    "ignorable-ext-closes": lambda: mock.patch.object(Connection, "_receive", _receive_with("ignorable-ext-closes")),
    "keepalive-not-echoed": lambda: mock.patch.object(Connection, "_receive", _receive_with("keepalive-not-echoed")),
    "fragments-not-joined": lambda: mock.patch.object(Connection, "_receive_payload", _first_fragment_is_whole),
    "requests-zero": lambda: mock.patch.object(Connection, "request_n", _request_n_zero),
    "no-request-n": lambda: mock.patch.object(Connection, "request_n", lambda self, stream_id, n: None),
    "metadata-push-on-stream": lambda: mock.patch.object(Connection, "metadata_push", _metadata_push_on_stream),
    "waits-for-complete": _waits_for_complete,
    "resume-position-zero": lambda: mock.patch.object(Connection, "start_resume", _resume_from_zero),
    # hunt: one-bug variants added by the rsocket hunt
    "unknown-stream-payload-closes": lambda: mock.patch.object(Connection, "_receive_payload",
                                                               _unknown_stream_payload_closes),
    "complete-alone-is-item": lambda: mock.patch.object(Connection, "_deliver_payload", _complete_is_next),
    "metadata-push-m-clear": lambda: mock.patch.object(Connection, "metadata_push", _metadata_push_m_clear),
    "resumes-after-rejection": lambda: mock.patch.object(Connection, "_receive_while_resuming",
                                                         _resumes_after_rejection),
    # mutation hunt: bugs no case caught before
    "error-unknown-stream-closes": lambda: mock.patch.object(Connection, "_receive_error",
                                                             _error_unknown_stream_closes),
    "payload-stream-zero-closes": lambda: mock.patch.object(Connection, "_frame_error", _payload_stream_zero_closes),
}


def buggy_client(bug: str | None):
    """launch(testcase, url) -> exit code: the reference client, with ``bug`` (None: none)."""

    async def launch(testcase: str, url: str) -> int:
        with BUGS[bug]() if bug else contextlib.nullcontext():
            return await rsocket_client.run_client_testcase(url, testcase)
    return launch
