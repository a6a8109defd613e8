"""Typed sheets written as CSV and xlsx, without a database: amounts in major units by each currency's
exponent (JPY none, KWD three), moments in the property's time zone (CSV with its offset, xlsx naive as
Excel needs), per-currency totals summed exactly, text typed as text in xlsx and guarded in CSV only."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from openpyxl import load_workbook
from openpyxl.worksheet.worksheet import Worksheet

from recon_pipeline.reports.exports import sheet_csv_bytes, sheet_xlsx_bytes, write_xlsx
from recon_pipeline.reports.sheets import CURRENCY, Kind, Money, Sheet, amount, field, text, totals_rows

pytestmark = pytest.mark.fast

SHEET = Sheet(
    "things",
    (
        text("Name", "name"),
        field("Night", "night", Kind.DATE),
        amount("Amount", "amount_minor", "currency", total=True),
        text(CURRENCY, "currency"),
        field("Seen at", "seen_at", Kind.MOMENT),
        field("Count", "count", Kind.INTEGER),
    ),
    lambda row: str(row["property_id"]),
    lambda row: row["currency"],
)
WINTER_NOON = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
SUMMER_NOON = datetime(2026, 7, 3, 12, 0, tzinfo=UTC)


def row(
    name: str, minor: int | None, currency: str, property_id: str = "rome", **facts: Any
) -> dict[str, Any]:
    return {
        "name": name,
        "night": "2026-12-02",
        "amount_minor": minor,
        "currency": currency,
        "seen_at": WINTER_NOON,
        "count": 3,
        "property_id": property_id,
        **facts,
    }


ROWS = [
    row("=1+1", -1505, "EUR"),
    row("-2+3", 1200, "JPY", "kyoto"),
    row("@one", 12_345, "KWD", seen_at=SUMMER_NOON),
    row("plain", None, "EUR"),
    row("+big", 10**11, "EUR"),
]
ZONES = {"rome": "Europe/Rome", "kyoto": "Asia/Tokyo"}


def test_money_is_exact_in_major_units() -> None:
    assert Money(-1505, "EUR").major == Decimal("-15.05")
    assert Money(1200, "JPY").major == Decimal("1200")
    assert Money(12_345, "KWD").major == Decimal("12.345")
    assert Money(10**11, "EUR").major == Decimal("1000000000.00")


def test_csv_cells_are_typed_and_only_text_is_guarded() -> None:
    lines = list(csv.reader(io.StringIO(sheet_csv_bytes(SHEET, ROWS, ZONES).decode("utf-8"), newline="")))
    assert lines[0] == ["Name", "Night", "Amount", "Currency", "Seen at", "Count"]
    assert lines[1:6] == [
        ["'=1+1", "2026-12-02", "-15.05", "EUR", "2026-12-03T13:00:00+01:00", "3"],
        ["'-2+3", "2026-12-02", "1200", "JPY", "2026-12-03T21:00:00+09:00", "3"],
        ["'@one", "2026-12-02", "12.345", "KWD", "2026-07-03T14:00:00+02:00", "3"],  # summer time
        ["plain", "2026-12-02", "", "EUR", "2026-12-03T13:00:00+01:00", "3"],
        ["'+big", "2026-12-02", "1000000000.00", "EUR", "2026-12-03T13:00:00+01:00", "3"],
    ]
    assert lines[6] == []  # the empty line between the data and the totals
    assert lines[7:] == [
        ["Total EUR (3 rows)", "", "999999984.95", "EUR", "", ""],
        ["Total JPY (1 row)", "", "1200", "JPY", "", ""],
        ["Total KWD (1 row)", "", "12.345", "KWD", "", ""],
    ]


def read_back(body: bytes) -> Worksheet:
    sheet = load_workbook(io.BytesIO(body)).active
    assert isinstance(sheet, Worksheet)
    return sheet


def test_xlsx_cells_are_typed_formatted_and_totalled() -> None:
    sheet = read_back(sheet_xlsx_bytes(SHEET, ROWS, ZONES))
    assert (sheet.title, sheet.freeze_panes, sheet.auto_filter.ref) == ("things", "A2", "A1:F6")
    cells = list(sheet.iter_rows())
    first = cells[1]
    assert (first[0].value, first[0].data_type) == ("=1+1", "s")  # a string, never run, no '
    assert (first[2].value, first[2].number_format) == (-15.05, "#,##0.00")
    assert first[1].is_date and first[1].value == datetime(2026, 12, 2)
    assert first[4].value == datetime(2026, 12, 3, 13, 0) and first[4].number_format == "yyyy-mm-dd hh:mm"
    assert (cells[2][2].value, cells[2][2].number_format) == (1200, "#,##0")
    assert (cells[3][2].value, cells[3][2].number_format) == (12.345, "#,##0.000")
    assert cells[2][4].value == datetime(2026, 12, 3, 21, 0)  # Kyoto's clock
    assert cells[4][2].value is None and cells[5][2].value == 10**9
    assert all(cell.value is None for cell in cells[6])
    totals = [[cell.value for cell in line] for line in cells[7:]]
    assert [line[0] for line in totals] == ["Total EUR (3 rows)", "Total JPY (1 row)", "Total KWD (1 row)"]
    assert [line[2] for line in totals] == [999_999_984.95, 1200, 12.345]
    assert all(cell.font.b for line in cells[7:] for cell in line if cell.value is not None)


def test_totals_never_add_currencies_and_an_empty_sheet_has_none() -> None:
    lines = totals_rows(SHEET, [row("a", 100, "EUR"), row("b", 250, "GBP"), row("c", -50, "EUR")])
    assert [(line[0].value, line[2].value, line[3].value) for line in lines] == [
        ("Total EUR (2 rows)", Decimal("0.50"), "EUR"),
        ("Total GBP (1 row)", Decimal("2.50"), "GBP"),
    ]
    assert totals_rows(SHEET, []) == []
    lines = list(csv.reader(io.StringIO(sheet_csv_bytes(SHEET, [], ZONES).decode("utf-8"))))
    assert lines == [["Name", "Night", "Amount", "Currency", "Seen at", "Count"]]


def test_the_frame_xlsx_writer_types_text_as_text_without_a_visible_prefix(tmp_path: Path) -> None:
    """`recon report payouts`' xlsx (``write_xlsx``): formula-like text is a string cell, shown as it is."""
    frame = pd.DataFrame(
        {"text": ['=HYPERLINK("x")', "+1", "-2+3", "@SUM(A1)", "plain"], "n": [-1, 2, 3, 4, 5]}
    )
    sheet = read_back(write_xlsx(frame, tmp_path / "x.xlsx", "x").read_bytes())
    values = [(cell.value, cell.data_type) for cell in next(sheet.iter_cols(min_row=2, max_col=1))]
    assert values == [(text, "s") for text in frame["text"]]
    assert [cell.value for cell in next(sheet.iter_cols(min_row=2, min_col=2))] == [-1, 2, 3, 4, 5]
