"""rsio sans-IO connection: two in-memory Connections, or one fed hand-written bytes."""

from __future__ import annotations

import pytest

from reference_impl.common.errors import ProtocolViolation
from reference_impl.rsio.codec import (
    LONG_MAX,
    Cancel,
    ClientHello,
    ExtensionMessage,
    Goodbye,
    OnComplete,
    OnError,
    OnNext,
    OnNextLastPart,
    OnNextPacked,
    OnNextPart,
    Request,
    ServerHello,
    StreamDecoder,
    Subscribe,
    Subscribed,
)
from reference_impl.rsio.connection import (
    Connection,
    ConnectionClosed,
    Element,
    Extension,
    Role,
    Side,
    State,
    StreamReleased,
)

EXT_A = Extension(7, {64: ("varint",)})
EXT_B = Extension(9, {65: ("bytes",)})


def shuttle(a: Connection, b: Connection) -> tuple[list, list]:
    """Move bytes both ways until both sides are quiet; return (events of a, events of b)."""
    events_a: list = []
    events_b: list = []
    while True:
        to_b, to_a = a.data_to_send(), b.data_to_send()
        if not to_b and not to_a:
            return events_a, events_b
        events_b += b.receive_data(to_b)
        events_a += a.receive_data(to_a)


def sent(conn: Connection) -> list:
    """Decode what ``conn`` wants to send (no fixed-size streams involved)."""
    decoder = StreamDecoder()
    decoder.feed(conn.data_to_send())
    return list(decoder)


def pair(**kw) -> tuple[Connection, Connection]:
    client, server = Connection(Role.CLIENT, **kw), Connection(Role.SERVER, **kw)
    shuttle(client, server)
    return client, server


def open_stream(client: Connection, server: Connection, sid: int = 1, demand: int = 0,
                element_size: int = 0) -> None:
    client.send(Subscribe("p", sid, demand))
    _, events = shuttle(client, server)
    assert events == [Subscribe("p", sid, demand)]
    server.send(Subscribed(sid, element_size))
    events, _ = shuttle(client, server)
    assert events == [Subscribed(sid, element_size)]


# -- handshake ---------------------------------------------------------------

def test_both_hellos_are_sent_at_once_without_waiting() -> None:
    client, server = Connection(Role.CLIENT), Connection(Role.SERVER)
    assert sent(client) == [ClientHello(0, ())]
    assert sent(server) == [ServerHello(0, ())]


def test_hello_exchange_gives_the_peer_hello() -> None:
    client, server = Connection(Role.CLIENT), Connection(Role.SERVER)
    events_c, events_s = shuttle(client, server)
    assert events_c == [ServerHello(0, ())] and events_s == [ClientHello(0, ())]
    assert client.peer_hello == ServerHello(0, ())


def test_messages_before_the_peer_hello_are_processed() -> None:
    client, server = Connection(Role.CLIENT), Connection(Role.SERVER)
    client.send(Subscribe("p", 1, 2))  # optimistic, right behind clientHello
    events = server.receive_data(client.data_to_send())
    assert events == [ClientHello(0, ()), Subscribe("p", 1, 2)]
    # and the client processes a stream's signals before any serverHello
    events = client.receive_data(bytes.fromhex("070100" "08010178"))
    assert events == [Subscribed(1), Element(1, b"x")]
    assert client.peer_hello is None


def test_subscribe_processed_when_it_arrives_before_any_hello() -> None:
    server = Connection(Role.SERVER)
    events = server.receive_data(bytes.fromhex("0401700103"))  # subscribe('p', 1, 3), no hello
    assert events == [Subscribe("p", 1, 3)]
    assert server.publisher_demand(1) == 3


@pytest.mark.parametrize("hello", ["010100", "01ac0200"])  # version 1, version 300
def test_wrong_version_gets_goodbye_then_close(hello: str) -> None:
    server = Connection(Role.SERVER)
    server.data_to_send()
    events = server.receive_data(bytes.fromhex(hello))
    assert events == [ConnectionClosed("unsupported-version", orderly=False)]
    assert sent(server) == [Goodbye("unsupported-version")]
    assert server.should_close


