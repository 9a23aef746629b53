"""STMP reference implementation (specs/stmp.txt as pinned by PROFILES.md "stmp").

``codec`` turns messages into bytes/text and back, ``connection`` is the sans-IO
state machine of both roles, ``service`` the conformance test service, and
``server``/``client`` the thin asyncio carriers (TCP and WebSocket).
"""
