"""Shared fixtures: real SQLite files and a real PostgreSQL database per test (see ``postgres.py``)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from recon_pipeline_tests.postgres import postgres_database

# Step retries of provider-bound assets wait seconds in production; tests keep them short.
os.environ.setdefault("RECON_STEP_RETRY_DELAY_S", "0.05")

pytest_plugins = [
    "recon_pipeline_tests.provider_fixtures",  # first: pipeline_fixtures imports it
    "recon_pipeline_tests.pipeline_fixtures",
    "recon_pipeline_tests.report_fixtures",
]


@pytest.fixture(autouse=True)
def recon_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own RECON_HOME, so report files never land in the checkout's ``.recon``."""
    home = tmp_path / "recon_home"
    monkeypatch.setenv("RECON_HOME", str(home))
    return home


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'recon.sqlite'}"


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh, empty PostgreSQL database for one test, dropped afterwards."""
    with postgres_database() as url:
        yield url


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest) -> str:
    """Run the test once on a SQLite file and once on PostgreSQL."""
    fixture = "sqlite_url" if request.param == "sqlite" else "postgres_url"
    return str(request.getfixturevalue(fixture))
