"""The README's commands work as written from a clone: the programs they name exist, their
options parse, and the cheap ones run (with the venv not on PATH, as in a fresh shell)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tomllib
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from conformance.cli import DELEGATED, build_parser
from conformance.targets import TargetError, parse_target

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
SCRIPTS = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"])
# Programs the README's prerequisites table names; the set-up does not make them.
PREREQUISITES = {"docker", "tcpdump"}
# A shell without the venv activated: only the system's own programs.
SUBCOMMANDS = set(next(a for a in build_parser()._actions if a.dest == "command").choices)
FRESH_PATH = os.pathsep.join(p for p in ("/usr/local/bin", "/usr/bin", "/bin") if Path(p).is_dir())


def fenced_commands() -> list[list[str]]:
    commands = []
    for block in re.findall(r"^```(?:sh|bash|console)\n(.*?)^```", README, re.MULTILINE | re.DOTALL):
        for line in block.splitlines():
            argv = shlex.split(line, comments=True)
            if argv:
                commands.append(argv)
    return _once(commands)


def _once(commands: list[list[str]]) -> list[list[str]]:
    """A command shown twice is checked once (pytest refuses duplicate test IDs under --strict)."""
    seen: set[tuple[str, ...]] = set()
    return [argv for argv in commands if not (tuple(argv) in seen or seen.add(tuple(argv)))]


def inline_commands() -> list[list[str]]:
    """Code spans in the prose that are `conformance ...` commands."""
    spans = re.findall(r"`(conformance [^`]+)`", README)
    return _once([shlex.split(span.replace("[", "").replace("]", "")) for span in spans])


def venv_programs() -> set[str]:
    """What `.venv/bin` holds after the set-up: python, pip, and the console scripts of the project
    and of the distributions it installs."""
    return SCRIPTS | {"python", "python3", "pip"} | {ep.name for ep in entry_points(group="console_scripts")}


def check_conformance(argv: list[str]) -> None:
    """Options parse as the CLI would parse them (nothing runs)."""
    if argv[0] in DELEGATED or "--help" in argv:
        assert argv[0] in DELEGATED or argv[0] in SUBCOMMANDS, f"no command `conformance {argv[0]}`"
        return  # delegated commands own their argv; for those and --help the name must route
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:
        raise AssertionError(f"`conformance {' '.join(argv)}` does not parse") from exc
    for option in ("target", "target_client"):
        if getattr(args, option, None) and args.command == "run":
            parse_target(args.target, client_command=args.target_client).close()


def test_the_readme_has_commands_to_check() -> None:
    assert len(fenced_commands()) >= 10 and len(inline_commands()) >= 5


@pytest.mark.parametrize("argv", fenced_commands(), ids=" ".join)
def test_every_fenced_command_names_a_program_that_exists(argv: list[str]) -> None:
    program = argv[0]
    if program == "bash":
        assert (ROOT / argv[1]).is_file(), f"{argv[1]} is not in the repository"
    elif program.startswith(".venv/bin/"):
        name = program.removeprefix(".venv/bin/")
        assert name in venv_programs(), f"the set-up puts no {name} in .venv/bin"
        if name in SCRIPTS:
            check_conformance(argv[1:])
    else:
        assert program in PREREQUISITES, f"{program} is neither made by the set-up nor a listed prerequisite"
        assert f"`{program}" in README


@pytest.mark.parametrize("argv", inline_commands(), ids=" ".join)
def test_every_conformance_command_in_the_prose_parses(argv: list[str]) -> None:
    if any(word.isupper() for word in argv):  # a synopsis with placeholders (RUN..., DIR): the name must route
        assert argv[1] in DELEGATED or argv[1] in SUBCOMMANDS
        return
    check_conformance(argv[1:])


def test_target_examples_in_the_prose_work_without_the_venv_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    examples = re.findall(r'`--target(-client)? "([^"]+)"`', README)
    assert examples, "the README shows no --target/--target-client example"
    monkeypatch.setenv("PATH", FRESH_PATH)
    for client, value in examples:
        if value.split()[0].isupper():
            continue  # a synopsis: "COMMAND {url} {testcase}"
        try:
            if client:
                parse_target("ref", client_command=value).close()
            else:
                parse_target(value).close()
        except TargetError as exc:
            raise AssertionError(f"README example {value!r}: {exc}") from None


def run_fresh(argv: list[str]) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": FRESH_PATH, "PYTHONPATH": str(ROOT)}
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_the_one_case_command_runs() -> None:
    (command,) = [a for a in fenced_commands() if a[0] == ".venv/bin/pytest" and "-k" in a]
    done = run_fresh([sys.executable, "-m", "pytest", *command[1:], "-p", "no:cacheprovider", "-q"])
    assert done.returncode == 0, done.stdout[-2000:]
    assert "2 passed" in done.stdout  # the case on TCP and on WebSocket


def test_the_cmd_target_example_runs_from_an_unactivated_venv(tmp_path: Path) -> None:
    (value,) = re.findall(r'`--target "(cmd:[^"]+)"`', README)
    done = run_fresh([sys.executable, "-m", "conformance.cli", "run", "stmp", "--target", value,
                      "--out", str(tmp_path), "-k", "stmp/handshake/one-version"])
    assert done.returncode == 0, (done.stdout + done.stderr)[-2000:]
    assert "2 passed" in done.stdout


def test_every_system_package_the_scripts_install_is_a_named_prerequisite() -> None:
    installed = set()
    for script in ("system-deps.sh", "docker-engine.sh"):
        text = (ROOT / "scripts" / script).read_text()
        installed |= set(re.findall(r"\w+\+=\(([\w.-]+)\)", text))
    assert {"default-jre-headless", "npm", "python3-venv", "chromium", "docker.io"} <= installed
    unnamed = {package for package in installed if f"`{package}`" not in README}
    assert unnamed == set(), "installed by the scripts, but not in the README's prerequisites"
