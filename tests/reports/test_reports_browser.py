"""matrix.html opened from disk in headless Chromium, after its script ran."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed: pip install .[report]")

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None and os.environ.get("CI") == "true":
    # CI installs it (scripts/system-deps.sh): a browser test that would skip there is a failure
    pytest.fail("headless Chromium is missing in CI", pytrace=False)
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="headless Chromium is not installed (Debian: apt-get install -y chromium)"
)


def _chromium(url: str, user_data: Path, *extra: str) -> subprocess.CompletedProcess:
    # The background-networking flags keep Chromium from calling out; the page itself is a local file.
    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={user_data}",
        *extra,
        url,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def _artifacts() -> Path:
    folder = Path(os.environ.get("CONFORMANCE_ARTIFACTS") or REPO / "out" / "artifacts")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _row_cases(dom: str, table_id: str) -> list[str]:
    table = re.search(rf'<table[^>]*id="{table_id}".*?</table>', dom, flags=re.S).group(0)
    body = table.split("<tbody>", 1)[1]
    return re.findall(r"<tr><td>[^<]*</td><td>([^<]*)</td>", body)


def test_sorted_view_after_the_script_ran(report, tmp_path: Path) -> None:
    _, out = report
    page = (out / "matrix.html").resolve()
    # Column 4 is alpha's; ascending puts the worst grades first.
    result = _chromium(page.as_uri() + "#sort=matrix-stmp:4:asc", tmp_path / "profile", "--dump-dom")
    assert result.returncode == 0, result.stderr[-2000:]
    dom = result.stdout
    assert re.search(r'<body[^>]*data-js="ready"', dom), "the page script did not run"
    # As written the rows are ordered by family then case; only the script reorders them.
    assert _row_cases(dom, "matrix-stmp") == [
        "stmp/handshake/version-unsupported",  # FAILED
        "stmp/handshake/version-ok",  # ERROR
        "stmp/ping/timeout-info",  # INFORMATIONAL
        "stmp/ping/interval",  # PASSED (tcp)
        "stmp/ping/interval",  # not tested (ws: alpha has no cell)
    ]
    cell = re.search(
        r'<td[^>]*data-impl="alpha" data-case="stmp/handshake/version-unsupported"[^>]*>(.*?)</td>', dom, flags=re.S
    )
    assert 'class="cell g-FAILED"' in cell.group(0)
    assert re.match(r'<a href="https://[^"]+">FAILED</a>', cell.group(1))  # the spec's public page
    assert re.search(r'<th aria-sort="ascending">alpha', dom)


def test_screenshot_of_the_matrix(report, tmp_path: Path) -> None:
    _, out = report
    shot = _artifacts() / "matrix.png"
    shot.unlink(missing_ok=True)
    url = (out / "matrix.html").resolve().as_uri() + "#sort=matrix-stmp:4:asc"
    result = _chromium(url, tmp_path / "profile", f"--screenshot={shot}", "--window-size=1280,900")
    assert result.returncode == 0, result.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1280, 900)
    assert len(data) > 20_000  # a blank page compresses to a few KB


def test_allure_report_opens_from_disk(tmp_path: Path) -> None:
    """The report's index.html is self-contained: opened from disk it shows the run's results."""
    from reports import allure
    from test_reports_allure import _results
    try:
        allure._npx(allure.PROJECT_ROOT)
    except allure.AllureUnavailable as exc:
        pytest.skip(f"Allure 3 CLI not available: {exc}")
    results = _results(tmp_path / "results", "passed")
    allure.generate([results], tmp_path / "report", tmp_path / "history")
    page = tmp_path / "report" / "index.html"
    dom = _chromium(page.as_uri(), tmp_path / "profile", "--virtual-time-budget=8000", "--dump-dom").stdout
    # four results: two passed (one of them tagged NON-STRICT), one failed, one skipped
    assert re.search(r"Total\D{0,200}4", dom), dom[-3000:]
    assert "Failed" in dom and "Passed" in dom
    shot = _artifacts() / "allure-report.png"
    _chromium(page.as_uri(), tmp_path / "profile2", "--virtual-time-budget=8000", f"--screenshot={shot}",
              "--window-size=1280,900")
    assert shot.stat().st_size > 10_000
