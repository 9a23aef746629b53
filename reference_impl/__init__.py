"""Reference implementations, one sans-IO package per protocol.

Every protocol package has the same shape (see reference_impl/README.md)."""
