"""rsio's test-service rules (conformance/trace/rules/rsio_services.py) on hand-written captures.

Every message below is written byte by byte from docs/profiles/rsio.md's layout (a varint type,
then the fields; Id and Long as LEB128 varints, a String or bytes field as a varint length then
the bytes; fixed-size onNext as elementSize raw bytes; onNextPacked as count then count*size
bytes), and what the services promise from its "Test service" section.  Each rule: a finding
with --test-services on, none with it off, none for the correct behaviour.  Last, the harness
reader's own bounds, which the rsio rules take for no finding."""

from __future__ import annotations

import pytest

from conformance.cli import main
from conformance.trace import capture
from conformance.trace.check import check_file
from tests.trace.pcapfiles import conversation, write_pcap

CLIENT, SERVER = ("127.0.0.1", 40100), ("127.0.0.1", 7000)

CLIENT_HELLO = bytes.fromhex("01 00 00")  # type 1, version 0, no extensions
SERVER_HELLO = bytes.fromhex("02 00 00")
# subscribe (4): publisher "test/fixed/2/3" (14 bytes), subscriber 1, initialDemand 5
SUB_FIXED = bytes.fromhex("04 0e") + b"test/fixed/2/3" + bytes.fromhex("01 05")
SUBSCRIBED_FIXED = bytes.fromhex("07 01 03")  # subscribed (7): subscriber 1, elementSize 3
# onNextPacked (11): subscriber 1, count 2, elements 0 and 1 of test/fixed/2/3: bytes (k+i) mod 256
PACKED_0_1 = bytes.fromhex("0b 01 02" "000102" "010203")
ELEMENT_2 = bytes.fromhex("08 01" "020304")  # onNext (8) in fixed-size mode: 3 raw bytes, element 2
ELEMENT_1_WRONG = bytes.fromhex("0b 01 02" "000102" "010204")  # element 1's last byte 4, not 3
COMPLETE = bytes.fromhex("09 01")  # onComplete (9), subscriber 1
CANCEL = bytes.fromhex("06 01")  # cancel (6), subscriber 1
# subscribe: "test/large/5" (12 bytes), subscriber 1, initialDemand 1; its subscribed: elementSize 0
SUB_LARGE = bytes.fromhex("04 0c") + b"test/large/5" + bytes.fromhex("01 01")
SUBSCRIBED = bytes.fromhex("07 01 00")
WHOLE = bytes.fromhex("08 01 05" "0001020304")  # onNext: 5 bytes, byte i = i
PART = bytes.fromhex("0c 01 00 03" "000102")  # onNextPart (12): subscriber 1, element 0, 3 bytes
LAST_PART = bytes.fromhex("0d 01 00 02" "0304")  # onNextLastPart (13): the last 2 bytes of element 0
FIRST_AS_ONNEXT = bytes.fromhex("08 01 03" "000102")  # the parts as elements of their own
SECOND_AS_ONNEXT = bytes.fromhex("08 01 02" "0304")
# subscribe: "test/never" (10 bytes), subscriber 1, initialDemand 1
SUB_NEVER = bytes.fromhex("04 0a") + b"test/never" + bytes.fromhex("01 01")
ON_ERROR = bytes.fromhex("0a 01 06") + b"closed"  # onError (10): subscriber 1, "closed"
GOODBYE = bytes.fromhex("03 00")  # goodbye (3), reason ""


def _findings(tmp_path, moves, services: str):
    """The findings against the server of one connection (hello exchange, then ``moves``)."""
    segments = conversation(CLIENT, SERVER, [("client", CLIENT_HELLO), ("server", SERVER_HELLO), *moves])
    path = write_pcap(tmp_path / f"rsio-{services}.pcap", segments)
    result = check_file(path, {SERVER[1]: "rsio"}, None, {}, test_services=services)
    assert result.problems == []
    return [(f.requirement, f.level) for f in result.findings if f.sender == "server"]


def _judged(tmp_path, moves):
    """(findings with the services on, findings with them off)."""
    return _findings(tmp_path, moves, "on"), _findings(tmp_path, moves, "off")


