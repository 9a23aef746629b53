"""YAML scenarios: loading and validation (loader), execution (runner)."""
