"""ZMTP 3.0/3.1 (ZeroMQ RFC 23, RFC 37) with the NULL, PLAIN (RFC 24) and CURVE (RFC 25/26) mechanisms.

Shared by the mc0 and 11/MTL packages.  Sans-IO: ``greeting``, ``codec``
(frames), ``commands`` (command bodies, metadata), the mechanisms (``null``,
``plain``, ``curve``) and ``connection`` never touch sockets or clocks;
``sockets`` runs them over asyncio TCP as minimal DEALER, REQ and ROUTER
sockets.  ``z85`` converts the Z85 key text libzmq users exchange.
"""
