"""Debian packages the base image lacks, as .deb files for a build without network.

The host's apt resolves PACKAGE against the base image's own dpkg status, so exactly the
missing packages come down; the set is cached like the wheel sets (packages.cached_file_set)
and keyed by the base image and the package name.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import docker

from conformance.images.digest import combine, tag_of
from conformance.images.layout import cache_dir
from conformance.images.packages import PackageSet, cached_file_set
from conformance.images.results import BuildOutcome, ImageBuildError, Log, tail

STEP_TIMEOUT = 900


def ensure_debs(client: docker.DockerClient, base_image: str, base_hash: str, package: str, *, cache_name: str,
                force: bool, log: Log) -> tuple[PackageSet, BuildOutcome]:
    started = time.monotonic()
    directory = cache_dir() / cache_name / tag_of(combine({"base": base_hash, "package": package}))

    def fill(partial: Path) -> None:
        if shutil.which("apt-get") is None:
            raise ImageBuildError(f"fetching {package} for an image needs apt-get on the host (Debian)")
        log(f"downloading {package} and what the base image lacks of its dependencies into {directory}")
        status = partial / "dpkg-status"
        status.write_bytes(client.containers.run(base_image, ["cat", "/var/lib/dpkg/status"], remove=True,
                                                 network_mode="none"))
        (partial / "partial").mkdir()
        download = ["apt-get", "install", "--download-only", "--yes", "--no-install-recommends", "--quiet",
                    "-o", f"Dir::State::status={status}", "-o", f"Dir::Cache::archives={partial}", package]
        try:
            run_step(download, "apt-get --download-only")
        except ImageBuildError as exc:
            # a fresh machine (a CI container) may have no package lists yet: fetch them once and retry
            if "Unable to locate package" not in str(exc) or os.geteuid() != 0:
                raise
            log("apt has no package lists: apt-get update")
            run_step(["apt-get", "update", "--quiet"], "apt-get update")
            run_step(download, "apt-get --download-only")
        for leftover in (status, partial / "partial", partial / "lock", partial / "lock-frontend"):
            if leftover.is_dir():
                shutil.rmtree(leftover)
            elif leftover.exists():
                leftover.unlink()

    return cached_file_set(directory, "*.deb", fill, force=force, started=started)


def run_step(command: list[str], what: str) -> None:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=STEP_TIMEOUT, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        raise ImageBuildError(f"{what} did not finish within {STEP_TIMEOUT}s") from exc
    if done.returncode != 0:
        raise ImageBuildError(f"{what} failed ({done.returncode}):\n{tail(done.stdout + done.stderr)}")
