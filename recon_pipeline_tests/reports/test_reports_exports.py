"""Per property-night exports rendered on demand (`recon report night`) on the demo seed (EUR and JPY),
SQLite and PostgreSQL: what the files hold is what the ``discrepancies`` table holds, the HTML formats
each currency in its own unit and loads nothing, and rendering again rewrites the same bytes."""

from __future__ import annotations

import csv
import json
import re
from datetime import datetime
from decimal import Decimal
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pandas as pd
from sqlalchemy import Engine, func, select

from recon_pipeline.categories import ALL_CATEGORIES
from recon_pipeline.db.schema import discrepancies
from recon_pipeline.ledger.queries import load_property
from recon_pipeline.reconcile.adjustments import ADJUSTMENT_POLICY
from recon_pipeline.reports.paths import night_folder
from recon_pipeline.reports.render import render_night
from recon_pipeline_tests.support.pipeline_fixtures import NIGHT
from recon_pipeline_tests.support.report_fixtures import KYOTO, LISBON, NIGHTS, OLD_NIGHT, ReportedNights

EXPONENT = {"JPY": 0}  # every other currency of the demo has two decimals
FILES = ("discrepancies.csv", "discrepancies.parquet", "report.html")


def table_rows(engine: Engine, property_id: str, night: str) -> list[tuple[Any, ...]]:
    query = (
        select(discrepancies)
        .where(discrepancies.c.property_id == property_id, discrepancies.c.night == night)
        .order_by(discrepancies.c.category, discrepancies.c.record_key)
    )
    with engine.connect() as connection:
        return [tuple(row) for row in connection.execute(query)]


def csv_cell(value: Any) -> str:
    """The documented CSV form: empty for null, ISO 8601 for timestamps, the value itself otherwise."""
    if value is None:
        return ""
    return value.isoformat() if isinstance(value, datetime) else str(value)


def python_value(value: Any) -> Any:
    if value is None or value is pd.NA or value is pd.NaT or (isinstance(value, float) and pd.isna(value)):
        return None
    return value.to_pydatetime() if isinstance(value, pd.Timestamp) else value


def minor_units(shown: str) -> tuple[int, str]:
    """Parse '1,234.50 EUR' or '12,300 JPY' back to (minor units, currency), checking the decimals."""
    match = re.fullmatch(r"(-?)([\d,]+)(?:\.(\d+))? ([A-Z]{3})", shown)
    assert match, shown
    sign, whole, decimals, currency = match.groups()
    exponent = EXPONENT.get(currency, 2)
    assert len(decimals or "") == exponent, f"{shown}: {currency} has {exponent} decimals"
    amount = int(Decimal(f"{whole.replace(',', '')}.{decimals or 0}") * 10**exponent)
    return (-amount if sign else amount), currency


