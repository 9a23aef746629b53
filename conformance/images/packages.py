"""Third-party wheels for the images, downloaded on the host once per requirement set.

The images have no network and no index: every wheel they install comes from
this folder. A requirement set is downloaded once and then pinned by the
folder's manifest, so warm builds never ask the registry again.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from packaging.requirements import Requirement

from conformance.images.digest import combine, sha256_file, tag_of
from conformance.images.layout import cache_dir
from conformance.images.results import BuildOutcome, ImageBuildError, Log, tail

TARGET_PYTHON = "3.11"  # Debian bookworm's python3
GLIBC_MINOR = 36  # bookworm's glibc 2.36: any manylinux_2_N wheel with N <= 36 runs
# Third-party peers that run inside images (the zmq-based implementations, rsocket-py) need these too.
IMAGE_EXTRAS = ("pyzmq", "rsocket")
DOWNLOAD_TIMEOUT = 600
MANIFEST = "manifest.json"


@dataclass(frozen=True)
class PackageSet:
    directory: Path
    wheels: dict[str, str]  # file name -> sha256

    def digest(self) -> str:
        return combine(self.wheels)


def image_requirements(pyproject: Path) -> list[str]:
    """The project's runtime dependencies plus the image-only extras, from pyproject.toml."""
    project = tomllib.loads(pyproject.read_text())["project"]
    requirements = list(project.get("dependencies", []))
    for extra in project.get("optional-dependencies", {}).values():
        requirements += [r for r in extra if Requirement(r).name in IMAGE_EXTRAS]
    return sorted(set(requirements))


def platform_tags() -> list[str]:
    # pip does not expand a manylinux_2_N tag to older ones, so every accepted tag is named.
    arch = platform.machine()
    return [f"manylinux_2_{minor}_{arch}" for minor in range(GLIBC_MINOR, 16, -1)] + [f"manylinux2014_{arch}"]


def ensure_packages(requirements: list[str], *, force: bool, log: Log) -> tuple[PackageSet, BuildOutcome]:
    started = time.monotonic()
    key = combine({"requirements": "\n".join(requirements), "python": TARGET_PYTHON,
                   "platforms": ",".join(platform_tags())})
    directory = cache_dir() / "packages" / tag_of(key)

    def download(partial: Path) -> None:
        log(f"downloading {len(requirements)} requirements for Python {TARGET_PYTHON} into {directory}")
        _download(requirements, partial)

    return cached_file_set(directory, "*.whl", download, force=force, started=started)


def cached_file_set(directory: Path, pattern: str, fill: Callable[[Path], None], *, force: bool,
                    started: float) -> tuple[PackageSet, BuildOutcome]:
    """The files PATTERN that FILL put in DIRECTORY, filled once and then read from its manifest."""
    what = f"packages {directory}"
    if not force and (directory / MANIFEST).is_file():
        files = json.loads((directory / MANIFEST).read_text())
        return PackageSet(directory, files), BuildOutcome(what, "reused", time.monotonic() - started)
    # Fill beside the final folder and rename: an interrupted run never leaves a half set behind.
    partial = directory.with_name(f"{directory.name}.partial-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    try:
        fill(partial)
        files = {path.name: sha256_file(path) for path in sorted(partial.glob(pattern))}
        (partial / MANIFEST).write_text(json.dumps(files, indent=1, sort_keys=True))
        shutil.rmtree(directory, ignore_errors=True)
        partial.rename(directory)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return PackageSet(directory, files), BuildOutcome(what, "built", time.monotonic() - started)


def _download(requirements: list[str], dest: Path) -> None:
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
               "--only-binary=:all:", "--python-version", TARGET_PYTHON, "--implementation", "cp",
               "--abi", "cp" + TARGET_PYTHON.replace(".", ""), "--dest", str(dest)]
    for tag in platform_tags():
        command += ["--platform", tag]
    try:
        done = subprocess.run([*command, *requirements], capture_output=True, text=True,
                              timeout=DOWNLOAD_TIMEOUT, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        raise ImageBuildError(f"pip download did not finish within {DOWNLOAD_TIMEOUT}s") from exc
    if done.returncode != 0:
        raise ImageBuildError(f"pip download failed ({done.returncode}):\n{tail(done.stdout + done.stderr)}")
