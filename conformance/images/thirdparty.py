"""Third-party implementations as images: conformance-thirdparty-<name>:<hash> (and :latest).

Each one is a peer from thirdparty/ (written apart from reference_impl) with its
own entrypoint under images/thirdparty/<name>/, FROM the debootstrap base.  A Python
peer installs its wheels (pyzmq, rsocket) from the host-downloaded package set with
``pip install --no-index``; a Node peer gets Debian's nodejs as .deb files resolved
on the host (debs.py) and the node_modules that ``npm ci`` installed on the host from
the peer's committed package-lock.json (images/thirdparty/<name>/).  The image declares
what it implements with the labels conformance.protocols and conformance.roles, which
`conformance matrix` reads.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import docker
from packaging.utils import parse_wheel_filename

from conformance.images.base import find_image
from conformance.images.debs import ensure_debs
from conformance.images.digest import combine, sha256_file, tag_of
from conformance.images.imagebuild import build_image, link_or_copy, remove_older
from conformance.images.layout import (CHECKOUT, IMAGES_DIR, LABEL_HASH, LABEL_KIND, LABEL_PROTOCOL, LABEL_PROTOCOLS,
                                       LABEL_ROLES, LABEL_VERSION, THIRDPARTY_PREFIX, cache_dir)
from conformance.images.packages import PackageSet
from conformance.images.results import BuildOutcome, ImageBuildError, Log, tail

RECIPE_DIR = IMAGES_DIR / "thirdparty"
DOCKERFILE = RECIPE_DIR / "Dockerfile"
NODE_DOCKERFILE = RECIPE_DIR / "Dockerfile.node"
NODE_PACKAGE = "nodejs"  # Debian bookworm's Node.js 18
NPM_TIMEOUT = 600


@dataclass(frozen=True)
class Peer:
    name: str  # the image is conformance-thirdparty-<name>
    protocols: tuple[str, ...]
    roles: tuple[str, ...]
    files: tuple[str, ...]  # checkout-relative paths, copied to the same paths under /opt/peer/
    requirements: tuple[str, ...] = ("pyzmq",)  # wheels, for a Python peer
    node: bool = False  # a Node peer: nodejs and images/thirdparty/<name>/package-lock.json's node_modules
    version: str = ""  # the library's version, for the org.opencontainers.image.version label
    npm: str = ""  # the images/thirdparty/<npm>/ whose package-lock.json it installs (default: its own name)
    # False: no conformance.protocols label, so `conformance matrix` and `interop` leave it out (a
    # variant of another peer's image that only `--target docker:` runs)
    listed: bool = True

    @property
    def repository(self) -> str:
        return f"{THIRDPARTY_PREFIX}{self.name}"

    @property
    def entrypoint(self) -> Path:
        return RECIPE_DIR / self.name / "entrypoint.sh"

    @property
    def dockerfile(self) -> Path:
        return NODE_DOCKERFILE if self.node else DOCKERFILE

    @property
    def npm_dir(self) -> Path:
        return RECIPE_DIR / (self.npm or self.name)

    def labels(self, content_hash: str) -> dict[str, str]:
        labels = {LABEL_HASH: content_hash, LABEL_KIND: "thirdparty", LABEL_PROTOCOL: ",".join(self.protocols),
                  LABEL_ROLES: ",".join(self.roles)}
        if self.listed:
            labels[LABEL_PROTOCOLS] = ",".join(self.protocols)
        if self.version:
            labels[LABEL_VERSION] = self.version
        return labels


PEERS = (
    # The broker reads the suite's CURVE test key from reference_impl/mc0/testkeys.json (as data).
    Peer("pyzmq-mc0", ("mc0",), ("server",), ("thirdparty/pyzmq_mc0_broker.py", "reference_impl/mc0/testkeys.json")),
    Peer("pyzmq-mtl", ("mtl",), ("client",), ("thirdparty/pyzmq_mtl_client.py",)),
    # RSocket libraries, each behind a peer program of ours that runs the profile's test service.
    Peer("rsocket-py", ("rsocket",), ("server", "client"), ("thirdparty/rsocket_py_peer.py",),
         requirements=("rsocket", "websockets"), version="0.4.20"),
    Peer("rsocket-js-0.0", ("rsocket",), ("server", "client"),
         ("thirdparty/rsocket_js0_peer.js", "thirdparty/rsocket_js_common.js"), requirements=(), node=True,
         version="0.0.27"),
    Peer("rsocket-js-1.0", ("rsocket",), ("server", "client"),
         ("thirdparty/rsocket_js1_peer.js", "thirdparty/rsocket_js_common.js"), requirements=(), node=True,
         version="1.0.0-alpha.3"),
    # The same program and modules with the server's resumption on, for the resume cases only: in
    # that mode a refused SETUP with R ends the server process (docs/findings/rsocket.md, F-JS1-11).
    Peer("rsocket-js-1.0-resume", ("rsocket",), ("server",),
         ("thirdparty/rsocket_js1_peer.js", "thirdparty/rsocket_js_common.js",
          "images/thirdparty/rsocket-js-1.0/entrypoint.sh"), requirements=(), node=True,
         version="1.0.0-alpha.3", npm="rsocket-js-1.0", listed=False),
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


def peer_hash(peer: Peer, base_hash: str, packages: PackageSet, project_dir: Path,
              debs: PackageSet | None = None) -> str:
    parts = {
        "base": base_hash,
        "dockerfile": sha256_file(peer.dockerfile),
        "entrypoint": sha256_file(peer.entrypoint),
        "labels": ",".join(f"{k}={v}" for k, v in sorted(peer.labels("").items())),
    }
    parts.update({f"wheel:{name}": packages.wheels[name] for name in peer_wheels(peer, packages)})
    parts.update({f"file:{path}": sha256_file(project_dir / path) for path in peer.files})
    if peer.node:
        # the lock file pins every module by its integrity hash: it stands for node_modules
        parts["package-lock"] = sha256_file(peer.npm_dir / "package-lock.json")
        parts["debs"] = debs.digest() if debs is not None else ""
    return combine(parts)


def ensure_node_modules(peer: Peer, *, force: bool, log: Log) -> Path:
    """node_modules of the peer's package-lock.json, installed once on the host by `npm ci` and cached."""
    lock = peer.npm_dir / "package-lock.json"
    directory = cache_dir() / "node-modules" / tag_of(combine({"lock": sha256_file(lock),
                                                               "package": sha256_file(peer.npm_dir / "package.json")}))
    if not force and (directory / "node_modules" / ".package-lock.json").is_file():
        return directory / "node_modules"
    if shutil.which("npm") is None:
        raise ImageBuildError(f"{peer.repository} needs npm on the host to install its node_modules")
    log(f"npm ci for {peer.repository} into {directory}")
    partial = directory.with_name(f"{directory.name}.partial-{time.monotonic_ns()}")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    try:
        for name in ("package.json", "package-lock.json"):
            shutil.copy2(peer.npm_dir / name, partial / name)
        try:
            # --ignore-scripts: nothing runs at install time; the modules are plain JavaScript
            done = subprocess.run(["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--omit=dev"],
                                  cwd=partial, capture_output=True, text=True, timeout=NPM_TIMEOUT,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as exc:
            raise ImageBuildError(f"npm ci did not finish within {NPM_TIMEOUT}s") from exc
        if done.returncode != 0:
            raise ImageBuildError(f"npm ci for {peer.repository} failed ({done.returncode}):\n"
                                  f"{tail(done.stdout + done.stderr)}")
        shutil.rmtree(directory, ignore_errors=True)
        partial.rename(directory)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return directory / "node_modules"


def ensure_peer_image(client: docker.DockerClient, peer: Peer, *, base_image: str, base_hash: str,
                      packages: PackageSet, project_dir: Path, force: bool, log: Log = print) -> BuildOutcome:
    started = time.monotonic()
    debs = node_modules = None
    if peer.node:
        debs, _ = ensure_debs(client, base_image, base_hash, NODE_PACKAGE, cache_name="node-debs", force=False,
                              log=log)
    content_hash = peer_hash(peer, base_hash, packages, project_dir, debs)
    name = f"{peer.repository}:{tag_of(content_hash)}"
    if force or not find_image(client, name, content_hash):
        if peer.node:
            node_modules = ensure_node_modules(peer, force=False, log=log)
        with tempfile.TemporaryDirectory(prefix="conformance-context-") as context:
            _fill_context(Path(context), peer, packages, project_dir, debs, node_modules)
            build_image(client, Path(context), name, force,
                        {"BASE_IMAGE": base_image, "PEER_REQUIREMENTS": " ".join(peer.requirements)},
                        peer.labels(content_hash))
        action = "built"
    else:
        action = "reused"
    client.images.get(name).tag(peer.repository, "latest")
    remove_older(client, "thirdparty", peer.repository, content_hash)
    return BuildOutcome(name, action, time.monotonic() - started)


def _fill_context(context: Path, peer: Peer, packages: PackageSet, project_dir: Path,
                  debs: PackageSet | None, node_modules: Path | None) -> None:
    shutil.copy2(peer.dockerfile, context / "Dockerfile")
    shutil.copy2(peer.entrypoint, context / "entrypoint.sh")
    (context / "wheels").mkdir()
    for name in peer_wheels(peer, packages):
        link_or_copy(packages.directory / name, context / "wheels" / name)
    if peer.node:
        (context / "debs").mkdir()
        for name in debs.wheels:
            link_or_copy(debs.directory / name, context / "debs" / name)
        # beside the programs, so node's module lookup from /opt/peer/thirdparty/ finds it
        shutil.copytree(node_modules, context / "peer" / "node_modules")
    for path in peer.files:
        target = context / "peer" / path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(project_dir / path, target)
