"""STMP reference implementation (the STMP article as pinned by docs/profiles/stmp.md).

``codec`` turns messages into bytes/text and back, ``connection`` is the sans-IO
state machine of both roles, ``service`` the conformance test service, and
``server``/``client`` the thin asyncio carriers (TCP and WebSocket).
"""
