"""Where the image recipes, the project checkout and the host-side cache live."""

from __future__ import annotations

import os
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]
IMAGES_DIR = CHECKOUT / "images"
LABEL_HASH = "org.protocol-conformance.content-hash"
LABEL_KIND = "org.protocol-conformance.kind"
LABEL_PROTOCOL = "org.protocol-conformance.protocol"
# Public labels any implementation image may carry (docs/image-contract.md): what `conformance matrix` runs.
LABEL_PROTOCOLS = "conformance.protocols"  # comma-separated, e.g. "mc0" or "stmp,rsio"
LABEL_ROLES = "conformance.roles"  # "server", "client" or "server,client" (the default)
# conformance.params.<protocol> = "heartbeat_interval_ms=5000,heartbeat_timeout_ms=15000": the image's timers.
LABEL_PARAMS_PREFIX = "conformance.params."
# The OCI annotation for the packaged software's version: the implementation version in the records.
LABEL_VERSION = "org.opencontainers.image.version"
# Set on every container started while this variable is in the environment (conformance matrix uses it
# to remove, by their label, the containers of a run it had to kill).
RUN_LABEL = "org.protocol-conformance.run"
RUN_LABEL_ENV = "CONFORMANCE_RUN_LABEL"
BASE_REPOSITORY = "conformance-base"
REFERENCE_PREFIX = "conformance-ref-"
THIRDPARTY_PREFIX = "conformance-thirdparty-"


def require_checkout() -> Path:
    """The images are built from a source checkout, never from an installed wheel."""
    if not (CHECKOUT / "pyproject.toml").is_file() or not IMAGES_DIR.is_dir():
        raise FileNotFoundError(
            f"{CHECKOUT} is not a source checkout with images/: build the images from a clone of the project"
        )
    return CHECKOUT


def cache_dir() -> Path:
    """Host-side cache of downloaded packages; survives between runs so warm builds are offline."""
    override = os.environ.get("CONFORMANCE_IMAGE_CACHE")
    if override:
        return Path(override)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "protocol-conformance" / "images"


def reference_repository(protocol: str) -> str:
    return f"{REFERENCE_PREFIX}{protocol}"
SUITE_REPOSITORY = "conformance-suite"