def test_fixed_an_element_past_n(tmp_path):
    moves = [("client", SUB_FIXED), ("server", SUBSCRIBED_FIXED), ("server", PACKED_0_1), ("server", ELEMENT_2)]
    assert _judged(tmp_path, moves) == ([("rsio-fixed-size", "MUST")], [])
    correct = [("client", SUB_FIXED), ("server", SUBSCRIBED_FIXED), ("server", PACKED_0_1), ("server", COMPLETE)]
    assert _judged(tmp_path, correct) == ([], [])


def test_fixed_an_element_with_other_bytes(tmp_path):
    moves = [("client", SUB_FIXED), ("server", SUBSCRIBED_FIXED), ("server", ELEMENT_1_WRONG), ("server", COMPLETE)]
    assert _judged(tmp_path, moves) == ([("rsio-fixed-size", "MUST")], [])


def test_fixed_elements_in_a_reused_ids_stream_are_not_counted(tmp_path):
    """After cancel and a new subscribe on Id 1, elements of the old stream may still be in flight:
    the two streams' elements cannot be told apart, so neither is counted."""
    again = [("client", SUB_FIXED), ("server", SUBSCRIBED_FIXED), ("client", CANCEL), ("client", SUB_FIXED),
             ("server", PACKED_0_1), ("server", SUBSCRIBED_FIXED), ("server", PACKED_0_1)]
    assert _judged(tmp_path, again) == ([], [])


def test_large_an_element_cut_into_several(tmp_path):
    moves = [("client", SUB_LARGE), ("server", SUBSCRIBED), ("server", FIRST_AS_ONNEXT)]
    assert _judged(tmp_path, moves) == ([("rsio-split-joined", "MUST")], [])
    # the demand of 1 allows one element: the second is beyond it whatever the services
    assert _judged(tmp_path, [*moves, ("server", SECOND_AS_ONNEXT)]) == (
        [("rsio-split-joined", "MUST"), ("rsio-reactive-streams-demand", "MUST")],
        [("rsio-reactive-streams-demand", "MUST")])


def test_large_whole_or_split_in_parts_is_right(tmp_path):
    whole = [("client", SUB_LARGE), ("server", SUBSCRIBED), ("server", WHOLE), ("server", COMPLETE)]
    parts = [("client", SUB_LARGE), ("server", SUBSCRIBED), ("server", PART), ("server", LAST_PART),
             ("server", COMPLETE)]
    assert _judged(tmp_path, whole) == ([], [])
    assert _judged(tmp_path, parts) == ([], [])


def test_large_an_element_of_the_right_size_with_other_bytes(tmp_path):
    wrong = bytes.fromhex("08 01 05" "0001020305")
    assert _judged(tmp_path, [("client", SUB_LARGE), ("server", SUBSCRIBED), ("server", wrong)]) == (
        [("rsio-split-joined", "MUST")], [])


def test_never_completed_after_the_client_shut_its_side(tmp_path):
    segments = conversation(CLIENT, SERVER, [("client", CLIENT_HELLO), ("server", SERVER_HELLO),
                                             ("client", SUB_NEVER), ("server", SUBSCRIBED)], fin=False)

    def after_fin(*server_moves, before=()):
        """The client's FIN, then the server's messages and FIN (``before``: client messages first)."""
        seq = {"client": segments[0][2] + 1 + len(CLIENT_HELLO) + len(SUB_NEVER),
               "server": segments[1][2] + 1 + len(SERVER_HELLO) + len(SUBSCRIBED)}
        out = list(segments)
        for payload in before:
            out.append((CLIENT, SERVER, seq["client"], 0x18, payload))
            seq["client"] += len(payload)
        out.append((CLIENT, SERVER, seq["client"], 0x11, b""))
        for payload in server_moves:
            out.append((SERVER, CLIENT, seq["server"], 0x18, payload))
            seq["server"] += len(payload)
        out.append((SERVER, CLIENT, seq["server"], 0x11, b""))
        return out

    def judged(out):
        found = {}
        for mode in ("on", "off"):
            path = write_pcap(tmp_path / f"never-{mode}.pcap", out)
            found[mode] = [(f.requirement, f.level) for f in
                           check_file(path, {SERVER[1]: "rsio"}, None, {}, test_services=mode).findings]
        return found["on"], found["off"]

    assert judged(after_fin(COMPLETE)) == ([("rsio-transport-closed-release", "SHOULD")], [])
    # a release with onError, or the close alone, is what the services allow
    assert judged(after_fin(ON_ERROR)) == ([], [])
    assert judged(after_fin()) == ([], [])
    # the client cancelled first: a publisher may end a cancelled stream as it likes
    assert judged(after_fin(COMPLETE, before=[CANCEL])) == ([], [])


