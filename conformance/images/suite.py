"""The suite itself as an image: conformance-suite:<hash> (and :latest), entrypoint `conformance`.

Same inputs as a reference image (base image, package set, project wheel) and
the same cache rule: a build whose inputs hash as before is skipped.  It
carries no implementation labels (conformance.protocols), so `conformance
matrix` never mistakes the suite for an implementation.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import docker

from conformance.images.base import find_image
from conformance.images.digest import combine, sha256_file, tag_of
from conformance.images.imagebuild import build_image, fill_wheel_context, remove_older
from conformance.images.layout import IMAGES_DIR, LABEL_HASH, LABEL_KIND, SUITE_REPOSITORY
from conformance.images.packages import PackageSet
from conformance.images.results import BuildOutcome

DOCKERFILE = IMAGES_DIR / "suite" / "Dockerfile"
KIND = "suite"


def suite_hash(base_hash: str, packages: PackageSet, wheel_hash: str) -> str:
    return combine({"kind": KIND, "base": base_hash, "dockerfile": sha256_file(DOCKERFILE),
                    "packages": packages.digest(), "project-wheel": wheel_hash})


def ensure_suite_image(client: docker.DockerClient, *, base_image: str, base_hash: str, packages: PackageSet,
                       wheel: Path, wheel_hash: str, force: bool) -> BuildOutcome:
    started = time.monotonic()
    content_hash = suite_hash(base_hash, packages, wheel_hash)
    name = f"{SUITE_REPOSITORY}:{tag_of(content_hash)}"
    if force or not find_image(client, name, content_hash):
        with tempfile.TemporaryDirectory(prefix="conformance-context-") as context:
            fill_wheel_context(Path(context), DOCKERFILE, packages, wheel)
            build_image(client, Path(context), name, force, {"BASE_IMAGE": base_image},
                        {LABEL_HASH: content_hash, LABEL_KIND: KIND})
        action = "built"
    else:
        action = "reused"
    # `docker run conformance-suite ...` names :latest, which follows the newest build.
    client.images.get(name).tag(SUITE_REPOSITORY, "latest")
    remove_older(client, KIND, SUITE_REPOSITORY, content_hash)
    return BuildOutcome(name, action, time.monotonic() - started)
