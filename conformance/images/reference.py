"""The reference implementation's image for one protocol, FROM the base image."""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import docker

from conformance import __version__
from conformance.images.base import find_image
from conformance.images.digest import combine, sha256_file, tag_of
from conformance.images.imagebuild import build_image, fill_wheel_context, remove_older
from conformance.images.layout import (IMAGES_DIR, LABEL_HASH, LABEL_KIND, LABEL_PARAMS_PREFIX, LABEL_PROTOCOL,
                                       LABEL_PROTOCOLS, LABEL_ROLES, LABEL_VERSION, reference_repository)
from conformance.images.packages import PackageSet
from conformance.images.results import BuildOutcome
from conformance.registry import PROTOCOLS

DOCKERFILE = IMAGES_DIR / "reference" / "Dockerfile"
ENTRYPOINT = IMAGES_DIR / "entrypoint.sh"
# The timers of `conformance serve` with its defaults, which the entrypoint uses: the suite is told
# them (conformance.params.<protocol>) so its heartbeat and redelivery waits match the server's.
# They live in the one registry of protocols (conformance/registry.py).
REFERENCE_TIMERS = {p.name: dict(p.reference_timers) for p in PROTOCOLS if p.reference_timers}


def reference_hash(protocol: str, base_hash: str, packages: PackageSet, wheel_hash: str) -> str:
    return combine({
        "protocol": protocol,
        "base": base_hash,
        "dockerfile": sha256_file(DOCKERFILE),
        "entrypoint": sha256_file(ENTRYPOINT),
        "packages": packages.digest(),
        "project-wheel": wheel_hash,
        "labels": ",".join(f"{k}={v}" for k, v in sorted(_labels(protocol, "").items())),
    })


def _labels(protocol: str, content_hash: str) -> dict[str, str]:
    labels = {LABEL_HASH: content_hash, LABEL_KIND: "reference", LABEL_PROTOCOL: protocol,
              LABEL_PROTOCOLS: protocol, LABEL_ROLES: "server,client",
              LABEL_VERSION: __version__}  # the reference implementations are released with the suite
    if protocol in REFERENCE_TIMERS:
        labels[LABEL_PARAMS_PREFIX + protocol] = ",".join(f"{k}={v}" for k, v in REFERENCE_TIMERS[protocol].items())
    return labels


def reference_image_name(protocol: str, content_hash: str) -> str:
    return f"{reference_repository(protocol)}:{tag_of(content_hash)}"


def ensure_reference_image(client: docker.DockerClient, protocol: str, *, base_image: str, base_hash: str,
                           packages: PackageSet, wheel: Path, wheel_hash: str, force: bool) -> BuildOutcome:
    started = time.monotonic()
    content_hash = reference_hash(protocol, base_hash, packages, wheel_hash)
    name = reference_image_name(protocol, content_hash)
    if force or not find_image(client, name, content_hash):
        with tempfile.TemporaryDirectory(prefix="conformance-context-") as context:
            _fill_context(Path(context), packages, wheel)
            build_image(client, Path(context), name, force, {
                "BASE_IMAGE": base_image, "IMAGE_PROTOCOL": protocol,
            }, _labels(protocol, content_hash))
        action = "built"
    else:
        action = "reused"
    # :latest follows the newest build so people can name the image without its hash.
    client.images.get(name).tag(reference_repository(protocol), "latest")
    remove_older(client, "reference", reference_repository(protocol), content_hash)
    return BuildOutcome(name, action, time.monotonic() - started)


def _fill_context(context: Path, packages: PackageSet, wheel: Path) -> None:
    fill_wheel_context(context, DOCKERFILE, packages, wheel)
    shutil.copy2(ENTRYPOINT, context / "entrypoint.sh")
