"""conformance-suite-reports:<hash>: the suite image plus a Java runtime and PySpark, so
`conformance report` (the compliance matrix) runs inside it too.

Still no registry and no network in the build: the Java runtime's .deb files are resolved by the
host's apt against the base image's own dpkg status (so exactly the missing packages come down),
PySpark's pure-Python wheels are built by the host's pip; both sets are cached like the
package set, and the image is rebuilt only when the hash of its inputs changes.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
import tomllib
from pathlib import Path

import docker

from conformance.images.base import find_image
from conformance.images.debs import ensure_debs, run_step
from conformance.images.digest import combine, sha256_file, tag_of
from conformance.images.imagebuild import build_image, link_or_copy, remove_older
from conformance.images.layout import IMAGES_DIR, LABEL_HASH, LABEL_KIND, cache_dir
from conformance.images.packages import PackageSet, cached_file_set
from conformance.images.results import BuildOutcome, ImageBuildError, Log

DOCKERFILE = IMAGES_DIR / "suite" / "Dockerfile.reports"
ENTRYPOINT = IMAGES_DIR / "suite" / "reports-entrypoint.sh"
REPOSITORY = "conformance-suite-reports"
KIND = "suite-reports"
JAVA_PACKAGE = "openjdk-17-jre-headless"  # bookworm's Java runtime; PySpark 4 needs Java 17 or later


def report_requirements(pyproject: Path) -> list[str]:
    """The `report` extra of pyproject.toml (a missing extra is an error, never an empty wheel set)."""
    project = tomllib.loads(pyproject.read_text())["project"]
    requirements = project.get("optional-dependencies", {}).get("report")
    if not requirements:
        raise ImageBuildError(f"{pyproject} declares no `report` extra: the reports image needs PySpark")
    return sorted(requirements)


def ensure_report_wheels(requirements: list[str], *, force: bool, log: Log) -> tuple[PackageSet, BuildOutcome]:
    started = time.monotonic()
    directory = cache_dir() / "report-wheels" / tag_of(combine({"requirements": "\n".join(requirements)}))

    def fill(partial: Path) -> None:
        log(f"building wheels of {', '.join(requirements)} into {directory}")
        # pip wheel, not pip download --only-binary: PySpark is published as a source archive only
        run_step([sys.executable, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check",
              "--wheel-dir", str(partial), *requirements], "pip wheel")
        native = [p.name for p in partial.glob("*.whl") if not p.name.endswith("-none-any.whl")]
        if native:
            raise ImageBuildError(f"report wheels must be pure Python to suit the image, not {native}")

    return cached_file_set(directory, "*.whl", fill, force=force, started=started)


def ensure_java_debs(client: docker.DockerClient, base_image: str, base_hash: str, *, force: bool,
                     log: Log) -> tuple[PackageSet, BuildOutcome]:
    return ensure_debs(client, base_image, base_hash, JAVA_PACKAGE, cache_name="java-debs", force=force, log=log)


def ensure_suite_reports_image(client: docker.DockerClient, *, suite_image: str, suite_hash: str,
                               debs: PackageSet, wheels: PackageSet, force: bool) -> BuildOutcome:
    started = time.monotonic()
    content_hash = combine({"kind": KIND, "suite": suite_hash, "dockerfile": sha256_file(DOCKERFILE),
                            "entrypoint": sha256_file(ENTRYPOINT), "debs": debs.digest(),
                            "wheels": wheels.digest()})
    name = f"{REPOSITORY}:{tag_of(content_hash)}"
    if force or not find_image(client, name, content_hash):
        with tempfile.TemporaryDirectory(prefix="conformance-context-") as workdir:
            context = Path(workdir)
            shutil.copy2(DOCKERFILE, context / "Dockerfile")
            shutil.copy2(ENTRYPOINT, context / "reports-entrypoint.sh")
            for folder, files in (("debs", debs), ("report-wheels", wheels)):
                (context / folder).mkdir()
                for file_name in files.wheels:
                    link_or_copy(files.directory / file_name, context / folder / file_name)
            build_image(client, context, name, force, {"SUITE_IMAGE": suite_image},
                        {LABEL_HASH: content_hash, LABEL_KIND: KIND})
        action = "built"
    else:
        action = "reused"
    client.images.get(name).tag(REPOSITORY, "latest")
    remove_older(client, KIND, REPOSITORY, content_hash)
    return BuildOutcome(name, action, time.monotonic() - started)
