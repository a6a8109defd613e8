"""Sheets for a spreadsheet: a list's rows as declared columns, each with a header a person reads and a
type, so CSV and xlsx writers (``reports.exports``) can write every cell as what it is.

The types are what an analyst does with a cell in Excel: sums an amount (a number in MAJOR units, the
currency's exponent from ``money.py``, never the stored minor units), filters and sorts a date or a
moment (a date cell; a moment in the property's own time zone, as the night it belongs to is), and reads
text as text. The totals rows are per currency (amounts of different currencies are never added), summed
exactly in minor units. Pure: no file, no database.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from enum import Enum
from typing import Any
from zoneinfo import ZoneInfo

from recon_pipeline.money import major_units, minor_unit_exponent

Row = Mapping[Any, Any]  # a RowMapping, or a dict of the same names
CURRENCY = "Currency"  # the header of the column the totals rows name their currency in


class Kind(Enum):
    """What a column's cells are."""

    TEXT = "text"  # str; CSV guards it against formulas, xlsx types it as a string
    AMOUNT = "amount"  # Money → a number in major units
    DATE = "date"  # "YYYY-MM-DD" (a night) → a date
    MOMENT = "moment"  # an aware datetime → the property's local time
    INTEGER = "integer"  # a count or an id
    NUMBER = "number"  # a float shown to two places (a match's score)


@dataclass(frozen=True)
class Money:
    """An amount in minor units with its currency: a cell's value, before it becomes major units."""

    minor: int
    currency: str

    @property
    def exponent(self) -> int:
        return minor_unit_exponent(self.currency)

    @property
    def major(self) -> Decimal:
        """Exact: ``-1500`` EUR is ``-15.00``; a JPY amount stays whole."""
        return major_units(self.minor, self.currency)


def money_of(minor: object, currency: object) -> Money | None:
    """A Money of a row's stored minor amount and currency, or None when either is missing."""
    if minor is None or currency is None:
        return None
    return Money(int(str(minor)), str(currency))


@dataclass(frozen=True)
class Column:
    """One column of a sheet: its ``header``, its ``kind``, how a row gives its ``value`` (of the kind's
    Python type, or None for an empty cell), its width in characters, and whether the totals rows sum it
    (AMOUNT columns only)."""

    header: str
    kind: Kind
    value: Callable[[Row], Any]
    width: int = 14
    total: bool = False


@dataclass(frozen=True)
class Sheet:
    """A list's export: its ``title`` (the xlsx sheet), its columns in order, the row's property (whose
    time zone its moments are shown in) and the row's currency (whose totals row counts it)."""

    title: str
    columns: tuple[Column, ...]
    property_id: Callable[[Row], str]
    currency: Callable[[Row], str | None]


@dataclass(frozen=True)
class Cell:
    """A typed cell: ``value`` is str, int, float, Decimal (major units), date, naive-local datetime with
    its ``moment`` (the aware one, for CSV's offset), or None; ``exponent`` the decimals of an amount."""

    kind: Kind
    value: Any
    exponent: int = 0
    moment: datetime | None = None


def text(header: str, name: str, width: int = 14, words: Mapping[str, str] | None = None) -> Column:
    """A text column of the row's ``name``, through ``words`` (a code's words; an unknown code as it is)."""

    def value(row: Row) -> str | None:
        found = row[name]
        if found is None:
            return None
        return str(found) if words is None else words.get(str(found), str(found))

    return Column(header, Kind.TEXT, value, width)


def field(header: str, name: str, kind: Kind, width: int = 14) -> Column:
    """A column of the row's ``name`` as it is (a night for DATE, a timestamp for MOMENT, an int)."""
    return Column(header, kind, lambda row: row[name], width)


def amount(header: str, minor: str, currency: str, width: int = 14, total: bool = False) -> Column:
    """An amount column of the row's ``minor`` in its ``currency`` column."""
    return Column(header, Kind.AMOUNT, lambda row: money_of(row[minor], row[currency]), width, total)


def typed_rows(sheet: Sheet, rows: Sequence[Row], timezones: Mapping[str, str]) -> list[list[Cell]]:
    """Each row's cells in the sheet's column order; moments in the time zone of the row's property
    (``timezones`` by property id; UTC for a property the table does not hold)."""
    zones = {property_id: ZoneInfo(name) for property_id, name in timezones.items()}
    utc = ZoneInfo("UTC")
    return [
        [
            _cell(column.kind, column.value(row), zones.get(sheet.property_id(row), utc))
            for column in sheet.columns
        ]
        for row in rows
    ]


def totals_rows(sheet: Sheet, rows: Sequence[Row]) -> list[list[Cell]]:
    """One row per currency of the rows, in code order: ``Total EUR (3 rows)`` in the first column, the
    currency in the ``Currency`` column, and each summed column's amounts of that currency added up
    (exactly, in minor units). None when no row has a currency."""
    currencies = sorted({c for c in (sheet.currency(row) for row in rows) if c is not None})
    result = []
    for currency in currencies:
        counted = sum(1 for row in rows if sheet.currency(row) == currency)
        cells = []
        for index, column in enumerate(sheet.columns):
            if index == 0:
                label = f"Total {currency} ({counted} row{'' if counted == 1 else 's'})"
                cells.append(Cell(Kind.TEXT, label))
            elif column.total:
                amounts = [column.value(row) for row in rows]
                summed = sum(a.minor for a in amounts if a is not None and a.currency == currency)
                cells.append(_cell(Kind.AMOUNT, Money(summed, currency), None))
            elif column.header == CURRENCY:
                cells.append(Cell(Kind.TEXT, currency))
            else:
                cells.append(Cell(column.kind, None))
        result.append(cells)
    return result


def _cell(kind: Kind, value: Any, zone: ZoneInfo | None) -> Cell:
    if value is None:
        return Cell(kind, None)
    if kind is Kind.AMOUNT:
        return Cell(kind, value.major, value.exponent)
    if kind is Kind.DATE:
        return Cell(kind, value if isinstance(value, date) else date.fromisoformat(str(value)))
    if kind is Kind.MOMENT:
        local = value.astimezone(zone)
        return Cell(kind, local.replace(tzinfo=None), moment=local)
    if kind is Kind.INTEGER:
        return Cell(kind, int(value))
    if kind is Kind.NUMBER:
        return Cell(kind, float(value))
    return Cell(kind, str(value))
