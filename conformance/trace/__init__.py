"""Passive conformance: check captured traffic (pcap, pcapng) with the protocol cores.

    capture (pcap/pcapng) -> packets (packets.py) -> TCP streams per connection and direction
    (tcp.py) -> WebSocket messages where the protocol runs over WebSocket (websocket.py) ->
    an observer per connection (observer.py, rules per protocol in rules/) -> findings,
    written as result records labelled passive (findings.py).  mc0's CURVE boxes are opened
    with the session keys of a key log (keylog.py, curve.py), as `run --pcap` writes them.
"""
