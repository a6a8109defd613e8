"""The WHERE terms every stored resource's filter is made of: equal columns, cleared or not, and a column
among many values (``one_of``) or among the ids a lookup finds (``among``)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from sqlalchemy import ARRAY, Boolean, ColumnElement, CompoundSelect, Select, Table, any_, bindparam, func
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.visitors import InternalTraversal


def filter_conditions(
    table: Table, equal: Mapping[str, object | None], cleared: bool | None
) -> list[ColumnElement[bool]]:
    """``column = value`` for every value given (None: any), and ``cleared_at`` set (True) or not (False)."""
    conditions = [table.c[column] == value for column, value in equal.items() if value is not None]
    if cleared is not None:
        cleared_at = table.c.cleared_at
        conditions.append(cleared_at.is_not(None) if cleared else cleared_at.is_(None))
    return conditions


def one_of(column: ColumnElement[Any], values: Collection[Any]) -> ColumnElement[bool]:
    """``column`` is one of ``values``; on PostgreSQL ``column = ANY(:values)``, one array parameter
    rather than one per value: a user of 2,000 properties otherwise costs every statement 2,000 bound
    parameters to render and send, most of a light page's time in the desk's process."""
    listed = list(values)  # each spelling one parameter, built without coercing value by value
    array = bindparam(None, listed, type_=ARRAY(column.type))
    return _OnPostgres(column == any_(array), column.in_(bindparam(None, listed, expanding=True)))


def among(column: ColumnElement[Any], lookup: Select[Any] | CompoundSelect[Any]) -> ColumnElement[bool]:
    """``column`` is one of the ids ``lookup`` selects; on PostgreSQL ``column = ANY(ARRAY(lookup))``: the
    lookup runs once (an InitPlan) and the rows are read by ``column``'s index, however many the planner
    guesses the lookup finds. As ``column IN (lookup)`` it may guess thousands (a table not analysed yet)
    and join the lookup to a scan of every row instead."""
    return _OnPostgres(column == any_(func.array(lookup.scalar_subquery())), column.in_(lookup))


class _OnPostgres(ColumnElement[bool]):
    """``postgres`` on PostgreSQL, ``otherwise`` on any other database (SQLite): one condition, two
    spellings."""

    inherit_cache = True
    type = Boolean()
    _traverse_internals = [
        ("postgres", InternalTraversal.dp_clauseelement),
        ("otherwise", InternalTraversal.dp_clauseelement),
    ]

    def __init__(self, postgres: ColumnElement[bool], otherwise: ColumnElement[bool]) -> None:
        self.postgres = postgres
        self.otherwise = otherwise

    def self_group(self, against: Any = None) -> ColumnElement[Any]:
        """Itself: a comparison already, not a boolean value a database without one compares with 1."""
        return self


@compiles(_OnPostgres)
def _otherwise(element: _OnPostgres, compiler: SQLCompiler, **kw: Any) -> str:
    return compiler.process(element.otherwise, **kw)


@compiles(_OnPostgres, "postgresql")
def _postgres(element: _OnPostgres, compiler: SQLCompiler, **kw: Any) -> str:
    return compiler.process(element.postgres, **kw)