def test_never_completed_while_the_transport_is_open_is_not_judged(tmp_path):
    """The requirement the finding names is the close's: before the client's FIN there is none."""
    moves = [("client", SUB_NEVER), ("server", SUBSCRIBED), ("server", COMPLETE)]
    assert _judged(tmp_path, moves) == ([], [])


def test_a_goodbye_ends_the_judging(tmp_path):
    moves = [("client", SUB_FIXED), ("server", SUBSCRIBED_FIXED), ("client", GOODBYE), ("server", PACKED_0_1),
             ("server", ELEMENT_2), ("server", GOODBYE)]
    assert _judged(tmp_path, moves) == ([], [])


def _suite_capture(path, moves):
    """The same bytes as `run --pcap` writes them (the suite as the client)."""
    recorder = capture.Recorder()
    conn = capture._Conn(CLIENT, SERVER, 10.0, "client")
    conn.events += [(10.0 + i / 100, side, payload) for i, (side, payload) in enumerate(moves)]
    recorder.conns.append(conn)
    capture.write(recorder, path)
    return path


@pytest.mark.parametrize("mode,on_suite,on_plain", [("auto", 1, 0), ("on", 1, 1), ("off", 0, 0)])
def test_the_switch_decides_whether_the_services_rule_speaks(tmp_path, capsys, mode, on_suite, on_plain):
    moves = [("client", CLIENT_HELLO), ("server", SERVER_HELLO), ("client", SUB_FIXED),
             ("server", SUBSCRIBED_FIXED), ("server", PACKED_0_1), ("server", ELEMENT_2)]
    suite = _suite_capture(tmp_path / "run.pcapng", moves)
    plain = write_pcap(tmp_path / "tcpdump.pcap", conversation(CLIENT, SERVER, moves))
    for path, wanted in ((suite, on_suite), (plain, on_plain)):
        assert main(["check-trace", "--port", "7000=rsio", "--test-services", mode, str(path)]) == wanted
        out = capsys.readouterr().out
        assert out.count("rsio-fixed-size") == wanted, out


def test_the_readers_own_bounds_are_no_finding(tmp_path):
    """1025 split elements open at once (each onNextPart (12): subscriber 1, element e as a varint,
    one byte): the profile bounds neither that nor a joined element's size, so past the harness
    reader's bound of 1024 the server's side is only 'not checkable', and the client owes no goodbye."""
    def varint(n):
        return bytes([n]) if n < 128 else bytes([n & 0x7F | 0x80, n >> 7])

    sub = bytes.fromhex("04 01") + b"p" + bytes.fromhex("01 90 08")  # subscribe "p", Id 1, demand 1040
    parts = b"".join(bytes.fromhex("0c 01") + varint(e) + bytes.fromhex("01 00") for e in range(1025))
    segments = conversation(CLIENT, SERVER, [("client", CLIENT_HELLO), ("server", SERVER_HELLO), ("client", sub),
                                             ("server", SUBSCRIBED), ("server", parts)])
    result = check_file(write_pcap(tmp_path / "parts.pcap", segments), {SERVER[1]: "rsio"}, None, {})
    assert [str(f) for f in result.findings] == []
    assert [n.sender for n in result.notes] == ["server"]
    assert "too-many-partial-elements" in result.notes[0].reason


# -- elements owed without delay: a stall the catalogue names ------------------------------------

