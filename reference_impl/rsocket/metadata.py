"""Composite metadata and routing metadata (sans-IO), the two extensions the test service reads.

Layouts: https://github.com/rsocket/rsocket/blob/master/Extensions/CompositeMetadata.md (per
entry: one byte, high bit set = a well-known MIME id in the low 7 bits, else the length minus one
of an explicit US-ASCII MIME type that follows; then a 24-bit entry length and the entry) and
https://github.com/rsocket/rsocket/blob/master/Extensions/Routing.md (tags, each behind a one-byte
length).  Well-known ids: Extensions/WellKnownMimeTypes.md.
"""

from __future__ import annotations

from reference_impl.common.errors import CodecError

COMPOSITE_MIME = "message/x.rsocket.composite-metadata.v0"
ROUTING_MIME = "message/x.rsocket.routing.v0"
ROUTING_ID = 0x7E
#: the well-known ids this module names; the others stay numbers (the protocol never interprets them)
WELL_KNOWN = {ROUTING_ID: ROUTING_MIME, 0x7F: COMPOSITE_MIME}


def decode_composite(metadata: bytes) -> list[tuple[str | int, bytes]]:
    """(MIME type, entry) pairs: a well-known id this module does not name stays an int."""
    entries: list[tuple[str | int, bytes]] = []
    pos = 0
    while pos < len(metadata):
        head = metadata[pos]
        pos += 1
        if head & 0x80:
            mime: str | int = WELL_KNOWN.get(head & 0x7F, head & 0x7F)
        else:
            end = pos + head + 1
            if end > len(metadata):
                raise CodecError("composite-truncated", "MIME type past the end")
            try:
                mime = metadata[pos:end].decode("ascii")
            except UnicodeDecodeError:
                raise CodecError("composite-mime-not-ascii") from None
            pos = end
        if pos + 3 > len(metadata):
            raise CodecError("composite-truncated", "entry length past the end")
        length = int.from_bytes(metadata[pos:pos + 3], "big")
        pos += 3
        if pos + length > len(metadata):
            raise CodecError("composite-truncated", "entry past the end")
        entries.append((mime, metadata[pos:pos + length]))
        pos += length
    return entries


def routing_tags(entry: bytes) -> list[bytes]:
    """A routing entry's tags (Extensions/Routing.md: each behind a one-byte length), as sent."""
    tags: list[bytes] = []
    pos = 0
    while pos < len(entry):
        end = pos + 1 + entry[pos]
        if end > len(entry):
            raise CodecError("routing-truncated", "tag past the end")
        tags.append(entry[pos + 1:end])
        pos = end
    return tags


def decode_routing(entry: bytes) -> list[str]:
    return [tag.decode("utf-8", "replace") for tag in routing_tags(entry)]


def route_of(metadata: bytes | None) -> str | None:
    """The first routing tag of composite metadata, or None when there is none (or it is malformed)."""
    if not metadata:
        return None
    try:
        for mime, entry in decode_composite(metadata):
            if mime == ROUTING_MIME:
                tags = decode_routing(entry)
                return tags[0] if tags else None
    except CodecError:
        return None
    return None
