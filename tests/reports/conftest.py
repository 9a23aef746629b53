"""Shared fixtures for the reports tests: one SparkSession and the report over the fixed runs."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from report_fixtures import build_catalogues, build_runs, build_profiles_dir


@pytest.fixture(scope="session", autouse=True)
def jvm_class_archive_cache(tmp_path_factory: pytest.TempPathFactory):
    """The report CLIs the tests start keep their JVM class archive here, not in the user's cache."""
    before = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("cache"))
    yield
    if before is None:
        del os.environ["XDG_CACHE_HOME"]
    else:
        os.environ["XDG_CACHE_HOME"] = before


@pytest.fixture(scope="session")
def spark():
    from reports.spark_session import build_session

    session = build_session("local[2]", shuffle_partitions=2, app_name="reports-tests")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def fixture_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("report-inputs")
    build_runs(root)
    build_catalogues(root)
    build_profiles_dir(root)
    return root


@pytest.fixture(scope="session")
def report(spark, fixture_root: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    """The pipeline run once over all fixture runs with baseline a1 (by folder)."""
    from reports.pipeline import ReportOptions, run_report

    out = tmp_path_factory.mktemp("report-out")
    options = ReportOptions(
        inputs=[str(fixture_root / "runs")],
        out=out,
        baseline=str(fixture_root / "runs" / "a1"),
        requirements_dir=fixture_root / "requirements",
        profiles_dir=fixture_root / "docs" / "profiles",
    )
    return run_report(spark, options), out
