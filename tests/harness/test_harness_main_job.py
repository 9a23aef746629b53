"""The main job's set-up and last step on a machine that lacks Java, Node/npm or root.

The whole job is too slow to run here; these run its pieces with stubbed programs on PATH.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SYSTEM_DEPS = ROOT / "scripts" / "system-deps.sh"
BASH = "/bin/bash"


def stub(folder: Path, name: str, body: str = "exit 0") -> None:
    path = folder / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def bare_env(path: Path, **extra: str) -> dict[str, str]:
    """PATH holds only `path`: no java, npx or apt-get unless stubbed there."""
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "SPARK_HOME")}
    return {**env, "PATH": str(path), "PYTHONPATH": str(ROOT), "PYTHON": sys.executable, **extra}


@pytest.fixture
def bin_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "bin"
    folder.mkdir()
    return folder


def system_deps(bin_dir: Path, role: str, uid: int) -> tuple[subprocess.CompletedProcess, list[str]]:
    calls = bin_dir.parent / "apt-calls"
    stub(bin_dir, "id", f"echo {uid}")
    stub(bin_dir, "apt-get", f'echo "$*" >> {calls}')
    done = subprocess.run([BASH, str(SYSTEM_DEPS), role], env=bare_env(bin_dir), capture_output=True,
                          text=True, timeout=60)
    return done, calls.read_text().splitlines() if calls.exists() else []


def test_as_root_the_missing_java_and_npm_come_from_the_distribution(bin_dir: Path) -> None:
    done, calls = system_deps(bin_dir, "main", uid=0)
    assert done.returncode == 0, done.stderr
    assert calls[0].startswith("update")
    installs = [c.split() for c in calls if c.startswith("install")]
    assert len(installs) == 1
    assert {"default-jre-headless", "npm"} <= set(installs[0]) and "chromium" not in installs[0]


def test_the_test_role_adds_chromium_and_tcpdump(bin_dir: Path) -> None:
    stub(bin_dir, "java")
    stub(bin_dir, "npx")
    done, calls = system_deps(bin_dir, "test", uid=0)
    assert done.returncode == 0, done.stderr
    installed = [word for c in calls if c.startswith("install") for word in c.split()]
    assert "chromium" in installed and "tcpdump" in installed
    assert "npm" not in installed and "default-jre-headless" not in installed


def test_without_root_one_line_says_what_to_install(bin_dir: Path) -> None:
    done, calls = system_deps(bin_dir, "main", uid=1000)
    assert done.returncode == 0 and calls == []
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "default-jre-headless" in lines[0] and "npm" in lines[0], done.stderr


def test_nothing_is_installed_when_everything_is_there(bin_dir: Path) -> None:
    for program in ("java", "npx", "chromium", "tcpdump"):
        stub(bin_dir, program)
    done, calls = system_deps(bin_dir, "test", uid=0)
    assert (done.returncode, done.stdout, done.stderr, calls) == (0, "", "", [])


def test_a_java_home_without_java_counts_as_missing(bin_dir: Path, tmp_path: Path) -> None:
    stub(bin_dir, "java")  # on PATH, but PySpark would start $JAVA_HOME/bin/java
    stub(bin_dir, "npx")
    stub(bin_dir, "id", "echo 1000")
    env = bare_env(bin_dir, JAVA_HOME=str(tmp_path / "no-jdk"))
    done = subprocess.run([BASH, str(SYSTEM_DEPS), "main"], env=env, capture_output=True, text=True, timeout=60)
    assert "default-jre-headless" in done.stderr


def finish(bin_dir: Path, tmp_path: Path, *extra: str) -> subprocess.CompletedProcess:
    run = tmp_path / "run"
    (run / "allure-results").mkdir(parents=True)
    (run / "records.jsonl").write_text('{"protocol": "stmp", "case": "stmp/handshake/one-version", "transport": "tcp", "grade": "PASSED"}\n')
    command = [sys.executable, "-m", "conformance.finish", "--run", str(run), "--out", str(tmp_path / "out"), *extra]
    return subprocess.run(command, env=bare_env(bin_dir), capture_output=True, text=True, timeout=300)


def test_finish_without_npx_or_java_skips_both_reports_in_one_line_each(bin_dir: Path, tmp_path: Path) -> None:
    done = finish(bin_dir, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stdout + done.stderr
    allure = [line for line in done.stdout.splitlines() if line.startswith("allure report:")]
    report = [line for line in done.stdout.splitlines() if line.startswith("compliance report:")]
    assert len(allure) == 1 and "skipped" in allure[0] and "npx" in allure[0]
    assert len(report) == 1 and "skipped" in report[0] and "Java" in report[0]
    assert "results per grade" in done.stdout  # the summary still prints


def test_report_without_java_is_one_line(bin_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("pyspark", reason="pyspark is not installed: pip install .[report]")
    run = tmp_path / "run"
    run.mkdir()
    (run / "records.jsonl").write_text("")
    done = subprocess.run([sys.executable, "-m", "conformance.cli", "report", "--input", str(run), "--out",
                           str(tmp_path / "out")], env=bare_env(bin_dir), capture_output=True, text=True, timeout=300)
    assert done.returncode == 4  # Spark could not start (docs/reports.md, exit status)
    assert done.stderr.strip().count("\n") == 0 and "Java" in done.stderr, done.stderr[-3000:]


def test_setup_refuses_a_python_older_than_3_11_in_one_line(bin_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "clone"
    (copy / "scripts").mkdir(parents=True)
    for name in ("setup.sh", "system-deps.sh"):
        (copy / "scripts" / name).write_text((ROOT / "scripts" / name).read_text())
    stub(bin_dir, "python3", 'case "$*" in *version_info*) exit 1;; esac; exit 0')  # an old python3
    (bin_dir / "dirname").symlink_to(shutil.which("dirname"))
    env = {**bare_env(bin_dir)}
    del env["PYTHON"]
    done = subprocess.run([BASH, str(copy / "scripts" / "setup.sh")], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "3.11" in lines[0], done.stderr
    assert not (copy / ".venv").exists()


def test_setup_names_pypi_in_one_line_when_pip_cannot_install(bin_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "clone"
    (copy / "scripts").mkdir(parents=True)
    for name in ("setup.sh", "system-deps.sh"):
        (copy / "scripts" / name).write_text((ROOT / "scripts" / name).read_text())
    for name in ("pyproject.toml", "constraints.txt"):
        (copy / name).write_text((ROOT / name).read_text())
    venv_bin = copy / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    stub(venv_bin, "python")
    stub(venv_bin, "pip", 'echo "ERROR: Could not find a version that satisfies the requirement pip" >&2; exit 1')
    for program in ("java", "npx"):
        stub(bin_dir, program)
    for program in ("bash", "dirname", "cat", "sha256sum", "cut"):
        (bin_dir / program).symlink_to(shutil.which(program))
    done = subprocess.run([BASH, str(copy / "scripts" / "setup.sh")], env=bare_env(bin_dir), capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 1
    ours = [line for line in done.stderr.splitlines() if line.startswith("setup:")]
    assert len(ours) == 1 and "PyPI" in ours[0], done.stderr
    assert "Traceback" not in done.stderr


def debian_python(bin_dir: Path, name: str, version: str) -> None:
    """A Debian interpreter without its -venv package: no ensurepip."""
    stub(bin_dir, name, f'case "$*" in *ensurepip*) exit 1;; *version_info*) echo {version};; esac; exit 0')


@pytest.mark.parametrize("release, python", [("bookworm", "3.11"), ("trixie", "3.13")])
def test_a_fresh_debian_gets_venv_java_and_npm(bin_dir: Path, release: str, python: str) -> None:
    """Debian 12 and 13 as debootstrap leaves them (scripts/try-fresh-debian.sh runs the real thing)."""
    debian_python(bin_dir, "python3", python)
    calls = bin_dir.parent / "apt-calls"
    stub(bin_dir, "id", "echo 0")
    stub(bin_dir, "apt-get", f'echo "$*" >> {calls}')
    env = {**bare_env(bin_dir), "PYTHON": "python3"}
    done = subprocess.run([BASH, str(SYSTEM_DEPS), "main"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    (install,) = [c.split() for c in calls.read_text().splitlines() if c.startswith("install")]
    assert {"python3-venv", "default-jre-headless", "npm"} <= set(install)


def test_another_python_than_the_default_gets_its_own_venv_package(bin_dir: Path) -> None:
    debian_python(bin_dir, "python3", "3.11")
    debian_python(bin_dir, "python3.13", "3.13")
    stub(bin_dir, "id", "echo 1000")
    env = {**bare_env(bin_dir), "PYTHON": "python3.13"}
    done = subprocess.run([BASH, str(SYSTEM_DEPS), "main"], env=env, capture_output=True, text=True, timeout=60)
    assert "python3.13-venv" in done.stderr and "python3-venv" not in done.stderr, done.stderr


def test_finish_will_not_replace_a_folder_that_is_no_allure_report_and_says_so(bin_dir: Path, tmp_path: Path) -> None:
    stub(bin_dir, "npx")  # `npx --no-install allure --version` answers: the CLI looks installed
    kept = tmp_path / "out" / "allure-report" / "notes.txt"
    kept.parent.mkdir(parents=True)
    kept.write_text("mine")
    done = finish(bin_dir, tmp_path)
    assert done.returncode == 0 and "Traceback" not in done.stdout + done.stderr, done.stderr[-3000:]
    (allure,) = [line for line in done.stdout.splitlines() if line.startswith("allure report:")]
    assert "failed" in allure and "not empty" in allure
    assert kept.read_text() == "mine"


def test_without_a_docker_engine_the_interop_step_is_one_skipped_line(bin_dir: Path, tmp_path: Path) -> None:
    interop = tmp_path / "interop"
    env = bare_env(bin_dir, DOCKER_HOST=f"unix://{tmp_path / 'no-engine.sock'}")
    step = subprocess.run([sys.executable, "-m", "conformance.images.interop_job", "--out", str(interop)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert (step.returncode, step.stdout, step.stderr) == (0, "", "")  # not a failure; the summary says it
    done = finish(bin_dir, tmp_path, "--interop", str(interop))
    assert done.returncode == 0 and "Traceback" not in done.stdout + done.stderr, done.stderr[-3000:]
    lines = [line for line in done.stdout.splitlines() if line.startswith("interop")]
    assert lines == ["interop matrices:  skipped: no docker engine (bash scripts/docker-engine.sh starts one)"]


def test_the_summary_and_the_compliance_page_link_each_interop_matrix(bin_dir: Path, tmp_path: Path) -> None:
    from conformance.finish import interop_pages, link_interop
    interop = tmp_path / "out" / "interop"
    for protocol in ("rsocket", "mc0"):
        (interop / protocol).mkdir(parents=True)
        (interop / protocol / "interop.html").write_text("<html></html>")
    done = finish(bin_dir, tmp_path, "--interop", str(interop))
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [line for line in done.stdout.splitlines() if line.startswith("interop ")]
    assert lines == [f"interop mc0:       {interop / 'mc0' / 'interop.html'} (client x server)",
                     f"interop rsocket:   {interop / 'rsocket' / 'interop.html'} (client x server)"]
    page = tmp_path / "out" / "compliance" / "matrix.html"  # as the compliance report writes it (no Java here)
    page.parent.mkdir(parents=True)
    page.write_text("<html><body><table></table></body></html>")
    link_interop(page, interop_pages(interop))
    link_interop(page, interop_pages(interop))  # once only
    text = page.read_text()
    assert text.count('href="../interop/mc0/interop.html"') == 1 and 'href="../interop/rsocket/interop.html"' in text
    assert text.index("interop-matrices") < text.index("</body>")


def test_the_main_job_runs_the_interop_step_before_the_reports_it_links() -> None:
    script = (ROOT / "scripts" / "main.sh").read_text()
    step = script.index("python -m conformance.images.interop_job --out \"$OUT/interop\"")
    reports = script.index("python -m conformance.finish")
    assert step < reports and '--interop "$OUT/interop"' in script[reports:]
    # between `set +e` and `set -e`: whatever the matrices find, the job goes on to its reports
    assert script.rindex("set +e", 0, step) > script.rfind("set -e", 0, step)
