"""What every list of the desk does the same way: sort by a column the URL names, total its amounts per
currency over every page, and read amounts a person types in major units.

A list is one SQLAlchemy statement (``paging.py`` says why); this module only rewrites it: its order
(``sorted_statement``: the chosen column, then the list's own total key so pages never overlap), or its
sums (``totals``: the statement without its order, limit and offset, grouped by currency in SQL, so the
footer counts every matching row and not just the page shown). Amounts are typed as on a receipt
(``120.50``) and become minor units by each currency's exponent (``money.py``): 120.50 is 12050 cents but
120.500 fils, and a list of several currencies compares each row with the amount in its own currency.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from typing import Any, Final

from sqlalchemy import ColumnElement, Connection, Select, UnaryExpression, and_, false, func, or_, select
from sqlalchemy.sql import operators

from recon_pipeline.money import (
    THREE_DECIMAL_CURRENCIES,
    ZERO_DECIMAL_CURRENCIES,
    minor_unit_exponent,
)

SORT_PARAM: Final = "sort"
_MAJOR_AMOUNT: Final = re.compile(r"[0-9]{1,12}(\.[0-9]{1,3})?")
_AMOUNT_SEARCH: Final = re.compile(r"[0-9]{1,12}(\.[0-9]{1,3})?(\.\.[0-9]{1,12}(\.[0-9]{1,3})?)?")
_EXPONENT_CURRENCIES: Final = {0: ZERO_DECIMAL_CURRENCIES, 3: THREE_DECIMAL_CURRENCIES}


@dataclass(frozen=True)
class SortColumn:
    """A column a list sorts by: ``name`` is its word in the URL (``?sort=difference``), ``label`` its
    header."""

    name: str
    column: ColumnElement[Any]
    label: str
    inverse: bool = False  # ascending runs opposite the column: a finding's age grows as detected_at falls


@dataclass(frozen=True)
class Sort:
    """The chosen order: a column's URL word, and whether descending (``?sort=-difference``)."""

    name: str
    descending: bool

    @property
    def word(self) -> str:
        """The order as the URL says it."""
        return f"-{self.name}" if self.descending else self.name

    def toggled(self, name: str) -> str:
        """The URL word of a header's link: its column ascending, or descending when it is so already."""
        return f"-{name}" if name == self.name and not self.descending else name


def parse_sort(params: Any, columns: Sequence[SortColumn], default: str) -> Sort:
    """The ``sort`` parameter (``default`` when absent): a column's word, ``-`` before it for descending;
    ValueError naming the bad value and the words there are."""
    raw = (params.get(SORT_PARAM, "") or "").strip() or default
    descending = raw.startswith("-")
    name = raw[1:] if descending else raw
    if name not in {column.name for column in columns}:
        words = ", ".join(column.name for column in columns)
        raise ValueError(
            f"sort {raw!r} is not a column of this list: use one of {words} (- before for descending)"
        )
    return Sort(name, descending)


def sorted_statement(
    statement: Select[Any],
    sort: Sort,
    columns: Sequence[SortColumn],
    tiebreak: Sequence[ColumnElement[Any]],
) -> Select[Any]:
    """``statement`` in the order ``order_of`` says, whatever order it had."""
    return statement.order_by(None).order_by(*order_of(sort, columns, tiebreak))


@dataclass(frozen=True)
class OrderTerm:
    """One column of a list's order: which way it runs; empty cells come last either way."""

    column: ColumnElement[Any]
    descending: bool

    def ordered(self, reverse: bool = False) -> ColumnElement[Any]:
        """The ORDER BY term (``reverse``: the whole order read backwards, empty cells first)."""
        term = self.column.desc() if self.descending != reverse else self.column.asc()
        return term.nulls_first() if reverse else term.nulls_last()

    def beyond(self, value: Any, reverse: bool = False) -> ColumnElement[bool]:
        """Whether a row's cell comes strictly after ``value`` in this order (before it when ``reverse``)."""
        if reverse:
            if value is None:
                return self.column.is_not(None)
            return self.column > value if self.descending else self.column < value
        if value is None:
            return false()
        return or_(self.column < value if self.descending else self.column > value, self.column.is_(None))


def order_terms(
    sort: Sort, columns: Sequence[SortColumn], tiebreak: Sequence[ColumnElement[Any]]
) -> list[OrderTerm]:
    """The chosen column, then ``tiebreak`` (the list's own total key, a term ``.desc()`` descending)."""
    (chosen,) = (column for column in columns if column.name == sort.name)
    terms = [OrderTerm(chosen.column, sort.descending != chosen.inverse)]
    for term in tiebreak:
        descending = isinstance(term, UnaryExpression) and term.modifier is operators.desc_op
        terms.append(OrderTerm(term.element if descending else term, descending))  # type: ignore[union-attr]
    return terms


def order_of(
    sort: Sort, columns: Sequence[SortColumn], tiebreak: Sequence[ColumnElement[Any]]
) -> list[ColumnElement[Any]]:
    """The chosen column's order, then ``tiebreak``: the list's own total key, so equal cells keep a
    stable order and pages never overlap. Empty cells last either way, on SQLite as on PostgreSQL."""
    return [term.ordered() for term in order_terms(sort, columns, tiebreak)]


def beyond(terms: Sequence[OrderTerm], values: Sequence[Any], reverse: bool = False) -> ColumnElement[bool]:
    """Whether a row comes strictly after the row whose cells are ``values`` in the order ``terms`` say
    (before it when ``reverse``): the keyset a row's neighbours are found by, without numbering the list."""
    alternatives = []
    for index, term in enumerate(terms):
        same = [t.column.is_not_distinct_from(v) for t, v in zip(terms[:index], values[:index], strict=True)]
        alternatives.append(and_(*same, term.beyond(values[index], reverse)))
    return or_(false(), *alternatives)


