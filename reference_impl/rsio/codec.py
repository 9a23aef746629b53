"""rsio/0 messages: dataclasses, encoder, decoders.

Wire format (docs/profiles/rsio.md): a message is a type varint followed by
its fields.  Id and Long are unsigned LEB128 varints of at most 10 bytes and at
most 2^63-1 (``common/varint.py``); String is a varint byte length + UTF-8;
bytes is a varint length + bytes; Array[Id] is a varint count + Ids.

Messages are self-delimiting only through their known layout, which has two
consequences:

* ``onNext`` and ``onNextPacked`` cannot be delimited without the stream's
  ``subscribed.elementSize`` (in fixed-size mode an element is exactly that
  many raw bytes, with no length prefix).  Decoders therefore take an
  ``element_size(subscriber) -> int`` lookup; 0 means variable-size mode.
* A type of 64 or above belongs to an extension.  A receiver that does not
  know the extension cannot find where the message ends, so it cannot skip
  it: the decoder raises ``unknown-extension-type`` and the connection sends
  goodbye and closes.  Extensions are described by their field layouts (the
  draft allows only varints, strings and byte arrays), which is enough to
  decode them into :class:`ExtensionMessage`.

Error codes (``CodecError.code``):

==========================  ==================================================
``varint-overlong``         non-minimal varint (strict decoders)
``varint-too-large``        varint value above 2^63-1
``varint-too-long``         varint of more than 10 bytes
``varint-negative``         encoder given a negative integer
``too-large``               a length, count or element size makes the message
                            longer than ``max_message`` (raised before the
                            bytes arrive)
``truncated``               a whole-message decode ran out of bytes
``trailing-bytes``          a whole-message decode had bytes left over
``invalid-utf8``            a String that is not UTF-8 (or cannot be encoded)
``unknown-type``            type 0 or 14..63: not assigned by rsio/0
``unknown-extension-type``  type >= 64 with no known layout
``not-fixed-size``          onNextPacked for a stream whose elementSize is 0
``element-size-mismatch``   encoder given a fixed-size element of another size
``not-extension-type``      ExtensionMessage with a type below 64
``bad-field``               ExtensionMessage field not an int, str or bytes
==========================  ==================================================
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Callable, ClassVar, Iterator, Literal, Mapping, Union

from reference_impl.common.errors import CodecError, IncompleteFrame
from reference_impl.common.varint import decode_uvarint, encode_uvarint

VERSION = 0
LONG_MAX = 2**63 - 1
EXTENSION_TYPE_MIN = 64
DEFAULT_MAX_MESSAGE = 1 << 20

FieldKind = Literal["varint", "string", "bytes"]
# Field kinds of the core messages add two that need the element size.
_Kind = Literal["varint", "string", "bytes", "ids", "element", "packed"]
Layouts = Mapping[int, tuple[FieldKind, ...]]
ElementSizes = Callable[[int], int]


def variable_size(subscriber: int) -> int:
    """Element-size lookup for a peer that has no fixed-size streams."""
    return 0


@dataclass(frozen=True)
class ClientHello:
    TYPE: ClassVar[int] = 1
    LAYOUT: ClassVar[tuple[_Kind, ...]] = ("varint", "ids")
    version: int
    extensions: tuple[int, ...] = ()


@dataclass(frozen=True)
class ServerHello:
    TYPE: ClassVar[int] = 2
    LAYOUT: ClassVar[tuple[_Kind, ...]] = ("varint", "ids")
    version: int
    extensions: tuple[int, ...] = ()


@dataclass(frozen=True)
class Goodbye:
    TYPE: ClassVar[int] = 3
    LAYOUT: ClassVar[tuple[_Kind, ...]] = ("string",)
    reason: str = ""


@dataclass(frozen=True)
class Subscribe:
    TYPE: ClassVar[int] = 4
    LAYOUT: ClassVar[tuple[_Kind, ...]] = ("string", "varint", "varint")
    publisher: str
    subscriber: int
    initial_demand: int = 0


@dataclass(frozen=True)
class Request:
    TYPE: ClassVar[int] = 5
    LAYOUT: ClassVar[tuple[_Kind, ...]] = ("varint", "varint")
    subscriber: int
    demand: int


@dataclass(frozen=True)
class Cancel:
    TYPE: ClassVar[int] = 6
    LAYOUT: ClassVar[tuple[_Kind, ...]] = ("varint",)
    subscriber: int


@dataclass(frozen=True)
class Subscribed:
    TYPE: ClassVar[int] = 7
    LAYOUT: ClassVar[tuple[_Kind, ...]] = ("varint", "varint")
    subscriber: int
    element_size: int = 0


@dataclass(frozen=True)
class OnNext:
    TYPE: ClassVar[int] = 8
    LAYOUT: ClassVar[tuple[_Kind, ...]] = ("varint", "element")
    subscriber: int
    element: bytes


@dataclass(frozen=True)
class OnComplete:
    TYPE: ClassVar[int] = 9
    LAYOUT: ClassVar[tuple[_Kind, ...]] = ("varint",)
    subscriber: int


@dataclass(frozen=True)
class OnError:
    TYPE: ClassVar[int] = 10
    LAYOUT: ClassVar[tuple[_Kind, ...]] = ("varint", "string")
    subscriber: int
    error: str


@dataclass(frozen=True)
class OnNextPacked:
    """``count`` is ``len(elements)``; each element is elementSize raw bytes."""

    TYPE: ClassVar[int] = 11
    LAYOUT: ClassVar[tuple[_Kind, ...]] = ("varint", "packed")
    subscriber: int
    elements: tuple[bytes, ...]


@dataclass(frozen=True)
class OnNextPart:
    TYPE: ClassVar[int] = 12
    LAYOUT: ClassVar[tuple[_Kind, ...]] = ("varint", "varint", "bytes")
    subscriber: int
    element: int
    data: bytes


@dataclass(frozen=True)
class OnNextLastPart:
    TYPE: ClassVar[int] = 13
    LAYOUT: ClassVar[tuple[_Kind, ...]] = ("varint", "varint", "bytes")
    subscriber: int
    element: int
    data: bytes


@dataclass(frozen=True)
class ExtensionMessage:
    """A message of type >= 64; ``fields`` follow the extension's layout."""

    type: int
    fields: tuple[int | str | bytes, ...] = ()