@pytest.mark.parametrize("role,wire,code", [
    (Role.SERVER, "020000", "unexpected-hello"),   # serverHello sent to a server
    (Role.CLIENT, "010000", "unexpected-hello"),
    (Role.SERVER, "010000010000", "duplicate-hello"),
    (Role.SERVER, "0e", "unknown-type"),
    (Role.SERVER, "40", "unknown-extension-type"),
    (Role.SERVER, "0301ff", "invalid-utf8"),
    (Role.SERVER, "0501" + "80" * 9 + "01", "varint-too-large"),
    (Role.CLIENT, "08010178", "unknown-subscriber"),  # onNext for a stream never subscribed
])
def test_bad_input_gets_goodbye_then_close(role: Role, wire: str, code: str) -> None:
    conn = Connection(role)
    conn.data_to_send()
    events = conn.receive_data(bytes.fromhex(wire))
    assert events[-1] == ConnectionClosed(code, orderly=False)
    assert sent(conn) == [Goodbye(code)]
    assert conn.should_close
    assert conn.receive_data(bytes.fromhex("0601")) == []  # nothing after the close


def test_bad_input_releases_every_stream() -> None:
    client, server = pair()
    open_stream(client, server, 1, 5)
    server.send(Subscribe("q", 4))  # the server subscribes to the client too
    shuttle(client, server)
    events = client.receive_data(b"\x00")
    assert events == [StreamReleased(Side.PUBLISHER, 4, "unknown-type"),
                      StreamReleased(Side.SUBSCRIBER, 1, "unknown-type"),
                      ConnectionClosed("unknown-type", orderly=False)]


# -- extensions --------------------------------------------------------------

def test_active_extensions_are_the_intersection() -> None:
    client = Connection(Role.CLIENT, extensions=[EXT_A, EXT_B])
    server = Connection(Role.SERVER, extensions=[EXT_A])
    assert sent(client) == [ClientHello(0, (7, 9))]
    client = Connection(Role.CLIENT, extensions=[EXT_A, EXT_B])
    shuttle(client, server)
    assert client.active_extensions == server.active_extensions == {7}


def test_no_extension_type_before_the_peer_hello_lists_it() -> None:
    client = Connection(Role.CLIENT, extensions=[EXT_A, EXT_B])
    with pytest.raises(ProtocolViolation) as err:
        client.send(ExtensionMessage(64, (1,)))
    assert err.value.code == "extension-not-active" and not err.value.fatal
    server = Connection(Role.SERVER, extensions=[EXT_A])
    shuttle(client, server)
    client.send(ExtensionMessage(64, (1,)))
    _, events = shuttle(client, server)
    assert events == [ExtensionMessage(64, (1,))]
    with pytest.raises(ProtocolViolation) as err:  # extension 9: the server did not list it
        client.send(ExtensionMessage(65, (b"x",)))
    assert err.value.code == "extension-not-active"


def test_received_extension_type_not_active_closes() -> None:
    server = Connection(Role.SERVER, extensions=[EXT_A])
    server.data_to_send()
    events = server.receive_data(bytes.fromhex("4005"))  # type 64 before any hello
    assert events[-1] == ConnectionClosed("extension-not-active", orderly=False)
    assert sent(server) == [Goodbye("extension-not-active")]


def test_extension_types_must_be_64_or_more() -> None:
    with pytest.raises(ValueError):
        Connection(Role.CLIENT, extensions=[Extension(1, {13: ("varint",)})])


# -- demand ------------------------------------------------------------------

def test_never_more_elements_than_demanded() -> None:
    client, server = pair()
    open_stream(client, server, 1, 2)
    server.send(OnNext(1, b"a"))
    server.send(OnNext(1, b"b"))
    with pytest.raises(ProtocolViolation) as err:
        server.send(OnNext(1, b"c"))
    assert err.value.code == "demand-exceeded" and not err.value.fatal
    events, _ = shuttle(client, server)
    assert events == [Element(1, b"a"), Element(1, b"b")]
    client.send(Request(1, 1))
    _, events = shuttle(client, server)
    assert events == [Request(1, 1)]
    server.send(OnNext(1, b"c"))
    assert server.publisher_demand(1) == 0


