"""Composite and routing metadata, from bytes laid out by hand after Extensions/CompositeMetadata.md
and Extensions/Routing.md; and the test service routing by them."""

from __future__ import annotations

import pytest

from reference_impl.common.errors import CodecError
from reference_impl.rsocket.connection import Connection, Role
from reference_impl.rsocket import codec
from reference_impl.rsocket.metadata import COMPOSITE_MIME, decode_composite, decode_routing, route_of
from reference_impl.rsocket.service import TestService


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", ""))


# 0xFE: well-known id 0x7E (routing), length 8, tags "echo:hi" (7); then "a/b" (length-1 = 2), length 1, "z"
COMPOSITE = h("fe 000008 07 6563686f3a6869  02 612f62 000001 7a")


def test_composite_entries_by_id_and_by_string() -> None:
    assert decode_composite(COMPOSITE) == [("message/x.rsocket.routing.v0", h("07 6563686f3a6869")), ("a/b", b"z")]
    assert decode_composite(h("80 000000")) == [(0, b"")]  # id 0x00 (application/avro), not named here


def test_routing_tags_and_the_route() -> None:
    assert decode_routing(h("02 6869 01 78")) == ["hi", "x"]
    assert route_of(COMPOSITE) == "echo:hi"
    assert route_of(h("02 612f62 000001 7a")) is None


@pytest.mark.parametrize("bad", ["fe 000009 07", "05 612f62", "fe 00"])
def test_truncated_composite_metadata_is_refused(bad: str) -> None:
    with pytest.raises(CodecError):
        decode_composite(h(bad))


def _answer(metadata_mime: str, data: bytes, metadata: bytes) -> bytes:
    server = Connection(Role.SERVER, now=0.0)
    service = TestService(server)
    setup = codec.encode_tcp(codec.Setup(1, 0, 30000, 90000, metadata_mime, "text/plain"))
    request = codec.encode_tcp(codec.RequestResponse(1, metadata, data))
    service.handle(server.receive_data(setup + request, 0.0))
    decoder = codec.TcpDecoder()
    decoder.feed(server.data_to_send())
    [payload] = list(decoder)
    assert isinstance(payload, codec.Payload) and payload.stream_id == 1
    return payload.data


def test_the_service_routes_by_composite_metadata_only_when_negotiated() -> None:
    assert _answer(COMPOSITE_MIME, b"unrouted", COMPOSITE) == b"hi"
    assert _answer("text/plain", b"echo:plain", COMPOSITE) == b"plain"
