"""The reference implementation's image for one protocol, FROM the base image."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

import docker
from docker.errors import APIError, BuildError

from conformance.images.base import find_image
from conformance.images.digest import combine, sha256_file, tag_of
from conformance.images.layout import (IMAGES_DIR, LABEL_HASH, LABEL_KIND, LABEL_PROTOCOL,
                                       reference_repository)
from conformance.images.packages import PackageSet
from conformance.images.results import BuildOutcome, ImageBuildError, tail

DOCKERFILE = IMAGES_DIR / "reference" / "Dockerfile"
ENTRYPOINT = IMAGES_DIR / "entrypoint.sh"


def reference_hash(protocol: str, base_hash: str, packages: PackageSet, wheel_hash: str) -> str:
    return combine({
        "protocol": protocol,
        "base": base_hash,
        "dockerfile": sha256_file(DOCKERFILE),
        "entrypoint": sha256_file(ENTRYPOINT),
        "packages": packages.digest(),
        "project-wheel": wheel_hash,
    })


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
            _build(client, Path(context), name, force, {
                "BASE_IMAGE": base_image, "IMAGE_PROTOCOL": protocol,
            }, {LABEL_HASH: content_hash, LABEL_KIND: "reference", LABEL_PROTOCOL: protocol})
        action = "built"
    else:
        action = "reused"
    # :latest follows the newest build so people can name the image without its hash.
    client.images.get(name).tag(reference_repository(protocol), "latest")
    _remove_older(client, protocol, content_hash)
    return BuildOutcome(name, action, time.monotonic() - started)


def _remove_older(client: docker.DockerClient, protocol: str, content_hash: str) -> None:
    """Images of earlier project states are never used again; each one is 250 MB."""
    labels = [f"{LABEL_KIND}=reference", f"{LABEL_PROTOCOL}={protocol}"]
    for image in client.images.list(filters={"label": labels}):
        if image.labels.get(LABEL_HASH) == content_hash:
            continue
        for tag in image.tags:
            try:
                client.images.remove(tag)
            except APIError:  # still used by a container: leave it
                pass


def _fill_context(context: Path, packages: PackageSet, wheel: Path) -> None:
    shutil.copy2(DOCKERFILE, context / "Dockerfile")
    shutil.copy2(ENTRYPOINT, context / "entrypoint.sh")
    (context / "packages").mkdir()
    for name in packages.wheels:
        _link_or_copy(packages.directory / name, context / "packages" / name)
    (context / "project").mkdir()
    shutil.copy2(wheel, context / "project" / wheel.name)


def _link_or_copy(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:  # the cache may be on another filesystem than the temp dir
        shutil.copy2(source, target)


def _build(client: docker.DockerClient, context: Path, name: str, force: bool,
           buildargs: dict[str, str], labels: dict[str, str]) -> None:
    try:
        # network_mode none: the Dockerfile installs from the context only, and the
        # engine here has no bridge network to give a build step anyway.
        client.images.build(path=str(context), tag=name, buildargs=buildargs, labels=labels, rm=True,
                            forcerm=True, nocache=force, network_mode="none", pull=False)
    except BuildError as exc:
        log = "".join(str(chunk.get("stream", chunk.get("error", ""))) for chunk in exc.build_log)
        raise ImageBuildError(f"docker build of {name} failed: {exc.msg}\n{tail(log)}") from exc
    except APIError as exc:
        raise ImageBuildError(f"docker build of {name} failed: {exc}") from exc