def test_peer_sending_beyond_demand_is_a_violation() -> None:
    client = Connection(Role.CLIENT)
    client.send(Subscribe("p", 1, 1))
    client.data_to_send()
    events = client.receive_data(bytes.fromhex("070100" "080101aa" "080101bb"))
    assert events[:2] == [Subscribed(1), Element(1, b"\xaa")]
    assert events[-1] == ConnectionClosed("demand-exceeded", orderly=False)


def test_request_zero_gets_on_error_and_ends_the_stream() -> None:
    server = Connection(Role.SERVER)
    server.data_to_send()
    events = server.receive_data(bytes.fromhex("04017001 00" "050100".replace(" ", "")))
    assert events == [Subscribe("p", 1, 0), StreamReleased(Side.PUBLISHER, 1, "request-zero")]
    (error,) = sent(server)
    assert isinstance(error, OnError) and error.subscriber == 1
    assert server.publisher_demand(1) is None
    assert not server.should_close  # only that stream ends


def test_local_request_zero_is_refused() -> None:
    client, server = pair()
    open_stream(client, server)
    with pytest.raises(ProtocolViolation) as err:
        client.send(Request(1, 0))
    assert err.value.code == "request-zero"


def test_demand_reaching_long_max_is_unbounded() -> None:
    client, server = pair()
    open_stream(client, server, 1, LONG_MAX - 1)
    client.send(Request(1, 5))
    shuttle(client, server)
    assert server.publisher_demand(1) == LONG_MAX == client.subscriber_demand(1)
    for i in range(3):
        server.send(OnNext(1, bytes([i])))  # unbounded: no longer decremented
    client.send(Request(1, LONG_MAX))  # still no overflow past the bound
    shuttle(client, server)
    assert server.publisher_demand(1) == LONG_MAX == client.subscriber_demand(1)


def test_initial_demand_long_max_is_unbounded_from_the_start() -> None:
    client, server = pair()
    open_stream(client, server, 1, LONG_MAX)
    for _ in range(10):
        server.send(OnNext(1, b"x"))
    events, _ = shuttle(client, server)
    assert len(events) == 10 and server.publisher_demand(1) == LONG_MAX


def test_request_and_cancel_for_ended_streams_are_no_ops() -> None:
    client, server = pair()
    open_stream(client, server)
    server.send(OnComplete(1))
    shuttle(client, server)
    assert client.send(Request(1, 3)) == [] and client.send(Cancel(1)) == []
    assert client.data_to_send() == b""
    # and a publisher ignores request/cancel for Ids it does not know (rules 3.6, 3.7)
    assert server.receive_data(bytes.fromhex("0509 01" "0609".replace(" ", ""))) == []
    assert not server.should_close


# -- subscriber Ids ----------------------------------------------------------

def test_subscribe_on_an_id_in_use_gets_on_error_and_ends_both() -> None:
    client, server = pair()
    open_stream(client, server, 1, 3)
    events = server.receive_data(bytes.fromhex("0401710100"))  # a buggy second subscribe, Id 1
    assert events == [StreamReleased(Side.PUBLISHER, 1, "id-in-use")]
    assert server.publisher_demand(1) is None
    events, _ = shuttle(client, server)
    assert len(events) == 1 and isinstance(events[0], OnError) and events[0].subscriber == 1
    assert client.subscriber_demand(1) is None  # the stream that held the Id ended too
    assert not client.should_close and not server.should_close


def test_id_in_use_then_free() -> None:
    server = Connection(Role.SERVER)
    server.data_to_send()
    assert server.receive_data(bytes.fromhex("0401700100")) == [Subscribe("p", 1, 0)]
    assert server.receive_data(bytes.fromhex("0401710100")) == [
        StreamReleased(Side.PUBLISHER, 1, "id-in-use")]
    # both streams ended, so the Id is free again
    assert server.receive_data(bytes.fromhex("0401720102")) == [Subscribe("r", 1, 2)]