@dataclass(frozen=True)
class CurrencyTotal:
    """One currency's rows and the sum of their amounts, in minor units."""

    currency: str
    rows: int
    amount_minor: int


def totals(
    connection: Connection, statement: Select[Any], amount: str, currency: str = "currency"
) -> list[CurrencyTotal]:
    """Per currency (by code), how many rows ``statement`` matches and the sum of its ``amount`` column:
    over the whole filtered list, whatever page the statement was cut to, summed in SQL. Rows without a
    currency (a pair by hand of mixed currencies) are no currency's and left out."""
    matching = statement.order_by(None).limit(None).offset(None).subquery()
    code = matching.c[currency]
    grouped = (
        select(code, func.count(), func.coalesce(func.sum(matching.c[amount]), 0))
        .where(code.is_not(None))
        .group_by(code)
        .order_by(code)
    )
    return [CurrencyTotal(str(c), int(n), int(s)) for c, n, s in connection.execute(grouped).all()]


@dataclass(frozen=True)
class MajorAmount:
    """An amount as a person types it, in major units (``120.50``), not negative."""

    value: Decimal

    def __str__(self) -> str:
        return str(self.value)

    def minor(self, exponent: int) -> Decimal:
        """The amount in minor units of a currency with ``exponent`` decimals (a fraction when the amount
        has more decimals than the currency: 0.5 JPY)."""
        return self.value.scaleb(exponent)


def parse_major_amount(text: str, currency: str | None, label: str = "amount") -> MajorAmount:
    """``text`` as an amount in major units: at most 12 digits and three decimals, no sign or
    separators; with a
    ``currency``, no more decimals than it has (120.505 EUR is no amount). ValueError naming ``label``."""
    cleaned = text.strip()
    if not _MAJOR_AMOUNT.fullmatch(cleaned):
        raise ValueError(f"{label} {text!r} is not an amount in major units, like 120.50")
    amount = MajorAmount(Decimal(cleaned))
    if currency is not None:
        exponent = minor_unit_exponent(currency)
        if amount.minor(exponent) != amount.minor(exponent).to_integral_value():
            raise ValueError(f"{label} {text!r} has more decimals than {currency.upper()} has ({exponent})")
    return amount


def parse_amount_range(text: str, currency: str | None, label: str) -> tuple[MajorAmount, MajorAmount]:
    """``120.50`` (that amount) or ``100..200`` (both ends included) as the lowest and highest amount;
    ValueError for a reversed range."""
    first, dots, last = text.strip().partition("..")
    low = parse_major_amount(first, currency, label)
    high = parse_major_amount(last, currency, label) if dots else low
    if low.value > high.value:
        raise ValueError(f"{label} from {low.value} is more than {label} to {high.value}")
    return low, high


def amount_search(text: str) -> tuple[MajorAmount, MajorAmount] | None:
    """A search's amount (``120.50``, ``100..200``) when the text is one, else None (it searches ids);
    ValueError for a reversed range, which would otherwise silently find nothing."""
    if not _AMOUNT_SEARCH.fullmatch(text.strip()):
        return None
    return parse_amount_range(text, None, "search amount")


def amount_between(
    amounts: Sequence[ColumnElement[Any]],
    currency: ColumnElement[Any],
    low: MajorAmount | None,
    high: MajorAmount | None,
    chosen: str | None,
) -> ColumnElement[bool]:
    """Whether one of ``amounts`` (minor units, either sign) lies from ``low`` to ``high`` in major units of
    the row's currency (``chosen`` when the list shows one currency). A bound between two minor units (0.5
    in JPY) rounds inwards: ``at least 0.5`` is at least 1, ``exactly 0.5`` is nothing."""
    exponents = [minor_unit_exponent(chosen)] if chosen is not None else [0, 2, 3]
    per_exponent = []
    for exponent in exponents:
        lowest = None if low is None else int(low.minor(exponent).to_integral_value(ROUND_CEILING))
        highest = None if high is None else int(high.minor(exponent).to_integral_value(ROUND_FLOOR))
        found = or_(false(), *(_within(column, lowest, highest) for column in amounts))
        per_exponent.append(found if chosen is not None else and_(_of_exponent(currency, exponent), found))
    return or_(false(), *per_exponent)


def _within(column: ColumnElement[Any], lowest: int | None, highest: int | None) -> ColumnElement[bool]:
    size = func.abs(column)
    bounds = [] if lowest is None else [size >= lowest]
    bounds += [] if highest is None else [size <= highest]
    return and_(column.is_not(None), *bounds)


def _of_exponent(currency: ColumnElement[Any], exponent: int) -> ColumnElement[bool]:
    """Whether the row's currency has ``exponent`` decimals (two: every currency not listed otherwise)."""
    if exponent in _EXPONENT_CURRENCIES:
        return currency.in_(sorted(_EXPONENT_CURRENCIES[exponent]))
    return currency.not_in(sorted(ZERO_DECIMAL_CURRENCIES | THREE_DECIMAL_CURRENCIES))


def check_range(first: str | None, last: str | None, label: str) -> None:
    """ValueError when a range's first value is after its last (ISO dates compare as text): a reversed
    range would silently match nothing."""
    if first is not None and last is not None and first > last:
        raise ValueError(f"{label} from {first} is after {label} to {last}")
