"""Long work shows its stages: a redrawn status line on a terminal, plain lines in CI."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from reports.progress import Stages, interactive


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_plain_lines_when_not_a_terminal() -> None:
    out = io.StringIO()
    stages = Stages(2, "matrix", out)
    stages.step("acme x stmp")
    stages.step("acme x mc0")
    stages.finish()
    lines = out.getvalue().splitlines()
    assert lines[:2] == ["[1/2] matrix: acme x stmp", "[2/2] matrix: acme x mc0"]
    assert lines[2].startswith("matrix: 2 stages in ") and "\r" not in out.getvalue()


def test_a_terminal_gets_one_status_line_redrawn_and_cleared(monkeypatch, capsys) -> None:
    monkeypatch.delenv("CI", raising=False)
    term = _Terminal()
    stages = Stages(2, "images build", term)
    assert stages.live
    stages.step("base image")
    stages.line("built base")  # the job's own output clears the status line first
    stages.step("packages")
    stages.finish()
    assert term.getvalue() == ("\r\x1b[K[1/2] images build: base image ...\r\x1b[K"
                               "\r\x1b[K[2/2] images build: packages ...\r\x1b[K")
    assert capsys.readouterr().out == "built base\n"


def test_ci_means_plain_lines_even_on_a_terminal(monkeypatch) -> None:
    monkeypatch.setenv("CI", "true")
    assert not interactive(_Terminal())


def test_image_build_names_each_stage(monkeypatch, tmp_path: Path) -> None:
    from conformance.images import build
    from conformance.images.results import BuildOutcome

    def outcome(name: str) -> BuildOutcome:
        return BuildOutcome(what=name, action="reused", seconds=0.0)

    class Client:
        def close(self) -> None:
            pass
    wheel = tmp_path / "p-1-py3-none-any.whl"
    wheel.write_bytes(b"")
    monkeypatch.setattr(build, "docker_client", Client)
    monkeypatch.setattr(build, "ensure_base_image", lambda client, force, log: ("base", "h", outcome("base")))
    monkeypatch.setattr(build, "ensure_packages", lambda reqs, force, log: ("pkgs", outcome("packages")))
    monkeypatch.setattr(build, "image_requirements", lambda path: [])
    monkeypatch.setattr(build, "available_peers", lambda project_dir, protocols: [])
    monkeypatch.setattr(build, "build_project_wheel", lambda project_dir, folder: wheel)
    monkeypatch.setattr(build, "wheel_content_hash", lambda path: "0" * 64)
    monkeypatch.setattr(build, "ensure_reference_image", lambda client, protocol, **kw: outcome(protocol))
    stderr = io.StringIO()
    monkeypatch.setattr("sys.stderr", stderr)
    build.build_images(["stmp", "mc0"], project_dir=tmp_path, log=lambda line: None)
    steps = [line for line in stderr.getvalue().splitlines() if line.startswith("[")]
    assert steps == ["[1/5] images build: base image", "[2/5] images build: packages",
                     "[3/5] images build: project wheel", "[4/5] images build: reference image stmp",
                     "[5/5] images build: reference image mc0"]


def test_the_matrix_names_each_pair_as_a_stage(monkeypatch, tmp_path: Path) -> None:
    from conformance.images import matrix
    from conformance.images.implementations import Implementation

    def pair(impl, protocol, out, keyword, timeout, say):
        say(f"   {impl.name} x {protocol} attempt 1: passed")
        return {"implementation": impl.name, "protocol": protocol, "outcome": "passed", "attempts": []}
    monkeypatch.setattr(matrix, "_run_pair", pair)
    monkeypatch.setattr(matrix, "print_summary", lambda document, out: None)
    stderr = io.StringIO()
    monkeypatch.setattr("sys.stderr", stderr)
    impls = [Implementation("acme", "acme:1", "external", ("stmp", "mc0")),
             Implementation("beta", "beta:1", "external", ("stmp",))]
    assert matrix.run_matrix(impls, tmp_path) == 0
    steps = [line for line in stderr.getvalue().splitlines() if line.startswith("[")]
    assert steps == ["[1/3] matrix: acme x stmp", "[2/3] matrix: acme x mc0", "[3/3] matrix: beta x stmp"]
