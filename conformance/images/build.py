"""`conformance images build`: base image, packages, the third-party images, project wheel, one
reference image per protocol, and the suite's own image (conformance-suite).

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
from conformance.images.suite import ensure_suite_image, suite_hash
from conformance.images.suite_reports import (ensure_java_debs, ensure_report_wheels, ensure_suite_reports_image,
                                              report_requirements)
from conformance.images.thirdparty import available_peers, ensure_peer_image
from conformance.images.wheel import build_project_wheel
from reports.progress import Stages


def default_protocols() -> list[str]:
    """The protocols whose adapter (and so `conformance serve`) exists in this checkout."""
    from conformance.protocols import available
    return available()


def build_images(protocols: list[str] | None = None, *, force: bool = False, project_dir: Path | None = None,
                 log: Log = print, thirdparty: bool = True, suite: bool = False,
                 suite_reports: bool = False) -> list[BuildOutcome]:
    """The reference images of PROTOCOLS (default: all) after the third-party images of those protocols;
    with SUITE, the suite image last (PROTOCOLS=[] and SUITE: the suite image alone); with SUITE_REPORTS
    also the suite image with Java and PySpark (conformance-suite-reports)."""
    suite = suite or suite_reports
    project_dir = project_dir or require_checkout()
    protocols = default_protocols() if protocols is None else protocols
    _check_known(protocols)
    peers = available_peers(project_dir, protocols) if thirdparty and protocols else []
    wheel_steps = (1 if protocols or suite else 0) + len(protocols) + int(suite) + int(suite_reports)
    stages = Stages(2 + len(peers) + wheel_steps, "images build")

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
        if not protocols and not suite:
            say("no protocol has an adapter yet: only the base image and packages were prepared")
            return outcomes
        for peer in peers:
            stages.step(f"third-party image {peer.name}")
            outcome = ensure_peer_image(client, peer, base_image=base_image, base_hash=base_hash,
                                        packages=packages, project_dir=project_dir, force=force, log=say)
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
            if suite:
                stages.step("suite image")
                outcome = ensure_suite_image(client, base_image=base_image, base_hash=base_hash,
                                             packages=packages, wheel=wheel, wheel_hash=wheel_hash, force=force)
                outcomes.append(_report(outcome, say))
            if suite_reports:
                stages.step("suite reports image")
                outcomes += _suite_reports(client, outcome.what, suite_hash(base_hash, packages, wheel_hash),
                                           base_image, base_hash, project_dir, force, say)
        return outcomes
    finally:
        stages.finish()
        client.close()


def build_peer_images(names: list[str] | None = None, *, force: bool = False, project_dir: Path | None = None,
                      log: Log = print) -> list[BuildOutcome]:
    """The base image, the package set and the third-party images NAMES (default: all in this checkout),
    without the project wheel or any reference image; the last outcomes are the peers', in order."""
    project_dir = project_dir or require_checkout()
    peers = [p for p in available_peers(project_dir) if names is None or p.name in names]
    missing = set(names or ()) - {p.name for p in peers}
    if missing:
        raise ImageBuildError(f"no third-party peer {', '.join(sorted(missing))} in {project_dir}")
    client = docker_client()
    try:
        base_image, base_hash, outcome = ensure_base_image(client, force=force, log=log)
        outcomes = [_report(outcome, log)]
        packages, outcome = ensure_packages(image_requirements(project_dir / "pyproject.toml"), force=force, log=log)
        outcomes.append(_report(outcome, log))
        for peer in peers:
            outcomes.append(_report(ensure_peer_image(client, peer, base_image=base_image, base_hash=base_hash,
                                                      packages=packages, project_dir=project_dir, force=force,
                                                      log=log), log))
        return outcomes
    finally:
        client.close()


def _suite_reports(client, suite_image: str, suite_image_hash: str, base_image: str, base_hash: str,
                   project_dir: Path, force: bool, log: Log) -> list[BuildOutcome]:
    debs, debs_outcome = ensure_java_debs(client, base_image, base_hash, force=force, log=log)
    wheels, wheels_outcome = ensure_report_wheels(report_requirements(project_dir / "pyproject.toml"),
                                                  force=force, log=log)
    image = ensure_suite_reports_image(client, suite_image=suite_image, suite_hash=suite_image_hash,
                                       debs=debs, wheels=wheels, force=force)
    return [_report(outcome, log) for outcome in (debs_outcome, wheels_outcome, image)]


def _check_known(protocols: list[str]) -> None:
    from conformance.protocols import KNOWN
    unknown = sorted(set(protocols) - set(KNOWN))
    if unknown:
        raise ImageBuildError(f"unknown protocol(s) {', '.join(unknown)} (known: {', '.join(KNOWN)})")


def _report(outcome: BuildOutcome, log: Log) -> BuildOutcome:
    log(outcome.line())
    return outcome

