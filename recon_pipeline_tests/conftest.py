"""Shared fixtures: real SQLite files and a real PostgreSQL database per test (see ``postgres.py``), and
the test tiers: every test not marked ``postgres`` or ``slow`` is marked ``fast``, so a new test lands in
the fast tier (``pytest -m fast``) unless it says otherwise."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine

from recon_pipeline_tests.support.migrated import migrated_engine
from recon_pipeline_tests.support.postgres import postgres_database

# Step retries of provider-bound assets wait seconds in production; tests keep them short.
os.environ.setdefault("RECON_STEP_RETRY_DELAY_S", "0.05")

pytest_plugins = [
    "pytester",  # test_tiers.py runs pytest on small test files
    "recon_pipeline_tests.support.provider_fixtures",  # before pipeline_fixtures, which imports it
    "recon_pipeline_tests.support.dagster_processes",
    "recon_pipeline_tests.support.pipeline_fixtures",
    "recon_pipeline_tests.support.report_fixtures",
]


TIERS_OUTSIDE_FAST = ("postgres", "slow")
POSTGRES_FIXTURES = ("postgres_url", "pg_dagster_world")
# A Dagster run of the reconciliation assets costs seconds: a test that reconciles a night through one of
# these is in the slow tier (marking it by hand would be forgotten in the next such test).
DAGSTER_RUN_FIXTURES = ("seeded_pipeline", "provider_pipeline", "clean_pipeline", "reported_nights")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark ``postgres`` every test that uses a PostgreSQL fixture, ``slow`` every test that reconciles
    through Dagster, and ``fast`` every test that is neither."""
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        for marker, tier_fixtures in (("postgres", POSTGRES_FIXTURES), ("slow", DAGSTER_RUN_FIXTURES)):
            if any(name in fixtures for name in tier_fixtures) and item.get_closest_marker(marker) is None:
                item.add_marker(marker)
        if not any(item.get_closest_marker(name) for name in TIERS_OUTSIDE_FAST):
            item.add_marker(pytest.mark.fast)


@pytest.fixture(autouse=True)
def recon_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own RECON_HOME, so report files never land in the checkout's ``.recon``."""
    home = tmp_path / "recon_home"
    monkeypatch.setenv("RECON_HOME", str(home))
    return home


RAM_DISK = Path("/dev/shm")


@pytest.fixture
def sqlite_url(tmp_path: Path) -> Iterator[str]:
    """A SQLite file for one test, on the RAM disk where there is one: creating the schema takes ~0.06 s
    there and ~0.2 s on disk (fsync per DDL commit), and the fast tier creates hundreds of them."""
    if not RAM_DISK.is_dir():
        yield f"sqlite:///{tmp_path / 'recon.sqlite'}"
        return
    with tempfile.TemporaryDirectory(dir=RAM_DISK, prefix="recon_test_") as folder:
        yield f"sqlite:///{Path(folder) / 'recon.sqlite'}"


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


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    """An engine on ``database_url`` migrated to head, disposed afterwards. A module that runs on one
    backend only narrows ``database_url`` (``def database_url(postgres_url)``) rather than copy this."""
    engine = migrated_engine(database_url)
    yield engine
    engine.dispose()
