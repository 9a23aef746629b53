"""The rsio and Micromessage2 rules on hand-made frame sequences: the races a conformant pair
may show (a signal crossing a subscribe, elements in flight past a cancel, an ack crossing a
message) give no finding; the breaks next to them do.  Expected requirements come from the
draft's and the spec's sentences (docs/requirements), not from the rules' output."""

from __future__ import annotations

from conformance.protocols.base import Frame
from conformance.trace.rules import rules_for


def _feed(rules, steps):
    found = []
    for t, (side, fields) in enumerate(steps):
        found += [v[:2] for v in rules.on_frame(side, Frame(fields, ""), float(t))]
    return found


def _rsio(*steps):
    return _feed(rules_for("rsio", "tcp", {}), [
        ("client", {"type": "clientHello", "version": 0, "extensions": []}),
        ("server", {"type": "serverHello", "version": 0, "extensions": []}), *steps])


def _c(kind, **f):
    return ("client", {"type": kind, **f})


def _s(kind, **f):
    return ("server", {"type": kind, **f})


def test_rsio_a_subscribe_crossing_the_old_streams_oncomplete_is_no_reuse():
    assert _rsio(_c("subscribe", publisher="p", subscriber=1, initialDemand=1), _s("subscribed", subscriber=1),
                 _c("subscribe", publisher="p", subscriber=1, initialDemand=1), _s("onComplete", subscriber=1),
                 _s("subscribed", subscriber=1)) == []


def test_rsio_a_new_subscribed_for_an_id_in_use_breaks_the_reuse_guarantee():
    found = _rsio(_c("subscribe", publisher="p", subscriber=1, initialDemand=0), _s("subscribed", subscriber=1),
                  _c("subscribe", publisher="q", subscriber=1, initialDemand=3), _s("subscribed", subscriber=1))
    assert found == [("server", "rsio-id-reuse-guarantee")]


def test_rsio_elements_in_flight_past_a_cancel_are_allowed_up_to_the_demand_granted():
    steps = [_c("subscribe", publisher="p", subscriber=1, initialDemand=2), _s("subscribed", subscriber=1),
             _c("cancel", subscriber=1), _s("onNext", subscriber=1), _s("onNext", subscriber=1)]
    assert _rsio(*steps) == []
    assert _rsio(*steps, _s("onNext", subscriber=1)) == [("server", "rsio-cancel")]


def test_rsio_oncomplete_with_a_split_element_unfinished():
    steps = [_c("subscribe", publisher="p", subscriber=1, initialDemand=1), _s("subscribed", subscriber=1),
             _s("onNextPart", subscriber=1, element=0)]
    assert _rsio(*steps, _s("onComplete", subscriber=1)) == [("server", "rsio-split-joined")]
    assert _rsio(*steps, _s("onNextLastPart", subscriber=1, element=0), _s("onComplete", subscriber=1)) == []
    assert _rsio(*steps, _c("cancel", subscriber=1), _s("onComplete", subscriber=1)) == []


def test_rsio_elements_may_cross_the_peers_goodbye_but_never_follow_the_senders_own():
    steps = [_c("subscribe", publisher="p", subscriber=1, initialDemand=5), _s("subscribed", subscriber=1),
             _c("goodbye", reason="done"), _s("onNext", subscriber=1)]  # in flight when the client's goodbye came
    assert _rsio(*steps, _s("goodbye", reason="")) == []
    assert _rsio(*steps, _s("goodbye", reason=""), _s("onNext", subscriber=1)) == [
        ("server", "rsio-goodbye-closes-streams")]


def _hs(required="", optional="", major=1, minor=0):
    return {"frame": "handshake", "major": major, "minor": minor, "required": required, "optional": optional}


def _mm2(client_required, server_required, final_required, *steps):
    return _feed(rules_for("micromessage2", "tcp", {}), [
        ("client", _hs(client_required)), ("server", _hs(server_required)), ("client", _hs(final_required)), *steps])


def _message(side, seq):
    return (side, {"frame": "message", "seq": seq, "max_fragment": 4})


def _ack(side, seq):
    return (side, {"frame": "extension", "id": 1, "ack": seq})


