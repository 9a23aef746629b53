"""Byte-level vectors: loading, schema validation and checking against a codec.

Each protocol has an adapter module ``conformance.vectors.<protocol>`` with

    decode(context: dict, wire: bytes) -> dict   # raises CodecError
    encode(context: dict, message: dict) -> bytes  # raises CodecError

mapping the plain-JSON ``message`` objects of the vector files to the
reference codec.
"""
