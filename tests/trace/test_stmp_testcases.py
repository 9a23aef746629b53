"""STMP's client test cases judged from a suite capture (conformance/trace/rules/stmp.py, test_client):
docs/profiles/stmp.md, "Test cases (client role)": a case closes only once it has what it waits
for, and "A Response to an unknown ID is dropped. The receiver neither fails nor closes."  The
captures are written the way `run --pcap` writes them with the target as the client.  Bytes by
hand from the profile's binary header: KIND/ENCODING byte (0x68 a Raw Request, 0xe8 a Raw
Response), ID u16, then a Request's ACTION u32 or a Response's STATUS u8, then the payload
length u32 and the payload."""

from __future__ import annotations

from conformance.trace import capture
from conformance.trace.check import check_file
from tests.trace.pcapfiles import CLIENT, NEGOTIATE, NEGOTIATED, SERVER

ECHO = bytes.fromhex("68" "0009" "00000100" "00000009") + b"stmp echo"  # Request ID 9, ACTION 0x100
ANSWER = bytes.fromhex("e8" "0009" "00" "00000009") + b"stmp echo"  # Response ID 9, Ok
STRAY = bytes.fromhex("e8" "000a" "00" "00000001") + b"x"  # Response ID 10, which the client never used


def _client_findings(tmp_path, moves, closes=("client", "server"), suite: str = "server", gaps=None, params=None):
    """Findings against the client: the negotiation, ``moves`` and the FINs of ``closes``, 10 ms apart
    but for ``gaps`` (index among moves and closes -> seconds before it)."""
    conn = capture._Conn(CLIENT, SERVER, 10.0, suite)
    conn.events += [(10.01, "client", NEGOTIATE), (10.02, "server", NEGOTIATED)]
    t = 10.02
    for i, (side, data) in enumerate([*moves, *((side, "FIN") for side in closes)]):
        t += (gaps or {}).get(i, 0.01)
        conn.events.append((t, side, data))
    recorder = capture.Recorder()
    recorder.conns.append(conn)
    path = tmp_path / "run.pcapng"
    capture.write(recorder, path)
    result = check_file(path, {SERVER[1]: "stmp"}, None, params or {})
    assert result.problems == []
    return [f.requirement for f in result.findings if f.sender == "client"]


def test_a_test_client_closing_on_a_stray_response_with_its_request_unanswered(tmp_path):
    assert _client_findings(tmp_path, [("client", ECHO), ("server", STRAY)]) == ["stmp-response-fields"]


def test_what_is_not_judged(tmp_path):
    # the answer came before the close; no stray (the request-timeout case closes with its request unanswered,
    # once its local timeout fired: 2 s here, the shorter of the adapter's and the reference's)
    assert _client_findings(tmp_path, [("client", ECHO), ("server", STRAY), ("server", ANSWER)]) == []
    assert _client_findings(tmp_path, [("client", ECHO)], gaps={1: 2.0}) == []
    # the server closed first; the suite was the client (its own cases close as they like)
    assert _client_findings(tmp_path, [("client", ECHO), ("server", STRAY)], closes=("server", "client")) == []
    assert _client_findings(tmp_path, [("client", ECHO), ("server", STRAY)], suite="client") == []


def test_a_test_client_closing_before_its_request_timeout(tmp_path):
    # the request-timeout case: its Request unanswered, closed 10 ms later (rules/stmp_testcases.py)
    assert _client_findings(tmp_path, [("client", ECHO)]) == ["stmp-request-timeout"]
    # ... or still open 2 s + 3 s after it when the suite closed
    assert _client_findings(tmp_path, [("client", ECHO)], closes=("server", "client"), gaps={1: 5.1},
                            params={"request_timeout_ms": 2000}) == ["stmp-request-timeout"]


PING = bytes([0x00])  # KIND ping, ENCODING 0: the whole message
ONE_S = {"heartbeat_interval_ms": 1000}  # the heartbeat case's first Ping owed within 2 x 1 s + 3 s


def test_a_test_client_silent_after_the_negotiation_past_the_first_ping_window(tmp_path):
    # the suite gave up on the Ping 5 s after its Ok and closed
    assert _client_findings(tmp_path, [], closes=("server", "client"), gaps={0: 5.01},
                            params=ONE_S) == ["stmp-heartbeat-send"]
    assert _client_findings(tmp_path, [], closes=("server", "client"), gaps={0: 4.9}, params=ONE_S) == []
    # 2 x 5 s + 3 s by default; --time-scale 2 (the recorded expect_ms doubled) doubles the window
    assert _client_findings(tmp_path, [], closes=("server", "client"), gaps={0: 12.9}) == []
    assert _client_findings(tmp_path, [], closes=("server", "client"), gaps={0: 13.01}) == ["stmp-heartbeat-send"]
    assert _client_findings(tmp_path, [], closes=("server", "client"), gaps={0: 13.01},
                            params={"expect_ms": 10000}) == []


def test_a_test_client_that_moves_is_not_silent(tmp_path):
    assert _client_findings(tmp_path, [("client", PING)], closes=("server", "client"), gaps={0: 2.0, 1: 9.0},
                            params=ONE_S) == []
    assert _client_findings(tmp_path, [("client", ECHO), ("server", ANSWER)], closes=("server", "client"),
                            gaps={2: 9.0}, params=ONE_S) == []
    # the suite's own client is not a test client
    assert _client_findings(tmp_path, [], closes=("server", "client"), gaps={0: 9.0}, params=ONE_S,
                            suite="client") == []
