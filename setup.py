"""Bundles the scenarios, vectors and docs into the wheel, so an installed
`conformance run` works from any folder (see conformance/paths.py)."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

BUNDLED = ("scenarios", "vectors", "docs")


class BuildPyWithData(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads the checkout's own folders
        root = Path(__file__).resolve().parent
        target = Path(self.build_lib) / "conformance" / "_bundled"
        for name in BUNDLED:
            shutil.copytree(root / name, target / name, dirs_exist_ok=True)


setup(cmdclass={"build_py": BuildPyWithData})
