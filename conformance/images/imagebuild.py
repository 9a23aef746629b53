"""Steps shared by the image recipes: a build without network, a build context, old tags removed."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import docker
from docker.errors import APIError, BuildError

from conformance.images.layout import LABEL_HASH, LABEL_KIND
from conformance.images.packages import PackageSet
from conformance.images.results import ImageBuildError, tail


def build_image(client: docker.DockerClient, context: Path, name: str, force: bool,
                buildargs: dict[str, str], labels: dict[str, str]) -> None:
    try:
        # network_mode none: the Dockerfiles install from the context only, and the
        # engine here has no bridge network to give a build step anyway.
        client.images.build(path=str(context), tag=name, buildargs=buildargs, labels=labels, rm=True,
                            forcerm=True, nocache=force, network_mode="none", pull=False)
    except BuildError as exc:
        log = "".join(str(chunk.get("stream", chunk.get("error", ""))) for chunk in exc.build_log)
        raise ImageBuildError(f"docker build of {name} failed: {exc.msg}\n{tail(log)}") from exc
    except APIError as exc:
        raise ImageBuildError(f"docker build of {name} failed: {exc}") from exc


def link_or_copy(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:  # the cache may be on another filesystem than the temp dir
        shutil.copy2(source, target)


def fill_wheel_context(context: Path, dockerfile: Path, packages: PackageSet, wheel: Path) -> None:
    """The context of a recipe that installs the package set (packages/) and the project wheel (project/)."""
    shutil.copy2(dockerfile, context / "Dockerfile")
    (context / "packages").mkdir()
    for name in packages.wheels:
        link_or_copy(packages.directory / name, context / "packages" / name)
    (context / "project").mkdir()
    shutil.copy2(wheel, context / "project" / wheel.name)


def remove_older(client: docker.DockerClient, kind: str, repository: str, content_hash: str) -> None:
    """Images of earlier states of a recipe are never used again; each one is 200 MB or more."""
    for image in client.images.list(name=repository, filters={"label": f"{LABEL_KIND}={kind}"}):
        if image.labels.get(LABEL_HASH) == content_hash:
            continue
        for tag in image.tags:
            try:
                client.images.remove(tag)
            except APIError:  # still used by a container: leave it
                pass
