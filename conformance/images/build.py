"""`conformance images build`: base image, packages, the third-party images, project wheel, one
reference image per protocol.

Every step is cached by the hash of its inputs, so a warm run with nothing
changed builds nothing and takes seconds.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from conformance.images.base import ensure_base_image
from conformance.images.digest import wheel_content_hash
from conformance.images.engine import docker_client
from conformance.images.layout import require_checkout
from conformance.images.packages import ensure_packages, image_requirements
from conformance.images.reference import ensure_reference_image
from conformance.images.results import BuildOutcome, ImageBuildError, Log
from conformance.images.thirdparty import available_peers, ensure_peer_image
from conformance.images.wheel import build_project_wheel
from reports.progress import Stages


def default_protocols() -> list[str]:
    """The protocols whose adapter (and so `conformance serve`) exists in this checkout."""
    from conformance.protocols import available
    return available()


def build_images(protocols: list[str] | None = None, *, force: bool = False, project_dir: Path | None = None,
                 log: Log = print, thirdparty: bool = True) -> list[BuildOutcome]:
    """The reference images of PROTOCOLS (default: all) last, after the third-party images of those protocols."""
    project_dir = project_dir or require_checkout()
    protocols = default_protocols() if protocols is None else protocols
    _check_known(protocols)
    peers = available_peers(project_dir, protocols) if thirdparty and protocols else []
    stages = Stages(2 + len(peers) + (1 + len(protocols) if protocols else 0), "images build")

    def say(text: str) -> None:
        stages.clear()
        log(text)
    client = docker_client()
    try:
        outcomes: list[BuildOutcome] = []
        stages.step("base image")
        base_image, base_hash, outcome = ensure_base_image(client, force=force, log=say)
        outcomes.append(_report(outcome, say))
        stages.step("packages")
        packages, outcome = ensure_packages(image_requirements(project_dir / "pyproject.toml"), force=force, log=say)
        outcomes.append(_report(outcome, say))
        if not protocols:
            say("no protocol has an adapter yet: only the base image and packages were prepared")
            return outcomes
        for peer in peers:
            stages.step(f"third-party image {peer.name}")
            outcome = ensure_peer_image(client, peer, base_image=base_image, base_hash=base_hash,
                                        packages=packages, project_dir=project_dir, force=force)
            outcomes.append(_report(outcome, say))
        with tempfile.TemporaryDirectory(prefix="conformance-wheel-") as wheel_dir:
            stages.step("project wheel")
            started = time.monotonic()
            wheel = build_project_wheel(project_dir, Path(wheel_dir))
            wheel_hash = wheel_content_hash(wheel)
            say(f" wheel  {wheel.name} {wheel_hash[:16]}  ({time.monotonic() - started:.1f}s)")
            for protocol in protocols:
                stages.step(f"reference image {protocol}")
                outcome = ensure_reference_image(client, protocol, base_image=base_image, base_hash=base_hash,
                                                 packages=packages, wheel=wheel, wheel_hash=wheel_hash,
                                                 force=force)
                outcomes.append(_report(outcome, say))
        return outcomes
    finally:
        stages.finish()
        client.close()


def _check_known(protocols: list[str]) -> None:
    from conformance.protocols import KNOWN
    unknown = sorted(set(protocols) - set(KNOWN))
    if unknown:
        raise ImageBuildError(f"unknown protocol(s) {', '.join(unknown)} (known: {', '.join(KNOWN)})")


def _report(outcome: BuildOutcome, log: Log) -> BuildOutcome:
    log(outcome.line())
    return outcome

