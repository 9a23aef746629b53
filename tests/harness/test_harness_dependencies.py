"""What `pip install protocol-conformance` brings, and what a command says when its extra is missing."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

from conformance.extras import MODULES_OF_EXTRA

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ("conformance", "reference_impl", "reports")
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
NAME = canonicalize_name(PROJECT["name"])
# Runtime dependencies used as pytest plugins rather than imported: the option `conformance run` passes.
PLUGINS = {"allure-pytest": "--alluredir="}


def names(requirements: list[str]) -> set[str]:
    return {canonicalize_name(Requirement(r).name) for r in requirements}


def extra_closure(extra: str) -> set[str]:
    """The distributions an extra names, its references to the project's other extras followed."""
    found: set[str] = set()
    for line in PROJECT["optional-dependencies"][extra]:
        requirement = Requirement(line)
        if canonicalize_name(requirement.name) == NAME:
            for inner in requirement.extras:
                found |= extra_closure(inner)
        else:
            found.add(canonicalize_name(requirement.name))
    return found


def third_party_imports() -> dict[str, set[str]]:
    """Top-level module -> the shipped files importing it (relative imports and the stdlib left out)."""
    found: dict[str, set[str]] = {}
    for package in SHIPPED:
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if isinstance(node, ast.Import):
                    modules = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    modules = [node.module]
                else:
                    continue
                for module in modules:
                    top = module.split(".")[0]
                    if top not in sys.stdlib_module_names and top not in SHIPPED:
                        found.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    return found


def distribution_of(module: str) -> str:
    dists = packages_distributions().get(module)
    assert dists, f"{module} is imported by the shipped packages but installed by no distribution here"
    return canonicalize_name(dists[0])


def test_runtime_dependencies_are_exactly_what_the_shipped_packages_import_unconditionally() -> None:
    runtime = names(PROJECT["dependencies"])
    in_extras = {m for modules in MODULES_OF_EXTRA.values() for m in modules}
    imports = third_party_imports()
    undeclared = {}
    for module, files in imports.items():
        if module in in_extras:
            continue  # the command needing it names its extra (checked below)
        if distribution_of(module) not in runtime:
            undeclared[module] = sorted(files)
    assert undeclared == {}, "imported, but neither a runtime dependency nor behind a named extra"
    imported = {distribution_of(module) for module in imports if module not in in_extras}
    cli = (ROOT / "conformance" / "cli.py").read_text()
    plugins = {name for name, option in PLUGINS.items() if option in cli}
    assert runtime - imported - plugins == set(), "declared as runtime dependencies, used by no shipped module"


def test_every_extra_module_comes_with_its_extra() -> None:
    for extra, modules in MODULES_OF_EXTRA.items():
        closure = extra_closure(extra)
        for module in modules & third_party_imports().keys():
            assert distribution_of(module) in closure, f"{module} is not installed by the {extra!r} extra"


@pytest.mark.parametrize("version", ["3.11", "3.12", "3.13"])
def test_supported_pythons_may_install(version: str) -> None:
    assert version in SpecifierSet(PROJECT["requires-python"])


def test_constraints_pin_every_declared_requirement() -> None:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            requirement = Requirement(line)
            (specifier,) = requirement.specifier
            assert specifier.operator == "==", line
            pins[canonicalize_name(requirement.name)] = specifier.version
    declared = names(PROJECT["dependencies"]) | {d for extra in PROJECT["optional-dependencies"] for d in extra_closure(extra)}
    assert declared - pins.keys() == set()
    for line in PROJECT["dependencies"]:
        requirement = Requirement(line)
        assert pins[canonicalize_name(requirement.name)] in requirement.specifier, line


BLOCKED = "import sys\nsys.modules[{module!r}] = None\nfrom conformance.cli import main\nsys.exit(main(sys.argv[1:]))"


@pytest.mark.parametrize("module,extra,argv", [
    ("docker", "images", ["images", "build"]),
    ("docker", "images", ["images", "list"]),
    ("docker", "matrix", ["matrix", "--out", "{tmp}/m"]),
    ("pyspark", "report", ["report", "--input", "{tmp}", "--out", "{tmp}/r"]),
    ("docker", "images", ["run", "stmp", "--target", "docker:any:1", "--out", "{tmp}/o"]),
])
def test_a_command_without_its_extra_names_it_in_one_line(tmp_path: Path, module: str, extra: str,
                                                          argv: list[str]) -> None:
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", BLOCKED.format(module=module), *argv], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr[-2000:]
    assert f"protocol-conformance[{extra}]" in lines[0] and module in lines[0]


def test_a_fresh_venv_builds_the_project_wheel_in_isolation(tmp_path: Path) -> None:
    # A new venv has ensurepip's setuptools (no bdist_wheel of its own before 70.1, no `wheel`)
    # or, from Python 3.12 on, none at all: building without isolation there fails.
    subprocess.run([sys.executable, "-m", "venv", str(tmp_path / "venv")], check=True, timeout=300)
    python = tmp_path / "venv" / "bin" / "python"
    probe = "from conformance.images.wheel import needs_build_isolation as n; print(n())"
    fresh = subprocess.run([str(python), "-c", probe], env={**os.environ, "PYTHONPATH": str(ROOT)},
                           capture_output=True, text=True, timeout=60)
    assert fresh.stdout.strip() == "True", fresh.stderr[-2000:]


def test_the_project_venv_builds_without_isolation(monkeypatch: pytest.MonkeyPatch) -> None:
    from conformance.images import wheel
    setuptools = pytest.importorskip("setuptools")
    has_own = (Path(setuptools.__file__).parent / "command" / "bdist_wheel.py").is_file()
    try:
        import wheel as wheel_package  # noqa: F401
        has_wheel = True
    except ImportError:
        has_wheel = False
    assert wheel.needs_build_isolation() is not (has_own or has_wheel)


def test_the_reports_image_wheels_follow_the_report_extra() -> None:
    from conformance.images.suite_reports import report_requirements
    assert report_requirements(ROOT / "pyproject.toml") == sorted(PROJECT["optional-dependencies"]["report"])
