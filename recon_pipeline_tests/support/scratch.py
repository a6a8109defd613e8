"""Throwaway PostgreSQL databases for tests and benchmarks: created empty, dropped afterwards (test
support, kept out of the package; the benchmarks use it too)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

DEFAULT_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/test"


@contextmanager
def scratch_database(admin_url: str, prefix: str) -> Iterator[str]:
    """A new, empty database on ``admin_url``'s server (its URL), dropped with its connections afterwards.

    Raises whatever the driver raises when the server is unreachable; callers decide what that means.
    """
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            connection.execute(text(f'CREATE DATABASE "{name}"'))
        try:
            yield make_url(admin_url).set(database=name).render_as_string(hide_password=False)
        finally:
            with admin.connect() as connection:
                connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()