class Tables(HTMLParser):
    """Body rows of every <table id=...> (the row's data-* attributes, cell texts), and every attribute."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[tuple[dict[str, str], list[str]]]] = {}
        self.attributes: list[tuple[str, str, str]] = []  # (tag, name, value)
        self._last_table = ""  # id of the latest <table>
        self._table = ""  # id of the table whose <tbody> we are in
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        self.attributes += [(tag, name, value) for name, value in values.items()]
        if tag == "tbody":
            self._table = self._last_table
        elif tag == "table":
            self._last_table = values.get("id", "")
            self.tables[self._last_table] = []
        elif tag == "tr" and self._table:
            self.tables[self._table].append(({k: v for k, v in values.items() if k.startswith("data-")}, []))
        elif tag == "td" and self._table:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None:
            self.tables[self._table][-1][1].append("".join(self._cell))
            self._cell = None
        elif tag == "tbody":
            self._table = ""

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def parse_html(path: Path) -> tuple[str, Tables]:
    source = path.read_text(encoding="utf-8")
    parser = Tables()
    parser.feed(source)
    return source, parser


def category_sums(engine: Engine, property_id: str, night: str) -> dict[tuple[str, str], tuple[int, int]]:
    c = discrepancies.c
    query = (
        select(c.category, c.currency, func.count(), func.sum(func.abs(c.difference_minor)))
        .where(c.property_id == property_id, c.night == night)
        .group_by(c.category, c.currency)
    )
    with engine.connect() as connection:
        return {(cat, cur): (int(n), int(total)) for cat, cur, n, total in connection.execute(query)}


def test_csv_and_parquet_hold_every_column_of_the_partition_rows(reported_nights: ReportedNights) -> None:
    columns = [column.name for column in discrepancies.columns] + ["adjustment"]
    category = columns.index("category")
    for prop in (LISBON, KYOTO):
        for night in (n.isoformat() for n in NIGHTS):
            folder = night_folder(prop.property_id, night, reported_nights.rendered)
            assert folder == reported_nights.rendered.resolve() / prop.property_id / night
            assert sorted(p.name for p in folder.iterdir()) == sorted(FILES)  # no temporary files left
            rows = table_rows(reported_nights.engine, prop.property_id, night)
            assert rows

            with (folder / "discrepancies.csv").open(newline="", encoding="utf-8") as handle:
                header, *cells = list(csv.reader(handle))
            assert header == columns
            assert [cell[:-1] for cell in cells] == [[csv_cell(value) for value in row] for row in rows]
            # Each finding's adjustment state: what it proposes now, none for a finding that proposes none.
            for cell in cells:
                proposes = cell[category] in ADJUSTMENT_POLICY
                assert cell[-1].startswith("proposed ") if proposes else cell[-1] == "", cell

            parquet = pd.read_parquet(folder / "discrepancies.parquet")
            assert list(parquet.columns) == columns
            values = [tuple(python_value(v) for v in row) for row in parquet.itertuples(index=False)]
            assert [row[:-1] for row in values] == rows
            assert list(parquet["adjustment"]) == [cell[-1] for cell in cells]
            assert str(parquet["ledger_amount_minor"].dtype) == "Int64"  # nulls stay nulls, not NaN floats
            assert isinstance(parquet["detected_at"].dtype, pd.DatetimeTZDtype)


def test_html_report_formats_each_currency_and_loads_nothing(reported_nights: ReportedNights) -> None:
    night = NIGHT.isoformat()
    for prop in (LISBON, KYOTO):
        folder = night_folder(prop.property_id, night, reported_nights.rendered)
        source, page = parse_html(folder / "report.html")

        # Self-contained: no URL at all, nothing fetched, links only to the exports beside it.
        assert not re.search(r"https?:|//[a-z]", source, re.IGNORECASE)
        assert "<link" not in source and "url(" not in source and "@import" not in source
        assert not [a for a in page.attributes if a[1] == "src"]
        hrefs = [value for _tag, name, value in page.attributes if name == "href"]
        assert hrefs == ["discrepancies.csv", "discrepancies.parquet"]
        assert all((folder / href).is_file() for href in hrefs)
        for chart in ("chart-by-category", "chart-by-night"):  # drawn by the inline script, empty here
            assert re.search(rf'<svg id="{chart}"[^>]*></svg>', source), chart

        # The category table: every category, counts and amounts as in the table, in the currency's unit.
        expected = category_sums(reported_nights.engine, prop.property_id, night)
        shown: dict[tuple[str, str], tuple[int, int]] = {}
        for attrs, (category, currency, count, amount) in page.tables["category-table"]:
            assert attrs == {"data-category": category, "data-currency": currency}
            if category == "currency_mismatch" and int(count):
                # Its sides are in different currencies: no sum of differences in either.
                assert amount == "—"
                shown[(category, currency)] = (int(count), 0)
                continue
            parsed, parsed_currency = minor_units(amount)
            assert parsed_currency == currency
            if int(count):
                shown[(category, currency)] = (int(count), parsed)
            else:
                assert parsed == 0 and currency == prop.currency
        assert shown == expected
        assert any(
            currency == prop.currency and total > 0 for (_c, currency), (_n, total) in expected.items()
        )
        if prop.currency == "JPY":
            assert re.search(r"<td>\d{1,3}(,\d{3})* JPY</td>", source)
            assert not re.search(r"\d\.\d+ JPY", source)
        else:
            assert re.search(r"<td>\d{1,3}(,\d{3})*\.\d\d EUR</td>", source)

        # No run figure (provider and ledger totals, matches) that the database does not hold.
        assert "totals-table" not in page.tables
        rows = table_rows(
            reported_nights.engine, prop.property_id, night
        )  # each night ran once: none cleared
        assert f"<p>{len(rows)} outstanding findings, 0 cleared by a later run</p>" in source

        # The embedded data the charts draw: per category of this night, per night of the last 30.
        data = json.loads(
            re.search(r'<script type="application/json" id="report-data">(.*?)</script>', source, re.S)[1]
        )
        counts = {category: 0 for category, _ in expected}
        for (category, _currency), (n, _total) in expected.items():
            counts[category] += n
        assert {e["category"]: e["count"] for e in data["categories"] if e["count"]} == counts
        with_findings = {e["night"]: e["count"] for e in data["nights"] if e["count"]}
        assert with_findings == {
            n.isoformat(): len(table_rows(reported_nights.engine, prop.property_id, n.isoformat()))
            for n in NIGHTS
        }
        assert len(data["nights"]) == 30 and data["nights"][-1]["night"] == night
        assert OLD_NIGHT.isoformat() in with_findings


def test_rendering_again_rewrites_identical_exports(reported_nights: ReportedNights, tmp_path: Path) -> None:
    night = NIGHT.isoformat()
    folder = night_folder(KYOTO.property_id, night, tmp_path)
    with reported_nights.engine.connect() as connection:
        kyoto = load_property(connection, KYOTO.property_id)
        render_night(connection, kyoto, night, tmp_path)
        first = {name: (folder / name).read_bytes() for name in FILES}
        inodes = {name: (folder / name).stat().st_ino for name in FILES}
        render_night(connection, kyoto, night, tmp_path)
    assert {name: (folder / name).read_bytes() for name in FILES} == first
    assert first == {
        name: (night_folder(KYOTO.property_id, night, reported_nights.rendered) / name).read_bytes()
        for name in FILES
    }
    assert all((folder / name).stat().st_ino != inodes[name] for name in FILES)  # replaced, not kept
    assert sorted(p.name for p in folder.iterdir()) == sorted(FILES)


def test_the_ui_shows_amounts_in_major_units_and_a_currency_mismatch_in_both_currencies(
    reported_nights: ReportedNights,
) -> None:
    night = NIGHT.isoformat()
    for prop in (LISBON, KYOTO):
        metadata = reported_nights.report_metadata(prop.property_id, night)
        amounts = {
            key: value
            for key, value in metadata.items()
            if key.split("/")[0] in ("amount", "provider_total", "ledger_total", "matched_amount")
        }
        assert amounts
        assert all(minor_units(value)[1] == key.rsplit("/", 1)[1] for key, value in amounts.items())
        assert all(type(metadata[f"count/{category}"]) is int for category in ALL_CATEGORIES)
        assert not [key for key in metadata if key.startswith("amount/currency_mismatch/")]
        assert f"| currency_mismatch | {prop.currency} | 1 | — |" in metadata["categories"]

        # The planted mismatch: a charge in the property's currency booked in GBP, each side in its own.
        top = metadata["top_discrepancies"].splitlines()
        [row] = [line for line in top if line.startswith("| currency_mismatch |")]
        provider, ledger, difference = row.split(" | ")[2:5]
        assert minor_units(provider)[1] == prop.currency and minor_units(ledger)[1] == "GBP"
        assert difference == f"{prop.currency} ≠ GBP"
        _, page = parse_html(night_folder(prop.property_id, night, reported_nights.rendered) / "report.html")
        [cells] = [cells for _, cells in page.tables["top-discrepancies"] if cells[0] == "currency_mismatch"]
        assert cells[3:6] == [provider, ledger, difference]
