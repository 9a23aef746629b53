"""The base image: a debootstrap root filesystem imported into docker, no registry involved."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import docker
from docker.errors import ImageNotFound

from conformance.images.digest import combine, sha256_file, tag_of
from conformance.images.engine import ENGINE_SCRIPT
from conformance.images.layout import BASE_REPOSITORY, IMAGES_DIR, LABEL_HASH, LABEL_KIND
from conformance.images.results import BuildOutcome, ImageBuildError, Log, tail

RECIPE = IMAGES_DIR / "base" / "make-rootfs.sh"
SUITE = "bookworm"
# debootstrap takes about a minute from a nearby mirror; a stalled mirror must not hang CI.
ROOTFS_TIMEOUT = 900
IMPORT_CHANGES = (
    "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "ENV LANG=C.UTF-8",
    'CMD ["/bin/bash"]',
)


def debian_mirror(apt_dir: Path = Path("/etc/apt")) -> str:
    """The mirror this machine's apt already uses for bookworm, so no host is written in the repo."""
    override = os.environ.get("CONFORMANCE_DEBIAN_MIRROR")
    if override:
        return override
    candidates = [apt_dir / "sources.list", *sorted((apt_dir / "sources.list.d").glob("*"))]
    for path in candidates:
        # Files apt itself ignores (e.g. *.disabled) must not pick the mirror either.
        if not path.is_file() or path.suffix not in (".list", ".sources"):
            continue
        parse = _deb822_mirror if path.suffix == ".sources" else _one_line_mirror
        found = parse(path.read_text(errors="replace"))
        if found:
            return found
    raise ImageBuildError(
        f"no apt source for Debian {SUITE} found under {apt_dir}; set CONFORMANCE_DEBIAN_MIRROR to a Debian mirror URL"
    )


def _one_line_mirror(text: str) -> str | None:
    for line in text.splitlines():
        words = [w for w in line.split("#", 1)[0].split() if not w.startswith("[")]
        if len(words) >= 3 and words[0] == "deb" and words[2] == SUITE:
            return words[1]
    return None


def _deb822_mirror(text: str) -> str | None:
    for stanza in text.split("\n\n"):
        fields: dict[str, str] = {}
        for line in stanza.splitlines():
            if ":" in line and not line.startswith(("#", " ")):
                key, value = line.split(":", 1)
                fields[key.strip().lower()] = value.strip()
        if fields.get("enabled", "yes") == "no" or "deb" not in fields.get("types", "").split():
            continue
        if SUITE in fields.get("suites", "").split() and fields.get("uris"):
            return fields["uris"].split()[0]
    return None


def base_hash(mirror: str) -> str:
    return combine({"recipe": sha256_file(RECIPE), "mirror": mirror, "arch": platform.machine()})


def base_image_name(content_hash: str) -> str:
    return f"{BASE_REPOSITORY}:{tag_of(content_hash)}"


def find_image(client: docker.DockerClient, name: str, content_hash: str) -> bool:
    try:
        image = client.images.get(name)
    except ImageNotFound:
        return False
    return image.labels.get(LABEL_HASH) == content_hash


def ensure_base_image(client: docker.DockerClient, *, force: bool, log: Log) -> tuple[str, str, BuildOutcome]:
    """Returns (image name, content hash, outcome)."""
    started = time.monotonic()
    mirror = debian_mirror()
    content_hash = base_hash(mirror)
    name = base_image_name(content_hash)
    if not force and find_image(client, name, content_hash):
        return name, content_hash, BuildOutcome(name, "reused", time.monotonic() - started)
    _require_tools()
    log(f"building {name}: debootstrap {SUITE} from {mirror} (about a minute)")
    with tempfile.TemporaryDirectory(prefix="conformance-rootfs-") as workdir:
        rootfs = Path(workdir) / "rootfs"
        _make_rootfs(rootfs, mirror)
        _import_rootfs(client, rootfs, name, content_hash)
    return name, content_hash, BuildOutcome(name, "built", time.monotonic() - started)


def _require_tools() -> None:
    if shutil.which("debootstrap") is None:
        raise ImageBuildError(f"debootstrap is missing: run `bash {ENGINE_SCRIPT}` (it installs it)")
    if os.geteuid() != 0:
        raise ImageBuildError("building the base image runs debootstrap, which needs root")


def _make_rootfs(rootfs: Path, mirror: str) -> None:
    try:
        done = subprocess.run(["sh", str(RECIPE), str(rootfs), mirror], capture_output=True, text=True,
                              timeout=ROOTFS_TIMEOUT, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        raise ImageBuildError(f"{RECIPE.name} did not finish within {ROOTFS_TIMEOUT}s") from exc
    if done.returncode != 0:
        raise ImageBuildError(f"{RECIPE.name} failed ({done.returncode}):\n{tail(done.stdout + done.stderr)}")


def _import_rootfs(client: docker.DockerClient, rootfs: Path, name: str, content_hash: str) -> None:
    repository, tag = name.split(":")
    changes = [*IMPORT_CHANGES, f"LABEL {LABEL_HASH}={content_hash}", f"LABEL {LABEL_KIND}=base"]
    # tar's stderr goes to a file: a full stderr pipe would stall the stream docker is reading.
    with tempfile.TemporaryFile() as stderr:
        tar = subprocess.Popen(["tar", "--numeric-owner", "-C", str(rootfs), "-c", "."],
                               stdout=subprocess.PIPE, stderr=stderr, stdin=subprocess.DEVNULL)
        try:
            client.api.import_image(src=tar.stdout, repository=repository, tag=tag, changes=changes,
                                    stream_src=True)
            tar.wait(timeout=60)
        finally:
            if tar.poll() is None:
                tar.kill()
                tar.wait(timeout=10)
            tar.stdout.close()
        if tar.returncode != 0:
            stderr.seek(0)
            raise ImageBuildError(f"tar of the root filesystem failed: {stderr.read().decode(errors='replace')}")
