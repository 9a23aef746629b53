"""The project's own wheel, built on the host and installed into the images without an index."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable

from conformance.images.results import ImageBuildError, tail

WHEEL_TIMEOUT = 300
# A fixed date makes the zip bytes reproducible; the cache hashes members anyway.
SOURCE_DATE_EPOCH = "315532800"
SKIP_ANYWHERE = {".git", "__pycache__", "node_modules", ".pytest_cache", ".hypothesis", ".benchmarks"}
SKIP_AT_TOP = {".venv", "build", "dist", "out"}


def build_project_wheel(project_dir: Path, out_dir: Path) -> Path:
    """Builds from a copy so setuptools' build/ and *.egg-info never land in the checkout."""
    with tempfile.TemporaryDirectory(prefix="conformance-src-") as workdir:
        source = copy_project(project_dir, Path(workdir) / "src")
        isolation = [] if needs_build_isolation() else ["--no-build-isolation"]
        command = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--disable-pip-version-check",
                   *isolation, "--wheel-dir", str(out_dir), str(source)]
        env = {**os.environ, "SOURCE_DATE_EPOCH": SOURCE_DATE_EPOCH}
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=WHEEL_TIMEOUT,
                                  env=env, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as exc:
            raise ImageBuildError(f"pip wheel did not finish within {WHEEL_TIMEOUT}s") from exc
    if done.returncode != 0:
        raise ImageBuildError(f"pip wheel of {project_dir} failed:\n{tail(done.stdout + done.stderr)}")
    wheels = sorted(out_dir.glob("*.whl"))
    if len(wheels) != 1:
        raise ImageBuildError(f"expected one project wheel in {out_dir}, found {[w.name for w in wheels]}")
    return wheels[0]


def needs_build_isolation() -> bool:
    """Isolation fetches setuptools from the index on every build: skipped when this interpreter can build.

    A fresh venv's setuptools may predate its own bdist_wheel (70.1) and have no `wheel` beside it
    ("invalid command 'bdist_wheel'"), and from Python 3.12 on a venv has no setuptools at all.
    """
    setuptools = importlib.util.find_spec("setuptools")
    if setuptools is None:
        return True
    # looked up on disk: importing setuptools here would patch distutils for the whole process
    own_bdist_wheel = any((Path(folder) / "command" / "bdist_wheel.py").is_file()
                          for folder in setuptools.submodule_search_locations or ())
    return not (own_bdist_wheel or importlib.util.find_spec("wheel") is not None)


def copy_project(project_dir: Path, target: Path) -> Path:
    """The checkout without VCS data, virtualenvs, caches and build output."""
    shutil.copytree(project_dir, target, ignore=_skipper(project_dir), symlinks=True)
    return target


def _skipper(top: Path) -> Callable[[str, list[str]], set[str]]:
    def skip(directory: str, names: list[str]) -> set[str]:
        skipped = {n for n in names if n in SKIP_ANYWHERE or n.endswith(".egg-info")}
        if Path(directory) == top:
            skipped |= SKIP_AT_TOP & set(names)
        return skipped
    return skip