def test_mm2_the_final_message_keeps_the_servers_required_extension():
    assert _mm2("", "json", "json") == []
    assert _mm2("", "json", "") == [("client", "mm2-client-final")]


def test_mm2_a_sender_waits_for_the_ack_the_window_needs():
    assert _mm2("ack", "", "ack", _message("server", 1), _ack("client", 1), _message("server", 2)) == []
    assert _mm2("ack", "", "ack", _message("server", 1), _message("server", 2)) == [("server", "mm2-server-window")]


def test_mm2_an_extension_id_the_final_message_did_not_give():
    assert _mm2("batch-ack:max-count=3", "", "batch-ack:max-count=3", _ack("client", 1)) == []
    found = _mm2("batch-ack:max-count=3", "", "batch-ack:max-count=3", ("client", {"frame": "extension", "id": 2}))
    assert found == [("client", "mm2-extension-index")]


def test_mm2_a_client_answered_by_a_list_that_is_a_syntax_error_refuses_it():
    # the spec's example form `name:key:value`: the client must send ERROR and disconnect, not its final
    assert _mm2("", "batch-ack:max-count:100", "batch-ack:max-count=100") == [("client", "mm2-field-restrictions")]
    assert _mm2("json", "JSON", "json") == [("client", "mm2-field-restrictions")]
    bad = [("client", _hs()), ("server", _hs("", "json;;ack"))]
    assert _feed(rules_for("micromessage2", "tcp", {}), [*bad, ("client", _hs("", "json"))]) == [
        ("client", "mm2-field-restrictions")]
    # the ERROR it owes, or a close at once (a peer may close any time): nothing to judge
    assert _feed(rules_for("micromessage2", "tcp", {}), [*bad, ("client", {"frame": "error"})]) == []
    rules = rules_for("micromessage2", "tcp", {})
    assert _feed(rules, bad) == [] and [v[:2] for v in rules.on_end("client", 3.0, "FIN", 0)] == []


def test_mm2_a_server_answered_by_a_list_that_is_a_syntax_error_refuses_it():
    # the client hello's lists, required or optional: the server must send ERROR, not its hello
    for required, optional in (("JSON", ""), ("", "json;JSON"), ("", "batch-ack:max-count:100"), ("", "json;;ack")):
        hello = ("client", _hs(required, optional))
        assert _feed(rules_for("micromessage2", "tcp", {}), [hello, ("server", _hs())]) == [
            ("server", "mm2-field-restrictions")]
        assert _feed(rules_for("micromessage2", "tcp", {}), [hello, ("server", {"frame": "error"})]) == []
    assert _feed(rules_for("micromessage2", "tcp", {}), [("client", _hs("", "json;")), ("server", _hs())]) == []


def test_mm2_the_final_optional_list_activates_what_both_listed_in_the_clients_order():
    def final(client_optional, server_optional, final_optional):
        return _feed(rules_for("micromessage2", "tcp", {}), [
            ("client", _hs("", client_optional)), ("server", _hs("", server_optional)),
            ("client", _hs("", final_optional))])
    assert final("json", "json;ack", "json;ack") == []
    assert final("json", "json;ack", "json") == []
    assert final("json;dotnet", "dotnet;json", "json;dotnet") == []  # the client's order wins
    # the server's suggestion before the client's offer
    assert final("json", "json;ack", "ack;json") == [("client", "mm2-client-final")]
    # an offer the server's hello did not list: the server does not support it
    assert final("json", "", "json") == [("client", "mm2-client-final")]


def test_mm2_lists_the_grammar_allows_leave_the_client_free_to_go_on():
    # one trailing ';', an unknown property, a percent-encoded value: valid lists
    assert _mm2("", "json;", "json") == []
    assert _mm2("", "batch-ack:max-count=5,x-note=Hello%20world", "batch-ack:max-count=5") == []
    # the codec's other errors (a duplicate, a raw character in a value) are not the profile's syntax error
    assert _mm2("", "json;json", "json") == []
    # a capture without the client's hello judges no answer to it (the server hello is read as given)
    assert _feed(rules_for("micromessage2", "tcp", {}), [("server", _hs("batch-ack:max-count:100")),
                                                         ("client", _hs())]) == []