def test_local_id_reuse_only_after_cancel_or_end() -> None:
    client, server = pair()
    open_stream(client, server, 1)
    with pytest.raises(ProtocolViolation) as err:
        client.send(Subscribe("p", 1))
    assert err.value.code == "subscriber-in-use"
    client.send(Cancel(1))
    client.send(Subscribe("p", 1, 1))  # reuse after cancel
    _, events = shuttle(client, server)
    assert events == [Cancel(1), Subscribe("p", 1, 1)]
    server.send(Subscribed(1))
    server.send(OnError(1, "boom"))
    events, _ = shuttle(client, server)
    assert events == [Subscribed(1), OnError(1, "boom")]
    client.send(Subscribe("p", 1))  # reuse after onError
    assert client.subscriber_demand(1) == 0


def test_elements_in_flight_after_cancel_are_dropped_with_the_right_size() -> None:
    client, server = pair()
    open_stream(client, server, 1, 5, element_size=2)
    server.send(OnNext(1, b"ab"))
    server.send(OnNextPacked(1, (b"cd", b"ef")))
    client.send(Cancel(1))  # crosses the elements on the wire
    events = client.receive_data(server.data_to_send())
    assert events == []  # decoded with elementSize 2, then dropped
    server.send(OnComplete(1))
    assert client.receive_data(server.data_to_send()) == []
    assert not client.should_close


def test_duplicate_subscribed_is_a_violation() -> None:
    client, server = pair()
    open_stream(client, server)
    events = client.receive_data(bytes.fromhex("070100"))
    assert events[-1] == ConnectionClosed("duplicate-subscribed", orderly=False)


def test_publisher_must_send_subscribed_first() -> None:
    client, server = pair()
    client.send(Subscribe("p", 1, 1))
    shuttle(client, server)
    with pytest.raises(ProtocolViolation) as err:
        server.send(OnNext(1, b"x"))
    assert err.value.code == "not-subscribed"


# -- fixed size, packed, split -----------------------------------------------

def test_fixed_size_and_packed_elements() -> None:
    client, server = pair()
    open_stream(client, server, 1, 4, element_size=3)
    server.send(OnNext(1, b"abc"))
    server.send(OnNextPacked(1, (b"def", b"ghi", b"jkl")))
    with pytest.raises(ProtocolViolation):
        server.send(OnNextPacked(1, (b"mno",)))
    events, _ = shuttle(client, server)
    assert [e.data for e in events] == [b"abc", b"def", b"ghi", b"jkl"]


def test_packed_beyond_demand_is_refused_whole() -> None:
    client, server = pair()
    open_stream(client, server, 1, 2, element_size=1)
    with pytest.raises(ProtocolViolation):
        server.send(OnNextPacked(1, (b"a", b"b", b"c")))
    assert server.publisher_demand(1) == 2


def test_split_elements_join_in_order_and_count_once() -> None:
    client, server = pair()
    open_stream(client, server, 1, 1)
    open_stream(client, server, 2, 1)
    # parts of two streams interleaved
    server.send(OnNextPart(1, 0, b"he"))
    server.send(OnNextPart(2, 0, b"wo"))
    server.send(OnNextPart(1, 0, b"ll"))
    server.send(OnNextLastPart(2, 0, b"rld"))
    server.send(OnNextLastPart(1, 0, b"o"))
    assert server.publisher_demand(1) == server.publisher_demand(2) == 0
    events, _ = shuttle(client, server)
    assert events == [Element(2, b"world"), Element(1, b"hello")]
    assert client.subscriber_demand(1) == client.subscriber_demand(2) == 0


def test_two_split_elements_of_one_stream_interleaved_need_demand_for_both() -> None:
    client, server = pair()
    open_stream(client, server, 1, 2)
    server.send(OnNextPart(1, 10, b"a"))
    server.send(OnNextPart(1, 11, b"b"))
    with pytest.raises(ProtocolViolation):  # a third open element cannot be delivered
        server.send(OnNextPart(1, 12, b"c"))
    server.send(OnNextLastPart(1, 11, b"B"))
    server.send(OnNextLastPart(1, 10, b"A"))
    events, _ = shuttle(client, server)
    assert events == [Element(1, b"bB"), Element(1, b"aA")]


def test_a_last_part_alone_is_a_whole_element() -> None:
    client, server = pair()
    open_stream(client, server, 1, 1)
    server.send(OnNextLastPart(1, 3, b"solo"))
    events, _ = shuttle(client, server)
    assert events == [Element(1, b"solo")]


