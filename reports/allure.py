"""Generate the Allure 3 HTML report, with history and trend across runs.

The Allure 3 CLI is the npm package ``allure``, installed into the project's
node_modules by ``npm ci`` (package.json / package-lock.json in the repo
root) and run with ``npx --no-install allure`` so nothing is fetched at
report time. Allure 3 keeps history in one JSON-lines file named by
``historyPath`` in its config; every generation appends the run to it and
draws the trend from it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
HISTORY_FILE = "history.jsonl"
GENERATE_TIMEOUT_S = 600

# The suite fails FAILED/ERROR cases with "<exception type>: FAILED: ..." and
# skips UNSUPPORTED ones with "Skipped: UNSUPPORTED: ..."; the prefix is
# allowed so the categories match either form.
_PREFIX = r"(?:[\w.]+: )?"

# categories.json is the Allure 2 format (read by the classic/allure2 plugins;
# Java regexes that must match the whole message).
ALLURE2_CATEGORIES = [
    {"name": "FAILED: breaks a MUST", "matchedStatuses": ["failed"], "messageRegex": rf"(?s){_PREFIX}FAILED\b.*"},
    {
        "name": "NON-STRICT: breaks a SHOULD",
        "matchedStatuses": ["failed", "unknown"],
        "messageRegex": rf"(?s){_PREFIX}NON-STRICT\b.*",
    },
    {
        "name": "ERROR: the case could not run",
        "matchedStatuses": ["failed", "broken"],
        "messageRegex": rf"(?s){_PREFIX}ERROR\b.*",
    },
    {
        "name": "UNSUPPORTED: feature declared not implemented",
        "matchedStatuses": ["skipped"],
        "messageRegex": rf"(?s){_PREFIX}UNSUPPORTED\b.*",
    },
    {
        "name": "NOT-APPLICABLE: the target offers no endpoint for it",
        "matchedStatuses": ["skipped"],
        "messageRegex": rf"(?s){_PREFIX}NOT-APPLICABLE\b.*",
    },
    {
        "name": "INFORMATIONAL: observed, the spec leaves it open",
        "matchedStatuses": ["unknown"],
        "messageRegex": rf"(?s){_PREFIX}INFORMATIONAL\b.*",
    },
]

# Allure 3's own report: one category per grade that is not PASSED, found by the "grade" label
# the suite gives every case (conformance/allure_view.py), so grades that share an Allure status
# (INFORMATIONAL and NON-STRICT are "unknown", UNSUPPORTED and NOT-APPLICABLE "skipped") still
# show apart.
_GRADE_CATEGORIES = [
    ("FAILED", "FAILED: breaks a MUST"),
    ("ERROR", "ERROR: the case could not run"),
    ("NON-STRICT", "NON-STRICT: breaks a SHOULD"),
    ("INFORMATIONAL", "INFORMATIONAL: observed, the spec leaves it open"),
    ("UNSUPPORTED", "UNSUPPORTED: feature declared not implemented"),
    ("NOT-APPLICABLE", "NOT-APPLICABLE: the target offers no endpoint for it"),
]
ALLURE3_CATEGORIES = {
    "rules": [{"name": name, "matchers": {"labels": {"grade": f"^{grade}$"}}} for grade, name in _GRADE_CATEGORIES]
}


class AllureUnavailable(RuntimeError):
    """npx or the project's local Allure 3 CLI is missing."""


class AllureFailed(RuntimeError):
    pass


def _npx(project_root: Path) -> list[str]:
    npx = shutil.which("npx")
    if npx is None:
        raise AllureUnavailable("npx not found: install Node.js (with npm), then run `npm ci` in " + str(project_root))
    probe = subprocess.run(
        [npx, "--no-install", "allure", "--version"], cwd=project_root, capture_output=True, text=True, timeout=120
    )
    if probe.returncode != 0:
        raise AllureUnavailable(
            f"the Allure 3 CLI is not installed in {project_root}/node_modules: run `npm ci` there "
            f"(npx said: {probe.stderr.strip()[-300:]})"
        )
    return [npx, "--no-install", "allure"]


def write_categories(results_dir: Path) -> Path:
    path = results_dir / "categories.json"
    path.write_text(json.dumps(ALLURE2_CATEGORIES, indent=2) + "\n", encoding="utf-8")
    return path


def _matrix_link(matrix_page: str | None, out_dir: Path) -> str | None:
    if matrix_page is None or "://" in matrix_page:
        return matrix_page
    return os.path.relpath(Path(matrix_page).resolve(), out_dir.resolve())


def _run_environment(results_dirs: list[Path]) -> dict[str, str]:
    """The runs' environment.properties entries (still escaped), the values of several runs joined.

    Allure keeps only the last environment file it reads, so the report's own file carries the
    runs' entries too.
    """
    merged: dict[str, list[str]] = {}
    for folder in results_dirs:
        path = folder / "environment.properties"
        if not path.is_file():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            key, sep, value = line.partition("=")
            if sep and key.strip() and not key.lstrip().startswith(("#", "!")):
                values = merged.setdefault(key.strip(), [])
                if value not in values:
                    values.append(value)
    return {key: ", ".join(values) for key, values in merged.items()}


