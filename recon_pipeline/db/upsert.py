"""``INSERT … ON CONFLICT`` for both dialects, reporting how many rows were really new."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, Table
from sqlalchemy.dialects import postgresql, sqlite


def dialect_insert(connection: Connection, table: Table) -> Any:
    """The dialect's own INSERT construct, the one that knows ON CONFLICT."""
    dialect = connection.dialect.name
    if dialect == "postgresql":
        return postgresql.insert(table)
    if dialect == "sqlite":
        return sqlite.insert(table)
    raise ValueError(f"no ON CONFLICT support for dialect {dialect!r}")


def insert_new(
    connection: Connection,
    table: Table,
    rows: Sequence[Mapping[str, Any]],
    conflict_columns: Sequence[str],
) -> int:
    """Insert ``rows``, silently skipping those whose ``conflict_columns`` already exist.

    Returns the number of rows inserted; ``len(rows) - inserted`` were duplicates suppressed by the
    database itself, which is what makes a concurrent or repeated writer safe.
    """
    return len(inserted_keys(connection, table, rows, conflict_columns))


def inserted_keys(
    connection: Connection,
    table: Table,
    rows: Sequence[Mapping[str, Any]],
    conflict_columns: Sequence[str],
) -> list[Any]:
    """As ``insert_new``, returning the first conflict column of each row that was really inserted."""
    if not rows:
        return []
    statement = (
        dialect_insert(connection, table)
        .on_conflict_do_nothing(index_elements=list(conflict_columns))
        .returning(table.c[conflict_columns[0]])
    )
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
    statement = dialect_insert(connection, table)
    statement = statement.on_conflict_do_update(
        index_elements=list(conflict_columns),
        set_={name: statement.excluded[name] for name in update_columns},
    )
    connection.execute(statement, list(rows))
