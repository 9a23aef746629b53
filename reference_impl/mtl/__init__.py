"""11/MTL (Message Transport Layer) over ZMTP 3.x, as docs/profiles/mtl.md reads it.

Control flow: client REQ -> server ROUTER, JSON commands (``control``);
data flow: client DEALER -> server ROUTER, binary commands (``codec``).
SASL PLAIN and SCRAM-SHA-256 (``sasl``); the per-connection state machines
(``connection``); the broker with the "test" and "confirm-test" profiles
(``service``); thin asyncio transports (``server``, ``client``).  Nothing
here imports pyzmq: the ZMTP layer is :mod:`reference_impl.zmtp`.
"""