def _report_metadata(folder: Path, matrix_link: str | None, report_name: str,
                     results_dirs: list[Path] = ()) -> None:
    """executor.json and environment.properties, in a results folder of their own.

    Kept out of the runs' folders so a run's own environment file is never overwritten.
    """
    executor = {"name": "conformance report", "type": "conformance", "reportName": report_name}
    if matrix_link:
        executor["reportUrl"] = matrix_link
        executor["buildName"] = "compliance matrix"
        executor["buildUrl"] = matrix_link
    (folder / "executor.json").write_text(json.dumps(executor, indent=2) + "\n", encoding="utf-8")
    environment = _run_environment(list(results_dirs))
    if matrix_link:
        # Properties files escape ':' and '=' in values with a backslash.
        environment["compliance-matrix"] = matrix_link.replace("\\", "\\\\").replace(":", "\\:").replace("=", "\\=")
    if environment:
        (folder / "environment.properties").write_text(
            "".join(f"{key}={value}\n" for key, value in environment.items()), encoding="utf-8")


# Allure's report pages load Google's tag manager; a published conformance
# report should not make its readers' browsers call a third party.
_ANALYTICS_TAG = re.compile(r'<script async src="https://www\.googletagmanager\.com/[^"]*"></script>\s*')


def _strip_analytics(out_dir: Path) -> None:
    for page in [*out_dir.glob("*.html"), *out_dir.glob("*/index.html")]:
        text = page.read_text(encoding="utf-8")
        cleaned = _ANALYTICS_TAG.sub("", text)
        if cleaned != text:
            page.write_text(cleaned, encoding="utf-8")


def _clear_previous_report(out_dir: Path) -> None:
    """Allure 3 nests a new report beside an old one in a non-empty folder, so replace it whole."""
    if not out_dir.exists() or not any(out_dir.iterdir()):
        return
    if not ((out_dir / "index.html").is_file() and (out_dir / "summary.json").is_file()):
        raise FileExistsError(f"{out_dir} is not empty and holds no Allure report: refusing to replace it")
    shutil.rmtree(out_dir)


def generate(
    results_dirs: list[Path],
    out_dir: Path,
    history_dir: Path,
    matrix_page: str | None = None,
    report_name: str = "Conformance suite",
    project_root: Path = PROJECT_ROOT,
) -> Path:
    """Generate the report into out_dir, appending this generation to history_dir's history.

    matrix_page: the compliance matrix (a path, linked relative to the report, or a URL).
    Returns the report's index.html: one self-contained page that opens from disk (file://)
    as well as from a web server.
    """
    command = _npx(project_root)
    results_dirs = [Path(d).resolve() for d in results_dirs]
    for folder in results_dirs:
        if not folder.is_dir():
            raise FileNotFoundError(f"allure results folder {folder} does not exist")
        write_categories(folder)
    out_dir = Path(out_dir).resolve()
    _clear_previous_report(out_dir)
    history_dir = Path(history_dir).resolve()
    history_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="allure-meta-") as scratch:
        meta = Path(scratch) / "results"
        meta.mkdir()
        _report_metadata(meta, _matrix_link(matrix_page, out_dir), report_name, results_dirs)
        config = Path(scratch) / "allurerc.json"
        config.write_text(
            json.dumps(
                {
                    "name": report_name,
                    "output": str(out_dir),
                    "historyPath": str(history_dir / HISTORY_FILE),
                    "categories": ALLURE3_CATEGORIES,
                    # One page holding its data: the multi-file report fetches its data, which
                    # browsers refuse to a page opened from disk, so it would spin forever there.
                    "plugins": {"awesome": {"options": {
                        "singleFile": True, "reportName": report_name,
                        # the tree: protocol / case family / case (conformance/allure_view.py)
                        "groupBy": ["parentSuite", "suite", "subSuite"],
                    }}},
                },
                indent=2,
            ),
            encoding="utf-8",
        )
        run = subprocess.run(
            [
                *command,
                "generate",
                "--config",
                str(config),
                "--output",
                str(out_dir),
                *map(str, results_dirs),
                str(meta),
            ],
            cwd=project_root,
            capture_output=True,
            text=True,
            timeout=GENERATE_TIMEOUT_S,
            env={**os.environ, "ALLURE_NO_ANALYTICS": "true"},
        )
    index = out_dir / "index.html"
    if run.returncode != 0 or not index.is_file():
        raise AllureFailed(f"allure generate exited {run.returncode}: {(run.stderr or run.stdout).strip()[-2000:]}")
    _strip_analytics(out_dir)
    return index
