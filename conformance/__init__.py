"""Protocol conformance suite: harness, pytest plugin and CLI."""

__version__ = "0.1.0"
