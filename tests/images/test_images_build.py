"""Building the images: the inputs of each content hash, and a warm build that builds nothing."""

from __future__ import annotations

import time
import zipfile
from pathlib import Path

import docker
import pytest

from conformance.images import cli as images_cli
from conformance.images.base import _deb822_mirror, _one_line_mirror, debian_mirror
from conformance.images.build import build_images
from conformance.images.digest import wheel_content_hash
from conformance.images.layout import CHECKOUT
from conformance.images.packages import image_requirements, platform_tags


def test_mirror_from_deb822_skips_security_and_disabled_stanzas() -> None:
    text = (
        "Types: deb\nURIs: http://mirror.invalid/debian-security\nSuites: bookworm-security\n\n"
        "Types: deb\nURIs: http://off.invalid/debian\nSuites: bookworm\nEnabled: no\n\n"
        "Types: deb-src deb\nURIs: http://mirror.invalid/debian\nSuites: bookworm bookworm-updates\n"
    )
    assert _deb822_mirror(text) == "http://mirror.invalid/debian"


def test_mirror_from_one_line_sources() -> None:
    text = ("# deb http://old.invalid/debian bookworm main\n"
            "deb [arch=amd64] http://mirror.invalid/debian bookworm main\n")
    assert _one_line_mirror(text) == "http://mirror.invalid/debian"


def test_mirror_ignores_files_apt_ignores(tmp_path: Path) -> None:
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d" / "a.list.disabled").write_text("deb http://disabled.invalid/debian bookworm main\n")
    sources = "Types: deb\nURIs: http://b.invalid/debian\nSuites: bookworm\n"
    (tmp_path / "sources.list.d" / "b.sources").write_text(sources)
    assert debian_mirror(tmp_path) == "http://b.invalid/debian"


def test_image_requirements_are_runtime_deps_plus_the_python_peers_libraries_only() -> None:
    requirements = image_requirements(CHECKOUT / "pyproject.toml")
    names = {r.split(">")[0].split("=")[0].split("[")[0] for r in requirements}
    assert {"pytest", "pyyaml", "websockets", "pynacl", "pyzmq", "rsocket"} <= names
    assert "rsocket==0.4.20" in requirements  # the third-party version under test, exactly
    assert not names & {"docker", "testcontainers", "pyspark"}


def test_platform_tags_reach_down_to_manylinux2014() -> None:
    tags = platform_tags()
    assert tags[0].startswith("manylinux_2_36_") and tags[-1].startswith("manylinux2014_")


def test_wheel_hash_ignores_zip_timestamps(tmp_path: Path) -> None:
    def make(path: Path, date: tuple[int, ...]) -> Path:
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr(zipfile.ZipInfo("pkg/__init__.py", date_time=date), b"x = 1\n")
        return path

    first = make(tmp_path / "a.whl", (1980, 1, 1, 0, 0, 0))
    second = make(tmp_path / "b.whl", (2024, 5, 6, 7, 8, 10))
    assert wheel_content_hash(first) == wheel_content_hash(second)
    changed = tmp_path / "c.whl"
    with zipfile.ZipFile(changed, "w") as archive:
        archive.writestr("pkg/__init__.py", b"x = 2\n")
    assert wheel_content_hash(changed) != wheel_content_hash(first)


@pytest.mark.docker
@pytest.mark.slow
def test_second_build_with_nothing_changed_reuses_everything(
        docker_engine: docker.DockerClient, project_snapshot: Path, stmp_image: str) -> None:
    started = time.monotonic()
    outcomes = build_images(["stmp"], project_dir=project_snapshot, log=print)
    elapsed = time.monotonic() - started
    rebuilt = [o.what for o in outcomes if o.action != "reused"]
    assert rebuilt == [], f"rebuilt with nothing changed: {rebuilt}"
    assert outcomes[-1].what == stmp_image
    assert outcomes[0].what.startswith("conformance-base:")
    assert elapsed < 60, f"a warm build took {elapsed:.1f}s"


@pytest.mark.docker
def test_reference_image_has_python_311_and_the_project(docker_engine: docker.DockerClient, stmp_image: str) -> None:
    container = docker_engine.containers.run(
        stmp_image, entrypoint=["python3", "-c", "import sys, conformance.cli; print(sys.version_info[:2])"],
        network_mode="host", detach=True)
    try:
        status = container.wait(timeout=60)
        output = container.logs().decode()
    finally:
        container.remove(force=True)
    assert status["StatusCode"] == 0, output
    assert output.strip() == "(3, 11)"


def test_cli_refuses_an_unknown_protocol_before_touching_docker(capsys: pytest.CaptureFixture[str]) -> None:
    assert images_cli.main(["build", "--protocol", "no-such-protocol"]) == 1
    assert "unknown protocol(s) no-such-protocol" in capsys.readouterr().err


@pytest.mark.docker
def test_cli_lists_the_built_images(stmp_image: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert images_cli.main(["list"]) == 0
    listing = capsys.readouterr().out
    assert stmp_image in listing and "conformance-base:" in listing


def test_debs_fetch_updates_empty_package_lists_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from conformance.images import debs
    from conformance.images.results import ImageBuildError
    calls: list[list[str]] = []

    def run_step(command: list[str], what: str) -> None:
        calls.append(command[:2])
        if command[1] == "install" and len(calls) == 1:
            raise ImageBuildError("apt-get --download-only failed (100):\nE: Unable to locate package nodejs")
        if command[1] == "install":
            archives = next(c.split("=", 1)[1] for c in command if c.startswith("Dir::Cache::archives="))
            (Path(archives) / "nodejs_18_amd64.deb").write_bytes(b"deb")

    class Containers:
        @staticmethod
        def run(*args, **kwargs) -> bytes:
            return b"Package: base-files\nStatus: install ok installed\n"

    class Client:
        containers = Containers()

    monkeypatch.setenv("CONFORMANCE_IMAGE_CACHE", str(tmp_path))
    monkeypatch.setattr(debs, "run_step", run_step)
    monkeypatch.setattr(debs.os, "geteuid", lambda: 0)
    monkeypatch.setattr(debs.shutil, "which", lambda name: "/usr/bin/" + name)
    found, _ = debs.ensure_debs(Client(), "base:1", "hash", "nodejs", cache_name="node-debs", force=False,
                                log=lambda line: None)
    assert calls == [["apt-get", "install"], ["apt-get", "update"], ["apt-get", "install"]]
    assert list(found.wheels) == ["nodejs_18_amd64.deb"]