def test_received_parts_beyond_demand_are_a_violation() -> None:
    client = Connection(Role.CLIENT)
    client.send(Subscribe("p", 1, 1))
    client.data_to_send()
    events = client.receive_data(bytes.fromhex("070100" "0c01000161" "0c01010162"))
    assert events[-1] == ConnectionClosed("demand-exceeded", orderly=False)


def test_joined_element_size_is_bounded() -> None:
    client, server = pair(max_element=4)
    open_stream(client, server, 1, 1)
    server.send(OnNextPart(1, 0, b"abc"))
    server.send(OnNextPart(1, 0, b"de"))
    events, _ = shuttle(client, server)
    assert events[-1] == ConnectionClosed("element-too-large", orderly=False)


def test_number_of_partial_elements_is_bounded() -> None:
    client, server = pair(max_partial_elements=2)
    open_stream(client, server, 1, LONG_MAX)
    for element in range(3):
        server.send(OnNextPart(1, element, b"x"))
    events, _ = shuttle(client, server)
    assert events[-1] == ConnectionClosed("too-many-partial-elements", orderly=False)


def test_split_fixed_size_element_must_have_the_size() -> None:
    client, server = pair()
    open_stream(client, server, 1, 2, element_size=4)
    server.send(OnNextPart(1, 0, b"ab"))
    server.send(OnNextLastPart(1, 0, b"cd"))
    events, _ = shuttle(client, server)
    assert events == [Element(1, b"abcd")]
    server.send(OnNextLastPart(1, 1, b"abc"))
    events, _ = shuttle(client, server)
    assert events[-1] == ConnectionClosed("element-size-mismatch", orderly=False)


# -- both roles, goodbye, abrupt close ---------------------------------------

def test_both_sides_publish_and_subscribe_on_one_connection() -> None:
    client, server = pair()
    open_stream(client, server, 1, 1)
    server.send(Subscribe("q", 1, 1))  # same Id number, other direction: no clash
    _, _ = shuttle(client, server)
    client.send(Subscribed(1))
    client.send(OnNext(1, b"to-server"))
    server.send(OnNext(1, b"to-client"))
    events_c, events_s = shuttle(client, server)
    assert Element(1, b"to-client") in events_c
    assert events_s[-1] == Element(1, b"to-server")


def test_goodbye_handshake() -> None:
    client, server = pair()
    open_stream(client, server, 1, 1)
    events = client.send(Goodbye("done"))
    assert events == [StreamReleased(Side.SUBSCRIBER, 1, "goodbye")]
    assert client.state is State.GOODBYE_SENT and not client.should_close
    with pytest.raises(ProtocolViolation):
        client.send(Request(1, 1))
    server.send(OnNext(1, b"late"))  # crosses our goodbye: ignored
    events = server.receive_data(client.data_to_send())
    assert events == [StreamReleased(Side.PUBLISHER, 1, "goodbye"), Goodbye("done"),
                      ConnectionClosed("done", orderly=True)]
    assert server.should_close
    events = client.receive_data(server.data_to_send())
    assert events == [Goodbye(""), ConnectionClosed("", orderly=True)]
    assert client.should_close


def test_abrupt_close_releases_every_stream() -> None:
    client, server = pair()
    open_stream(client, server, 1)
    open_stream(client, server, 2)
    client.send(Cancel(2))
    server.send(Subscribe("q", 5))
    shuttle(client, server)
    events = client.connection_lost()
    assert events == [StreamReleased(Side.PUBLISHER, 5, "connection-lost"),
                      StreamReleased(Side.SUBSCRIBER, 1, "connection-lost"),
                      ConnectionClosed("connection-lost", orderly=False)]
    assert client.connection_lost() == []


def test_nothing_can_be_sent_after_close() -> None:
    client = Connection(Role.CLIENT)
    client.connection_lost()
    with pytest.raises(ProtocolViolation) as err:
        client.send(Subscribe("p", 1))
    assert err.value.code == "connection-closing"


def test_hello_cannot_be_sent_by_hand() -> None:
    with pytest.raises(ProtocolViolation):
        Connection(Role.CLIENT).send(ClientHello(0))
