"""Paging the desk's lists: which page a request asks for, and how many rows match in all.

A list's page is its one statement with an offset (``findings_statement``, ``queue_statement``,
``payouts_statement``, ``nights.chosen_statement``), so what a page shows and what its count counts can
never differ: the count wraps the same statement, already narrowed to the user's properties. Each
statement orders by a total key (ties broken by the primary key), so pages never overlap or skip rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy import Connection, Select, func, select

MAX_PAGE: Final = 100_000  # beyond any real list (200 × 100,000 rows); bounds the offset a URL can ask


def parse_page(params: Any) -> int:
    """The ``page`` query parameter: 1 when absent, else a whole number from 1 to ``MAX_PAGE``
    (ValueError naming it otherwise)."""
    raw = params.get("page", "").strip()
    if not raw:
        return 1
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 6 and 1 <= int(raw) <= MAX_PAGE):
        raise ValueError(f"page {raw!r} is not a whole number from 1 to {MAX_PAGE:,}")
    return int(raw)


def offset_of(number: int, size: int) -> int:
    """The rows before page ``number`` of ``size`` rows."""
    return (number - 1) * size


def count_rows(connection: Connection, statement: Select[Any]) -> int:
    """How many rows ``statement`` matches, whatever its order, limit and offset: one COUNT query."""
    matching = statement.order_by(None).limit(None).offset(None).subquery()
    return int(connection.execute(select(func.count()).select_from(matching)).scalar_one())


@dataclass(frozen=True)
class Page:
    """Page ``number`` (1-based) of ``size`` rows among ``total`` matching ones."""

    number: int
    size: int
    total: int

    @property
    def offset(self) -> int:
        return offset_of(self.number, self.size)

    @property
    def last_number(self) -> int:
        """The last page holding a row (1 when nothing matches)."""
        return max(1, -(-self.total // self.size))

    @property
    def first_row(self) -> int:
        return self.offset + 1

    @property
    def last_row(self) -> int:
        return min(self.total, self.offset + self.size)

    @property
    def previous(self) -> int | None:
        """The page a Previous link goes to (the last one from beyond it); None on the first."""
        return None if self.number == 1 else min(self.number - 1, self.last_number)

    @property
    def next(self) -> int | None:
        return self.number + 1 if self.number < self.last_number else None

    @property
    def text(self) -> str:
        """``rows 201-400 of 1,234``; ``no rows`` or ``no rows on page 4 of 3 (450 rows)``."""
        if self.total == 0:
            return "no rows"
        if self.first_row > self.total:
            return f"no rows on page {self.number:,} of {self.last_number:,} ({self.total:,} rows)"
        return f"rows {self.first_row:,}-{self.last_row:,} of {self.total:,}"
