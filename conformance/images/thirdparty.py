"""Third-party implementations as images: conformance-thirdparty-<name>:<hash> (and :latest).

Each one is a peer from thirdparty/ (written apart from reference_impl) with its
own entrypoint under images/thirdparty/<name>/, FROM the debootstrap base and
its wheels (pyzmq) taken from the host-downloaded package set, installed with
``pip install --no-index``.  The image declares what it implements with the
labels conformance.protocols and conformance.roles, which `conformance matrix` reads.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import docker
from packaging.utils import parse_wheel_filename

from conformance.images.base import find_image
from conformance.images.digest import combine, sha256_file, tag_of
from conformance.images.imagebuild import build_image, link_or_copy, remove_older
from conformance.images.layout import (CHECKOUT, IMAGES_DIR, LABEL_HASH, LABEL_KIND, LABEL_PROTOCOL, LABEL_PROTOCOLS,
                                       LABEL_ROLES, THIRDPARTY_PREFIX)
from conformance.images.packages import PackageSet
from conformance.images.results import BuildOutcome, ImageBuildError

RECIPE_DIR = IMAGES_DIR / "thirdparty"
DOCKERFILE = RECIPE_DIR / "Dockerfile"


@dataclass(frozen=True)
class Peer:
    name: str  # the image is conformance-thirdparty-<name>
    protocols: tuple[str, ...]
    roles: tuple[str, ...]
    files: tuple[str, ...]  # checkout-relative paths, copied to the same paths under /opt/peer/
    requirements: tuple[str, ...] = ("pyzmq",)

    @property
    def repository(self) -> str:
        return f"{THIRDPARTY_PREFIX}{self.name}"

    @property
    def entrypoint(self) -> Path:
        return RECIPE_DIR / self.name / "entrypoint.sh"

    def labels(self, content_hash: str) -> dict[str, str]:
        return {LABEL_HASH: content_hash, LABEL_KIND: "thirdparty", LABEL_PROTOCOL: ",".join(self.protocols),
                LABEL_PROTOCOLS: ",".join(self.protocols), LABEL_ROLES: ",".join(self.roles)}


PEERS = (
    # The broker reads the suite's CURVE test key from reference_impl/mc0/testkeys.json (as data).
    Peer("pyzmq-mc0", ("mc0",), ("server",), ("thirdparty/pyzmq_mc0_broker.py", "reference_impl/mc0/testkeys.json")),
    Peer("pyzmq-mtl", ("mtl",), ("client",), ("thirdparty/pyzmq_mtl_client.py",)),
)


def available_peers(project_dir: Path = CHECKOUT, protocols: list[str] | None = None) -> list[Peer]:
    """The peers whose program is in this checkout, for PROTOCOLS (None: all)."""
    return [peer for peer in PEERS
            if all((project_dir / path).is_file() for path in peer.files)
            and (protocols is None or set(peer.protocols) & set(protocols))]


def peer_wheels(peer: Peer, packages: PackageSet) -> list[str]:
    wanted = set(peer.requirements)
    names = [name for name in packages.wheels if parse_wheel_filename(name)[0] in wanted]
    missing = wanted - {parse_wheel_filename(name)[0] for name in names}
    if missing:
        raise ImageBuildError(f"{peer.repository} needs {', '.join(sorted(missing))}: not in {packages.directory}")
    return sorted(names)


def peer_hash(peer: Peer, base_hash: str, packages: PackageSet, project_dir: Path) -> str:
    parts = {
        "base": base_hash,
        "dockerfile": sha256_file(DOCKERFILE),
        "entrypoint": sha256_file(peer.entrypoint),
        "labels": ",".join(f"{k}={v}" for k, v in sorted(peer.labels("").items())),
    }
    parts.update({f"wheel:{name}": packages.wheels[name] for name in peer_wheels(peer, packages)})
    parts.update({f"file:{path}": sha256_file(project_dir / path) for path in peer.files})
    return combine(parts)


def ensure_peer_image(client: docker.DockerClient, peer: Peer, *, base_image: str, base_hash: str,
                      packages: PackageSet, project_dir: Path, force: bool) -> BuildOutcome:
    started = time.monotonic()
    content_hash = peer_hash(peer, base_hash, packages, project_dir)
    name = f"{peer.repository}:{tag_of(content_hash)}"
    if force or not find_image(client, name, content_hash):
        with tempfile.TemporaryDirectory(prefix="conformance-context-") as context:
            _fill_context(Path(context), peer, packages, project_dir)
            build_image(client, Path(context), name, force,
                        {"BASE_IMAGE": base_image, "PEER_REQUIREMENTS": " ".join(peer.requirements)},
                        peer.labels(content_hash))
        action = "built"
    else:
        action = "reused"
    client.images.get(name).tag(peer.repository, "latest")
    remove_older(client, "thirdparty", peer.repository, content_hash)
    return BuildOutcome(name, action, time.monotonic() - started)


def _fill_context(context: Path, peer: Peer, packages: PackageSet, project_dir: Path) -> None:
    shutil.copy2(DOCKERFILE, context / "Dockerfile")
    shutil.copy2(peer.entrypoint, context / "entrypoint.sh")
    (context / "wheels").mkdir()
    for name in peer_wheels(peer, packages):
        link_or_copy(packages.directory / name, context / "wheels" / name)
    for path in peer.files:
        target = context / "peer" / path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(project_dir / path, target)