# subscribe: "test/range/5" (12 bytes), subscriber 1, initialDemand 1; onNext (8) element 0 as a u64 BE
SUB_RANGE = bytes.fromhex("04 0c") + b"test/range/5" + bytes.fromhex("01 01")
RANGE_0 = bytes.fromhex("08 01 08" "0000000000000000")
# request (5), subscriber 1: 2^62 (LEB128: eight 0x80 then 0x40) twice, then 2^63-1 (eight 0xff, 0x7f):
# with the one element taken, 2^62 + 2^62 + 2^63-1 passes 2^63-1 (unbounded, rule 3.17)
REQUESTS_PAST_MAX = (bytes.fromhex("05 01" "8080808080808080" "40") * 2
                     + bytes.fromhex("05 01" "ffffffffffffffff" "7f"))
REQUEST_3 = bytes.fromhex("05 01 03")


def _stalled(tmp_path, moves, quiet: float | None, services: str = "on", params=None):
    """The findings against the server: the hellos, ``moves`` a millisecond apart, then (``quiet`` s
    after the last move) the client's FIN and the server's; None: the capture ends after the moves."""
    all_moves = [("client", CLIENT_HELLO), ("server", SERVER_HELLO), *moves]
    segments = conversation(CLIENT, SERVER, all_moves, fin=quiet is not None)
    times = [1000.0, 1000.0005, *(1000.001 + i / 1000 for i in range(len(all_moves)))]
    if quiet is not None:
        times += [times[-1] + quiet, times[-1] + quiet + 0.001]
    path = write_pcap(tmp_path / f"rsio-stall-{services}.pcap", segments, times=times)
    result = check_file(path, {SERVER[1]: "rsio"}, None, params or {}, test_services=services)
    assert result.problems == []
    return [(f.requirement, f.level) for f in result.findings if f.sender == "server"]


def test_a_split_element_begun_and_left_unfinished(tmp_path):
    # the demand of 1 let element 0 begin; its last part never comes, the client closes a wait
    # (reply_ms, 5 s) after the subscribed
    moves = [("client", SUB_LARGE), ("server", SUBSCRIBED), ("server", PART)]
    assert _stalled(tmp_path, moves, 5.0) == [("rsio-split-joined", "MUST")]
    assert _stalled(tmp_path, moves, 5.0, services="off") == []
    assert _stalled(tmp_path, moves, 4.99) == []  # the client closed before the wait was over
    assert _stalled(tmp_path, moves, None) == []  # the capture just ends: 'never' is not 'later'
    # the element finished, the stream completed
    assert _stalled(tmp_path, [*moves, ("server", LAST_PART), ("server", COMPLETE)], 9) == []
    # cancelled: nothing more is owed
    assert _stalled(tmp_path, [*moves, ("client", CANCEL)], 9) == []


def test_a_stream_stopped_after_requests_past_the_maximum(tmp_path):
    moves = [("client", SUB_RANGE), ("server", SUBSCRIBED), ("server", RANGE_0), ("client", REQUESTS_PAST_MAX)]
    assert _stalled(tmp_path, moves, 5.001) == [("rsio-reactive-streams-demand", "MUST")]
    assert _stalled(tmp_path, moves, 5.001, services="off") == []
    assert _stalled(tmp_path, moves, 4.99) == []
    assert _stalled(tmp_path, moves, None) == []
    # the four elements owed, then onComplete
    rest = [("server", bytes.fromhex("08 01 08") + k.to_bytes(8, "big")) for k in range(1, 5)]
    assert _stalled(tmp_path, [*moves, *rest, ("server", COMPLETE)], 9) == []
    # the server ended the stream with onError: nothing owed (whether that is right is not a stall)
    assert _stalled(tmp_path, [*moves, ("server", ON_ERROR)], 9) == []


def test_a_stall_the_catalogue_does_not_name_is_not_judged(tmp_path):
    # demand of 3 more, the server silent: a publisher may signal fewer onNext than requested as far as
    # Reactive Streams goes, and only the test service's promise is broken, which no requirement names
    moves = [("client", SUB_RANGE), ("server", SUBSCRIBED), ("server", RANGE_0), ("client", REQUEST_3)]
    assert _stalled(tmp_path, moves, 9) == []
    # no demand left: nothing is owed
    assert _stalled(tmp_path, [("client", SUB_RANGE), ("server", SUBSCRIBED), ("server", RANGE_0)], 9) == []