CoreMessage = Union[
    ClientHello, ServerHello, Goodbye, Subscribe, Request, Cancel, Subscribed,
    OnNext, OnComplete, OnError, OnNextPacked, OnNextPart, OnNextLastPart,
]
Message = Union[CoreMessage, ExtensionMessage]

CORE_TYPES: dict[int, type] = {
    cls.TYPE: cls
    for cls in (ClientHello, ServerHello, Goodbye, Subscribe, Request, Cancel, Subscribed,
                OnNext, OnComplete, OnError, OnNextPacked, OnNextPart, OnNextLastPart)
}


def _bytes_field(data: bytes) -> bytes:
    return encode_uvarint(len(data)) + data


def _string_field(text: str) -> bytes:
    try:
        return _bytes_field(text.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise CodecError("invalid-utf8", str(exc)) from exc


def _fixed(data: bytes, element_size: int) -> bytes:
    if len(data) != element_size:
        raise CodecError("element-size-mismatch", f"{len(data)} bytes, elementSize {element_size}")
    return data


def _encode_field(kind: _Kind, value, element_size: int) -> bytes:
    if kind == "varint":
        return encode_uvarint(value)
    if kind == "string":
        return _string_field(value)
    if kind == "bytes":
        return _bytes_field(value)
    if kind == "ids":
        return encode_uvarint(len(value)) + b"".join(encode_uvarint(i) for i in value)
    if kind == "element":
        return _fixed(value, element_size) if element_size else _bytes_field(value)
    if element_size <= 0:
        raise CodecError("not-fixed-size", "onNextPacked needs elementSize > 0")
    return encode_uvarint(len(value)) + b"".join(_fixed(e, element_size) for e in value)


def _encode_extension_field(value: int | str | bytes) -> bytes:
    if isinstance(value, int):
        return encode_uvarint(value)
    if isinstance(value, str):
        return _string_field(value)
    if isinstance(value, bytes):
        return _bytes_field(value)
    raise CodecError("bad-field", f"{type(value).__name__} in an extension message")


def encode_message(message: Message, *, element_size: int = 0) -> bytes:
    """Encode one message.

    ``element_size`` is the elementSize of ``message.subscriber``'s stream as
    announced in ``subscribed``; it only matters for onNext and onNextPacked.
    """
    if isinstance(message, ExtensionMessage):
        if message.type < EXTENSION_TYPE_MIN:
            raise CodecError("not-extension-type", str(message.type))
        return encode_uvarint(message.type) + b"".join(
            _encode_extension_field(v) for v in message.fields)
    values = [getattr(message, f.name) for f in fields(message)]
    return encode_uvarint(message.TYPE) + b"".join(
        _encode_field(kind, value, element_size) for kind, value in zip(message.LAYOUT, values))


class _Reader:
    """Reads fields from ``buf`` without ever sizing anything from a length field.

    A length that would end the message past ``max_message`` raises
    ``too-large`` at once; bytes not yet in ``buf`` raise IncompleteFrame.
    """

    def __init__(self, buf: bytes | bytearray, offset: int, max_message: int) -> None:
        self.buf = buf
        self.pos = offset
        self.max_message = max_message
        self.limit = offset + max_message

    def _take(self, n: int) -> bytes:
        end = self.pos + n
        if end > self.limit:
            raise CodecError("too-large", f"a field of {n} bytes exceeds max_message {self.max_message}")
        if end > len(self.buf):
            raise IncompleteFrame()
        data = bytes(self.buf[self.pos:end])
        self.pos = end
        return data

    def varint(self) -> int:
        if self.pos >= self.limit:
            raise CodecError("too-large", f"message longer than max_message {self.max_message}")
        value, end = decode_uvarint(self.buf, self.pos)
        if end > self.limit:
            raise CodecError("too-large", f"message longer than max_message {self.max_message}")
        self.pos = end
        return value

    def bytes_field(self) -> bytes:
        return self._take(self.varint())

    def string(self) -> str:
        try:
            return self.bytes_field().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CodecError("invalid-utf8", str(exc)) from exc

    def ids(self) -> tuple[int, ...]:
        count = self.varint()
        if self.pos + count > self.limit:  # every Id takes at least one byte
            raise CodecError("too-large", f"{count} Ids")
        return tuple(self.varint() for _ in range(count))

    def element(self, element_size: int) -> bytes:
        return self._take(element_size) if element_size else self.bytes_field()

    def packed(self, element_size: int) -> tuple[bytes, ...]:
        if element_size <= 0:
            raise CodecError("not-fixed-size", "onNextPacked on a variable-size stream")
        count = self.varint()
        if self.pos + count * element_size > self.limit:
            raise CodecError("too-large", f"{count} elements of {element_size} bytes")
        return tuple(self._take(element_size) for _ in range(count))


def decode_message(
    buf: bytes | bytearray,
    offset: int = 0,
    *,
    max_message: int = DEFAULT_MAX_MESSAGE,
    element_size: ElementSizes = variable_size,
    layouts: Layouts | None = None,
) -> tuple[Message, int]:
    """Decode the message at ``offset``; return it and the offset after it.

    ``element_size`` is consulted once the subscriber Id of an onNext or
    onNextPacked is read; ``layouts`` maps extension types to field layouts.
    Raises IncompleteFrame when ``buf`` ends inside a message.
    """
    reader = _Reader(buf, offset, max_message)
    msg_type = reader.varint()
    cls = CORE_TYPES.get(msg_type)
    if cls is None:
        return _decode_extension(reader, msg_type, layouts or {}), reader.pos
    values: list = []
    for kind in cls.LAYOUT:
        if kind == "varint":
            values.append(reader.varint())
        elif kind == "string":
            values.append(reader.string())
        elif kind == "bytes":
            values.append(reader.bytes_field())
        elif kind == "ids":
            values.append(reader.ids())
        elif kind == "element":
            values.append(reader.element(element_size(values[0])))
        else:
            values.append(reader.packed(element_size(values[0])))
    return cls(*values), reader.pos


def _decode_extension(reader: _Reader, msg_type: int, layouts: Layouts) -> ExtensionMessage:
    if msg_type < EXTENSION_TYPE_MIN:
        raise CodecError("unknown-type", f"type {msg_type} is not assigned in rsio/0")
    layout = layouts.get(msg_type)
    if layout is None:
        raise CodecError("unknown-extension-type", f"type {msg_type}: no extension known to define it")
    read = {"varint": reader.varint, "string": reader.string, "bytes": reader.bytes_field}
    return ExtensionMessage(msg_type, tuple(read[kind]() for kind in layout))


def decode_exact(
    data: bytes,
    *,
    max_message: int = DEFAULT_MAX_MESSAGE,
    element_size: ElementSizes = variable_size,
    layouts: Layouts | None = None,
) -> Message:
    """Decode ``data`` as exactly one whole message (vectors, datagrams)."""
    try:
        message, end = decode_message(data, 0, max_message=max_message,
                                      element_size=element_size, layouts=layouts)
    except IncompleteFrame:
        raise CodecError("truncated", f"{len(data)} bytes end inside a message") from None
    if end != len(data):
        raise CodecError("trailing-bytes", f"{len(data) - end} bytes after the message")
    return message


class StreamDecoder:
    """Splits a byte stream fed in arbitrary chunks into messages.

    Messages are decoded one at a time when iterated, so the element-size
    lookup sees the effect of every earlier message (a ``subscribed`` must be
    processed before the ``onNext`` behind it is decoded).  Nothing is
    allocated from a length field: the buffer only ever holds bytes that were
    fed.  After a CodecError the stream cannot be resynchronised.
    """

    def __init__(
        self,
        max_message: int = DEFAULT_MAX_MESSAGE,
        *,
        element_size: ElementSizes = variable_size,
        layouts: Layouts | None = None,
    ) -> None:
        self.max_message = max_message
        self._element_size = element_size
        self._layouts = layouts or {}
        self._buf = bytearray()

    @property
    def buffered(self) -> int:
        """Bytes received but not yet part of a decoded message."""
        return len(self._buf)

    def feed(self, data: bytes) -> None:
        self._buf += data

    def next_message(self) -> Message | None:
        """The next complete message, or None until more bytes are fed."""
        if not self._buf:
            return None
        try:
            message, end = decode_message(self._buf, 0, max_message=self.max_message,
                                          element_size=self._element_size, layouts=self._layouts)
        except IncompleteFrame:
            return None
        del self._buf[:end]
        return message

    def __iter__(self) -> Iterator[Message]:
        while (message := self.next_message()) is not None:
            yield message
