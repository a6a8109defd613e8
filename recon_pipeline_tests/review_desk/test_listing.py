"""The lists' shared parts (``review_desk/listing.py``): the sort a URL names, amounts typed in major units,
reversed ranges refused, and totals per currency summed in SQL over the whole filtered statement (on
SQLite and PostgreSQL) rather than the page shown."""

from __future__ import annotations

from collections import Counter, defaultdict
from decimal import Decimal

import pytest
from sqlalchemy import Engine, insert, select

from recon_pipeline.db.schema import discrepancies
from recon_pipeline.review_desk.listing import (
    CurrencyTotal,
    Sort,
    SortColumn,
    amount_between,
    check_range,
    parse_amount_range,
    parse_major_amount,
    parse_sort,
    sorted_statement,
    totals,
)
from recon_pipeline_tests.support.desk_fixtures import finding

d = discrepancies.c
COLUMNS = (SortColumn("night", d.night, "Night"), SortColumn("difference", d.difference_minor, "Difference"))


@pytest.mark.fast
def test_parse_sort_reads_the_column_and_its_direction() -> None:
    assert parse_sort({}, COLUMNS, "-night") == Sort("night", descending=True)
    assert parse_sort({"sort": "difference"}, COLUMNS, "-night") == Sort("difference", descending=False)
    assert parse_sort({"sort": "-difference"}, COLUMNS, "night") == Sort("difference", descending=True)
    with pytest.raises(
        ValueError, match=r"sort 'amount' is not a column of this list: use one of night, difference"
    ):
        parse_sort({"sort": "amount"}, COLUMNS, "night")


@pytest.mark.fast
def test_a_header_link_toggles_only_its_own_column() -> None:
    assert Sort("difference", descending=False).toggled("difference") == "-difference"
    assert Sort("difference", descending=True).toggled("difference") == "difference"
    assert Sort("difference", descending=False).toggled("night") == "night"
    assert Sort("night", descending=True).word == "-night"


@pytest.mark.fast
def test_sorted_statement_replaces_the_order_and_ends_with_the_tiebreak() -> None:
    statement = select(discrepancies).order_by(d.category)
    ordered = sorted_statement(statement, Sort("difference", True), COLUMNS, [d.discrepancy_id])
    text = str(ordered.compile()).split("ORDER BY")[1]
    assert "category" not in text
    assert text.index("difference_minor DESC NULLS LAST") < text.index("discrepancy_id")


@pytest.mark.fast
@pytest.mark.parametrize(
    ("text", "currency", "exponent", "minor"),
    [
        ("120.50", "EUR", 2, 12050),
        ("120.5", None, 2, 12050),
        ("1000", "JPY", 0, 1000),
        ("1.234", "KWD", 3, 1234),
    ],
)
def test_major_amounts_become_minor_units_by_the_currency_exponent(
    text: str, currency: str | None, exponent: int, minor: int
) -> None:
    assert parse_major_amount(text, currency).minor(exponent) == minor


@pytest.mark.fast
@pytest.mark.parametrize(
    ("text", "currency", "message"),
    [
        ("-5", None, "is not an amount in major units"),
        ("1,000", None, "is not an amount in major units"),
        ("10000000000000", None, "is not an amount in major units"),
        ("120.505", "EUR", "has more decimals than EUR has"),
        ("1.5", "JPY", "has more decimals than JPY has"),
    ],
)
def test_bad_amounts_are_refused_naming_the_field(text: str, currency: str | None, message: str) -> None:
    with pytest.raises(ValueError, match=f"amount at least '{text}' {message}"):
        parse_major_amount(text, currency, "amount at least")


@pytest.mark.fast
def test_ranges_read_both_ends_and_refuse_a_reversed_one() -> None:
    low, high = parse_amount_range("100..200", None, "amount")
    assert (low.value, high.value) == (Decimal(100), Decimal(200))
    assert parse_amount_range("120.50", "EUR", "amount")[1].value == Decimal("120.50")
    with pytest.raises(ValueError, match="amount from 200 is more than amount to 100"):
        parse_amount_range("200..100", None, "amount")
    check_range("2026-12-01", "2026-12-03", "night")
    check_range(None, "2026-12-01", "night")
    with pytest.raises(ValueError, match="^night from 2026-12-03 is after night to 2026-12-01$"):
        check_range("2026-12-03", "2026-12-01", "night")


ROWS = [
    ("e1", 12050, "EUR"),
    ("e2", -12050, "EUR"),
    ("e3", 99, "EUR"),
    ("j1", 121, "JPY"),
    ("j2", 120, "JPY"),
    ("k1", 120500, "KWD"),
    ("g1", 5, "GBP"),
]


def _seed(engine: Engine) -> None:
    with engine.begin() as connection:
        connection.execute(
            insert(discrepancies),
            [finding("p1", key, amount, currency=currency) for key, amount, currency in ROWS],
        )


def test_totals_sum_every_matching_row_per_currency_whatever_the_page(engine: Engine) -> None:
    _seed(engine)
    page = select(discrepancies).where(d.record_key != "g1").order_by(d.record_key).limit(2).offset(1)
    with engine.connect() as connection:
        found = totals(connection, page, "difference_minor")
    expected_rows: Counter[str] = Counter()
    expected_sum: defaultdict[str, int] = defaultdict(int)
    for key, amount, currency in ROWS:
        if key != "g1":
            expected_rows[currency] += 1
            expected_sum[currency] += amount
    assert found == [CurrencyTotal(c, expected_rows[c], expected_sum[c]) for c in sorted(expected_rows)]


@pytest.mark.parametrize(
    ("low", "high", "chosen", "keys"),
    [
        ("120.50", "120.50", None, {"e1", "e2", "k1"}),  # either sign; 120.5 JPY is no whole yen
        ("120.50", None, None, {"e1", "e2", "j1", "k1"}),  # at least 120.5 yen is at least 121
        ("120", "121", "JPY", {"j1", "j2"}),
        ("0.05", "1", None, {"e3", "g1"}),
    ],
)
def test_amounts_compare_in_each_rows_own_currency(
    engine: Engine, low: str, high: str | None, chosen: str | None, keys: set[str]
) -> None:
    _seed(engine)
    condition = amount_between(
        [d.difference_minor],
        d.currency,
        parse_major_amount(low, None),
        None if high is None else parse_major_amount(high, None),
        chosen,
    )
    statement = select(d.record_key).where(condition)
    if chosen is not None:
        statement = statement.where(d.currency == chosen)
    with engine.connect() as connection:
        assert set(connection.execute(statement).scalars()) == keys
