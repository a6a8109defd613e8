"""The WHERE terms every stored resource's filter is made of: equal columns, and cleared or not."""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy import ColumnElement, Table


def filter_conditions(
    table: Table, equal: Mapping[str, object | None], cleared: bool | None
) -> list[ColumnElement[bool]]:
    """``column = value`` for every value given (None: any), and ``cleared_at`` set (True) or not (False)."""
    conditions = [table.c[column] == value for column, value in equal.items() if value is not None]
    if cleared is not None:
        cleared_at = table.c.cleared_at
        conditions.append(cleared_at.is_not(None) if cleared else cleared_at.is_(None))
    return conditions
