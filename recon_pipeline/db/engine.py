"""Engines for the reconciliation database: SQLite for the embedded default, PostgreSQL through psycopg 3."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

from recon_pipeline.errors import ConfigError, ServiceUnavailable

SQLITE_BUSY_TIMEOUT_MS = 30_000


def make_engine(url: str, pool_size: int = 5, pre_ping: bool = True) -> Engine:
    """An engine for ``url``; SQLite gets WAL and a busy timeout so readers and one writer coexist.

    A plain ``postgresql://`` URL uses psycopg 3, our one PostgreSQL driver (its ``cursor.copy`` is the
    bulk path of ``db/bulk.py``), whichever default the installed SQLAlchemy has. ``pre_ping=False`` saves
    a round trip per checkout where a failed transaction is answered with a retryable error anyway.
    """
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):  # ValueError: a port that is not a number
        raise ConfigError("RECON_DATABASE_URL is not a valid SQLAlchemy URL") from None
    if parsed.get_backend_name() == "sqlite":
        return _sqlite_engine(url, parsed.database)
    if parsed.get_backend_name() != "postgresql":
        raise ConfigError(
            f"RECON_DATABASE_URL: unsupported database backend {parsed.get_backend_name()!r}: "
            "use sqlite or postgresql"
        )
    if parsed.drivername == "postgresql":
        parsed = parsed.set(drivername="postgresql+psycopg")
    return create_engine(parsed, pool_size=pool_size, max_overflow=pool_size, pool_pre_ping=pre_ping)


def database_failure(error: SQLAlchemyError, url: str) -> ServiceUnavailable:
    """One line for a database that refused or failed a command: the URL with its password hidden, and
    the driver's first line (which names the host, never the password)."""
    shown = make_url(url).render_as_string(hide_password=True)
    reason = (str(getattr(error, "orig", None) or "").strip().splitlines() or [type(error).__name__])[0]
    return ServiceUnavailable(f"cannot use the database at RECON_DATABASE_URL={shown}: {reason}")


def _sqlite_engine(url: str, database: str | None) -> Engine:
    if database and database != ":memory:":
        try:
            Path(database).parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise ConfigError(f"RECON_DATABASE_URL: cannot create the SQLite folder: {error}") from None
    engine = create_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000})

    @event.listens_for(engine, "connect")
    def _pragmas(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.close()

    return engine
