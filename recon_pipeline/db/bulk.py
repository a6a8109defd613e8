"""Bulk ``INSERT … ON CONFLICT DO NOTHING`` on PostgreSQL: COPY into a staging table, then one INSERT.

SQLAlchemy's batched ``VALUES`` path costs about 50 µs of client CPU per row (parameter rendering and
type processing in Python); COPY streams the rows in binary through psycopg 3's ``cursor.copy`` and lets
the server do the rest, which is what makes 100,000 adjustments, or a replay of them that inserts
nothing, a matter of seconds (``benchmarks/writer.py``). The database's unique keys still decide what is
new: the staging table only carries the rows to the same ``INSERT … SELECT … ON CONFLICT DO NOTHING`` a
small batch would run.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, cast

import psycopg
from psycopg import sql
from sqlalchemy import Connection, Table

# Below this many rows the plain multi-row INSERT is as fast and needs no staging table.
BULK_MIN_ROWS = 500


def supports_copy(connection: Connection) -> bool:
    """COPY FROM STDIN through psycopg 3, the driver ``make_engine`` uses for PostgreSQL."""
    return connection.dialect.name == "postgresql" and connection.dialect.driver == "psycopg"


def copy_insert_new(
    connection: Connection, table: Table, rows: Sequence[Mapping[str, Any]], key_column: str
) -> list[Any]:
    """Insert ``rows`` (all with the same keys) skipping any that clash on a unique key; the
    ``key_column`` of each row really inserted."""
    columns = list(rows[0])
    names = ", ".join(f'"{name}"' for name in columns)
    stage = f"recon_stage_{uuid.uuid4().hex[:16]}"
    connection.exec_driver_sql(f'CREATE TEMPORARY TABLE {stage} (LIKE "{table.name}" INCLUDING DEFAULTS)')
    copy = sql.SQL("COPY {} ({}) FROM STDIN (FORMAT BINARY)").format(
        sql.Identifier(stage), sql.SQL(", ").join(map(sql.Identifier, columns))
    )
    driver = cast(psycopg.Connection[Any], connection.connection.dbapi_connection)
    with driver.cursor() as cursor, cursor.copy(copy) as stream:
        # Binary COPY: the server parses nothing, psycopg writes each value as its column's type.
        stream.set_types([table.c[name].type.compile(dialect=connection.dialect).lower() for name in columns])
        for values in _bound(table, columns, rows, connection):
            stream.write_row(values)
    inserted = connection.exec_driver_sql(
        # The anti-join skips what is already there in one hash join (a replay costs a scan, not 100,000
        # speculative inserts); ON CONFLICT still settles rows a concurrent writer commits meanwhile.
        f'INSERT INTO "{table.name}" ({names}) SELECT {names} FROM {stage} AS staged '
        f'WHERE NOT EXISTS (SELECT 1 FROM "{table.name}" AS present '
        f'WHERE present."{key_column}" = staged."{key_column}") '
        f'ON CONFLICT DO NOTHING RETURNING "{key_column}"'
    )
    keys = list(inserted.scalars())
    connection.exec_driver_sql(f"DROP TABLE {stage}")
    return keys


def _bound(
    table: Table, columns: list[str], rows: Sequence[Mapping[str, Any]], connection: Connection
) -> Iterator[list[Any]]:
    """Each row's values in ``columns`` order, through its column type's bind processing (so the UTC
    type still refuses naive timestamps); psycopg adapts what comes out."""
    processors = [table.c[name].type.bind_processor(connection.dialect) for name in columns]
    for row in rows:
        yield [
            value if process is None or value is None else process(value)
            for value, process in zip((row[name] for name in columns), processors, strict=True)
        ]
