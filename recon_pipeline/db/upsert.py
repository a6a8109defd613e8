"""``INSERT … ON CONFLICT`` for both dialects, reporting how many rows were really new."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from sqlalchemy import Connection, Table
from sqlalchemy.dialects import postgresql, sqlite

from recon_pipeline.db.bulk import BULK_MIN_ROWS, copy_insert_new, supports_copy


def dialect_insert(connection: Connection, table: Table) -> Any:
    """The dialect's own INSERT construct, the one that knows ON CONFLICT."""
    return _dialect_insert(connection.dialect.name, table)


def _dialect_insert(dialect: str, table: Table) -> Any:
    if dialect == "postgresql":
        return postgresql.insert(table)
    if dialect == "sqlite":
        return sqlite.insert(table)
    raise ValueError(f"no ON CONFLICT support for dialect {dialect!r}")


def insert_new(
    connection: Connection,
    table: Table,
    rows: Sequence[Mapping[str, Any]],
    key_columns: Sequence[str],
) -> int:
    """Insert ``rows``, silently skipping those whose business key (``key_columns``) already exists.

    Returns the number of rows inserted; ``len(rows) - inserted`` were duplicates suppressed by the
    database itself, which is what makes a concurrent or repeated writer safe.

    The ``ON CONFLICT DO NOTHING`` names no conflict target, so a clash on any unique key skips the row.
    Every unique key of these tables derives from the business key (``adjustments``: ``adjustment_id`` is
    a hash of ``idempotency_key``). With a target, PostgreSQL arbitrates only that index: two writers
    inserting the same row at once then meet on the other one, and the later fails with a unique violation
    instead of skipping (seen as ``adjustments_pkey`` when four runs wrote one partition at once).
    """
    return len(inserted_keys(connection, table, rows, key_columns))


def inserted_keys(
    connection: Connection,
    table: Table,
    rows: Sequence[Mapping[str, Any]],
    key_columns: Sequence[str],
) -> list[Any]:
    """As ``insert_new``, returning the first key column of each row that was really inserted (large
    batches on PostgreSQL go through COPY, see ``db/bulk.py``)."""
    if not rows:
        return []
    if len(rows) >= BULK_MIN_ROWS and supports_copy(connection):
        return copy_insert_new(connection, table, rows, key_columns[0])
    statement = dialect_insert(connection, table).on_conflict_do_nothing().returning(table.c[key_columns[0]])
    # One row runs as a plain execute: the executemany path costs more than the insert itself.
    parameters = dict(rows[0]) if len(rows) == 1 else list(rows)
    return list(connection.execute(statement, parameters).scalars())


def upsert(
    connection: Connection,
    table: Table,
    rows: Sequence[Mapping[str, Any]],
    conflict_columns: Sequence[str],
    update_columns: Sequence[str],
) -> None:
    """Insert ``rows`` or overwrite only ``update_columns`` of the existing row with the same key."""
    if not rows:
        return
    statement = _upsert_statement(
        connection.dialect.name, table, tuple(conflict_columns), tuple(update_columns)
    )
    connection.execute(statement, list(rows))


@lru_cache(maxsize=32)
def _upsert_statement(
    dialect: str, table: Table, conflict_columns: tuple[str, ...], update_columns: tuple[str, ...]
) -> Any:
    """The dialect's ``INSERT … ON CONFLICT DO UPDATE`` of ``table``, built once: its ``excluded`` alias
    proxies every column of the table, which costs more than a batch's rows to bind."""
    statement = _dialect_insert(dialect, table)
    excluded = statement.excluded
    return statement.on_conflict_do_update(
        index_elements=list(conflict_columns), set_={name: excluded[name] for name in update_columns}
    )