def test_the_wait_is_the_runs(tmp_path):
    moves = [("client", SUB_LARGE), ("server", SUBSCRIBED), ("server", PART)]
    # a run with reply_ms 2000 (--param): 2 s of silence is enough
    assert _stalled(tmp_path, moves, 2.0, params={"reply_ms": 2000}) == [("rsio-split-joined", "MUST")]
    # a run with --time-scale 3 records expect_ms 15000 but no reply_ms: reply_ms's default is
    # stretched as much (15 s), never shortened
    assert _stalled(tmp_path, moves, 9, params={"expect_ms": 15000}) == []
    assert _stalled(tmp_path, moves, 15.0, params={"expect_ms": 15000}) == [("rsio-split-joined", "MUST")]
    assert _stalled(tmp_path, moves, 5.0, params={"expect_ms": 1000}) == [("rsio-split-joined", "MUST")]
    assert _stalled(tmp_path, moves, 4.99, params={"expect_ms": 1000}) == []


# -- the service says goodbye only where the profile owes one ----------------------------------

def _hello_findings(tmp_path, count: int, answer: bytes, services: str = "on"):
    """A clientHello listing extensions 1..count (the count a varint: 0x82 0x01 for 130), the
    serverHello, a subscribe to test/never, then ``answer`` from the server."""
    varint = bytes([count]) if count < 128 else bytes([0x80 | count & 0x7F, count >> 7])
    hello = bytes([0x01, 0x00]) + varint + b"".join(bytes([i]) if i < 128 else bytes([0x80 | i & 0x7F, i >> 7])
                                                      for i in range(1, count + 1))
    segments = conversation(CLIENT, SERVER, [("client", hello), ("server", SERVER_HELLO), ("client", SUB_NEVER),
                                             ("server", answer)])
    path = write_pcap(tmp_path / f"hello-{count}-{services}.pcap", segments)
    result = check_file(path, {SERVER[1]: "rsio"}, None, {}, test_services=services)
    assert result.problems == []
    return [f.requirement for f in result.findings if f.sender == "server"]


def test_a_goodbye_right_after_a_hello_of_130_extensions(tmp_path):
    assert _hello_findings(tmp_path, 130, GOODBYE) == ["rsio-message-framing"]
    assert _hello_findings(tmp_path, 130, GOODBYE, services="off") == []
    # the stream answered: no goodbye
    assert _hello_findings(tmp_path, 130, SUBSCRIBED) == []
    # a one-byte count: not this rule
    assert _hello_findings(tmp_path, 3, GOODBYE) == []


def test_a_goodbye_after_the_clients_end_is_not_judged(tmp_path):
    varint_130 = bytes([0x82, 0x01])
    hello = bytes([0x01, 0x00]) + varint_130 + b"".join(bytes([i]) if i < 128 else bytes([0x80 | i & 0x7F, i >> 7])
                                                         for i in range(1, 131))
    segments = conversation(CLIENT, SERVER, [("client", hello), ("server", SERVER_HELLO)], fin=False)
    import dpkt
    ends = len(hello), len(SERVER_HELLO)
    segments += [(CLIENT, SERVER, 100 + 1 + ends[0], dpkt.tcp.TH_ACK | dpkt.tcp.TH_FIN, b""),
                 (SERVER, CLIENT, 5100 + 1 + ends[1], dpkt.tcp.TH_ACK | dpkt.tcp.TH_PUSH, GOODBYE),
                 (SERVER, CLIENT, 5100 + 1 + ends[1] + len(GOODBYE), dpkt.tcp.TH_ACK | dpkt.tcp.TH_FIN, b"")]
    path = write_pcap(tmp_path / "eof.pcap", segments)
    result = check_file(path, {SERVER[1]: "rsio"}, None, {}, test_services="on")
    assert result.problems == []
    assert "rsio-message-framing" not in [f.requirement for f in result.findings if f.sender == "server"]
