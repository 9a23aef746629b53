"""mc0 reference implementation (the mc0 0.3 draft as pinned by docs/profiles/mc0.md), over ZMTP 3.

``codec`` turns mc0 messages into ZMTP message frames and back, ``broker``
is the sans-IO broker state machine (subscriptions, ID acknowledgements,
ERROR on bad input, NOOP heartbeats and TTL absence), ``testkeys`` holds the
fixed CURVE test key pairs (``testkeys.json``), and ``server``/``client`` are
the thin asyncio carriers on top of :mod:`reference_impl.zmtp`.
"""
