"""Micromessage2 reference implementation: codec, sans-IO connection, test service, asyncio transports."""
