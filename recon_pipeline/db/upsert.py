"""``INSERT … ON CONFLICT`` for both dialects, reporting how many rows were really new.

On PostgreSQL the rows of one call travel as one array per column, unnested by the server (``INSERT …
SELECT unnest(:a), unnest(:b) …``): one short statement whatever the number of rows. The multi-row
``VALUES`` form costs the client a parse of a statement as long as the rows (psycopg caches only short
ones), which was most of a batch's write; SQLite parses in C and keeps it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from sqlalchemy import Connection, Table, bindparam, func, select
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
    dialect, columns = connection.dialect.name, tuple(rows[0])
    statement = _statement(dialect, table, columns, None, (key_columns[0],))
    return list(connection.execute(statement, _parameters(dialect, columns, rows)).scalars())


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
    dialect, columns = connection.dialect.name, tuple(rows[0])
    statement = _statement(dialect, table, columns, (tuple(conflict_columns), tuple(update_columns)), ())
    connection.execute(statement, _parameters(dialect, columns, rows))


@lru_cache(maxsize=64)
def _statement(
    dialect: str,
    table: Table,
    columns: tuple[str, ...],
    update: tuple[tuple[str, ...], tuple[str, ...]] | None,
    returning: tuple[str, ...],
) -> Any:
    """The INSERT of ``columns`` with its ON CONFLICT (DO NOTHING, or DO UPDATE of ``update``'s columns on
    its conflict target), built once per table and columns: its ``excluded`` alias proxies every column of
    the table, which costs more than a batch's rows to bind. On PostgreSQL it selects from the columns'
    arrays (``_parameters``)."""
    statement = _dialect_insert(dialect, table)
    if dialect == "postgresql":
        arrays = [
            func.unnest(bindparam(_array(name), type_=postgresql.ARRAY(table.c[name].type))).label(name)
            for name in columns
        ]
        statement = statement.from_select(list(columns), select(*arrays))
    if update is None:
        statement = statement.on_conflict_do_nothing()
    else:
        conflict_columns, update_columns = update
        excluded = statement.excluded
        statement = statement.on_conflict_do_update(
            index_elements=list(conflict_columns), set_={name: excluded[name] for name in update_columns}
        )
    return statement.returning(*(table.c[name] for name in returning)) if returning else statement


def _parameters(
    dialect: str, columns: tuple[str, ...], rows: Sequence[Mapping[str, Any]]
) -> dict[str, Any] | list[dict[str, Any]]:
    """The rows as ``_statement`` binds them: one array per column on PostgreSQL, else the rows (one row
    as a plain execute: the executemany path costs more than the insert itself)."""
    if dialect == "postgresql":
        return {_array(name): [row[name] for row in rows] for name in columns}
    return dict(rows[0]) if len(rows) == 1 else [dict(row) for row in rows]


def _array(name: str) -> str:
    return f"{name}_values"
