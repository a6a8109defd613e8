"""Shared fixtures: real SQLite files and a real PostgreSQL database per test.

PostgreSQL tests fail instead of skipping when ``RECON_REQUIRE_POSTGRES=1`` (set by ``.ci/run``), so CI
can never pass by not running them.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

# Step retries of provider-bound assets wait seconds in production; tests keep them short.
os.environ.setdefault("RECON_STEP_RETRY_DELAY_S", "0.05")

pytest_plugins = ["recon_pipeline_tests.pipeline_fixtures", "recon_pipeline_tests.provider_fixtures"]

ADMIN_URL = os.environ.get("RECON_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")


def _postgres_unavailable(reason: str) -> None:
    if os.environ.get("RECON_REQUIRE_POSTGRES") == "1":
        pytest.fail(f"PostgreSQL is required here but unavailable: {reason}")
    pytest.skip(f"PostgreSQL unavailable: {reason}")


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'recon.sqlite'}"


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh, empty PostgreSQL database for one test, dropped afterwards."""
    name = f"recon_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(ADMIN_URL, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            connection.execute(text(f'CREATE DATABASE "{name}"'))
    except Exception as error:  # noqa: BLE001 - any connection failure means "no PostgreSQL"
        admin.dispose()
        _postgres_unavailable(str(error).splitlines()[0])
    yield make_url(ADMIN_URL).set(database=name).render_as_string(hide_password=False)
    with admin.connect() as connection:
        connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest) -> str:
    """Run the test once on a SQLite file and once on PostgreSQL."""
    fixture = "sqlite_url" if request.param == "sqlite" else "postgres_url"
    return str(request.getfixturevalue(fixture))
