"""The review desk's nights overview, a night's page and the payouts pages on a real server (127.0.0.1) over
SQLite and PostgreSQL: figures that match the rows inserted, filters, and another property's nights and
payouts never shown (404 by URL)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import Connection, Engine, Table, insert

from recon_pipeline.db.schema import (
    adjustments,
    bank_credits,
    discrepancies,
    night_reconciliations,
    payout_transactions,
    payouts,
    posting_outbox,
    stale_nights,
)
from recon_pipeline_tests.support.desk_fixtures import (
    NIGHT,
    NOW,
    add_user,
    finding,
    finding_ids,
    post_form,
    served_desk,
    sign_in,
)
from recon_pipeline_tests.support.desk_rows import adjustment, payout_row
from recon_pipeline_tests.support.loopback import loopback_client

EARLIER = "2026-12-01"
EMPTY_NIGHT = "2026-11-01"


@dataclass
class Desk:
    engine: Engine
    base_url: str

    @contextmanager
    def client(self, name: str = "ana") -> Iterator[httpx.Client]:
        """A client signed in as ``name``."""
        with loopback_client(base_url=self.base_url) as client:
            assert sign_in(client, name).status_code == 303
            yield client


def outbox(adjustment_id: str, state: str) -> dict[str, Any]:
    return {
        "adjustment_id": adjustment_id,
        "idempotency_key": f"key-{adjustment_id}",
        "state": state,
        "next_attempt_at": NOW,
        "created_at": NOW,
        "updated_at": NOW,
    }


def run(
    property_id: str, night: str, status: str, finished: datetime, error: str | None = None
) -> dict[str, Any]:
    return {
        "property_id": property_id,
        "night": night,
        "run_id": f"run-{property_id}-{night}",
        "status": status,
        "error": error,
        "started_at": finished - timedelta(minutes=2),
        "finished_at": finished,
    }


@pytest.fixture
def desk(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Desk]:
    now = datetime.now(UTC)
    with served_desk(database_url, monkeypatch) as served:
        with served.engine.begin() as connection:
            add_rows(
                connection,
                discrepancies,
                [
                    finding("p1", "r-open", 1500),
                    finding("p1", "r-ack", -250, review_status="acknowledged"),
                    finding("p1", "r-cleared", 700, cleared_at=NOW),
                    finding("p1", "r-yen", 1000, category="missing_in_ledger", currency="JPY"),
                    finding("p1", "r-old", 300, night=EARLIER, review_status="resolved"),
                    finding("p2", "r-secret-p2", 900),
                ],
            )
            add_rows(
                connection,
                adjustments,
                [
                    adjustment("adj-proposed", "p1", "proposed", 1500),
                    adjustment("adj-posting", "p1", "approved", 1000),
                    adjustment("adj-posted", "p1", "approved", 200),
                    adjustment("adj-secret-p2", "p2", "proposed", 900),
                ],
            )
            add_rows(
                connection, posting_outbox, [outbox("adj-posting", "posting"), outbox("adj-posted", "posted")]
            )
            add_rows(
                connection,
                night_reconciliations,
                [
                    run("p1", NIGHT, "succeeded", now - timedelta(hours=3, minutes=5)),
                    run(
                        "p1",
                        EARLIER,
                        "failed",
                        now - timedelta(hours=5, minutes=1),
                        "InvalidPropertyError: bad tz",
                    ),
                    run("p2", NIGHT, "failed", now, "secret-p2-error"),
                ],
            )
            add_rows(
                connection,
                stale_nights,
                [
                    {"property_id": "p1", "night": EARLIER, "reason": "late event", "marked_at": NOW},
                    {"property_id": "p2", "night": EARLIER, "reason": "late event", "marked_at": NOW},
                ],
            )
        add_user("ana", "analyst", "p1")
        add_user("ada", "admin", "p1,p2")
        yield Desk(served.engine, served.base_url)


def add_rows(connection: Connection, table: Table, rows: list[dict[str, Any]]) -> None:
    """Each row inserted by itself: an executemany takes its columns from the first row only."""
    for row in rows:
        connection.execute(insert(table), row)


def row_of(page: httpx.Response, property_id: str, night: str) -> str:
    """The text of the overview's row linking to the property-night (tags stripped, spaces collapsed)."""
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", page.text, re.S):
        if f'href="/nights/{property_id}/{night}"' in row:
            return " ".join(re.sub(r"<[^>]+>", " ", row).split())
    raise AssertionError(f"no row for {property_id} {night}")


def test_the_overview_sums_up_each_night_of_the_users_properties(desk: Desk) -> None:
    with desk.client() as client:
        page = client.get("/nights")
    assert page.status_code == 200
    assert "p2" not in page.text and "secret" not in page.text
    latest = row_of(page, "p1", NIGHT)
    assert "Amount differs : 2 outstanding (17.50 EUR), 1 cleared" in latest
    assert "Missing in the ledger : 1 outstanding (1,000 JPY)" in latest
    assert "acknowledged: 1 open: 2" in latest
    assert "approved: 2 proposed: 1 posting: posted 1, posting 1" in latest
    assert latest.endswith("reconciled 3 h ago")
    earlier = row_of(page, "p1", EARLIER)
    assert "Amount differs : 1 outstanding (3.00 EUR)" in earlier and "resolved: 1" in earlier
    assert earlier.endswith(
        "failed 5 h ago: InvalidPropertyError: bad tz; stale since 2026-12-03 08:00 UTC (late event)"
    )
    assert page.text.index(f"/nights/p1/{NIGHT}") < page.text.index(f"/nights/p1/{EARLIER}")


def test_an_admin_sees_both_properties_and_a_stale_night_never_reconciled(desk: Desk) -> None:
    with desk.client("ada") as client:
        page = client.get("/nights")
        only_p2 = client.get("/nights", params={"property": "p2"})
    assert row_of(page, "p2", NIGHT).endswith("secret-p2-error")
    assert "never reconciled; stale since" in row_of(page, "p2", EARLIER)
    assert "/nights/p1/" not in only_p2.text and f"/nights/p2/{NIGHT}" in only_p2.text


def test_the_overview_filters_by_night_and_refuses_bad_filters(desk: Desk) -> None:
    with desk.client() as client:
        latest = client.get("/nights", params={"night_from": NIGHT, "night_to": NIGHT})
        earlier = client.get("/nights", params={"night_to": EARLIER})
        nothing = client.get("/nights", params={"night_from": "2027-01-01"})
        refused = [
            client.get("/nights", params={"property": "p2"}),
            client.get("/nights", params={"night_from": "2026-02-30"}),
            client.get("/nights", params={"night_to": "yesterday"}),
        ]
    assert f"/nights/p1/{NIGHT}" in latest.text and f"/nights/p1/{EARLIER}" not in latest.text
    assert f"/nights/p1/{EARLIER}" in earlier.text and f"/nights/p1/{NIGHT}" not in earlier.text
    assert "No nights recorded for these filters." in nothing.text
    assert [response.status_code for response in refused] == [400, 400, 400]
    assert "unknown property" in refused[0].text and "secret" not in refused[0].text
    assert "not a calendar date" in refused[1].text and "night must be" in refused[2].text


def test_without_a_range_the_overview_shows_the_latest_fourteen_nights(desk: Desk) -> None:
    first = datetime(2026, 10, 1)
    marked = [(first + timedelta(days=n)).date().isoformat() for n in range(20)]
    with desk.engine.begin() as connection:
        add_rows(
            connection,
            stale_nights,
            [{"property_id": "p1", "night": n, "reason": "late event", "marked_at": NOW} for n in marked],
        )
    with desk.client() as client:
        page = client.get("/nights")
        ranged = client.get("/nights", params={"night_from": marked[0]})
    shown = re.findall(r'href="/nights/p1/([0-9-]+)"', page.text)
    assert shown == [NIGHT, EARLIER, *reversed(marked[-12:])]
    assert len(re.findall(r'href="/nights/p1/([0-9-]+)"', ranged.text)) == 22


def test_a_nights_page_shows_its_findings_adjustments_and_run(desk: Desk) -> None:
    with desk.engine.connect() as connection:
        ids = finding_ids(connection)
    with desk.client() as client:
        page = client.get(f"/nights/p1/{NIGHT}")
    assert page.status_code == 200
    text = page.text
    for key in ("r-open", "r-ack", "r-cleared", "r-yen"):
        assert f'href="/findings/{ids[key]}"' in text
    assert "r-old" not in text and "secret" not in text
    for adjustment_id in ("adj-proposed", "adj-posting", "adj-posted"):
        assert f'href="/adjustments/{adjustment_id}"' in text
    assert "15.00 EUR" in text and "-2.50 EUR" in text and "1,000 JPY" in text
    assert f"run-p1-{NIGHT}" in text and "succeeded" in text and "reconciled 3 h ago" in text
    assert f'href="/nights/p1/{NIGHT}/report.html">Night report</a>' in text
    assert f'href="/findings?property=p1&amp;night_from={NIGHT}&amp;night_to={NIGHT}"' in text


def test_another_property_or_a_malformed_night_is_not_found_and_an_empty_night_says_so(desk: Desk) -> None:
    with desk.client() as client:
        other = client.get(f"/nights/p2/{NIGHT}")
        unknown = client.get(f"/nights/p9/{NIGHT}")
        malformed = [
            client.get(f"/nights/p1/{night}") for night in ("2026-13-45", "2026-12-2", "x%27%20OR%201")
        ]
        empty = client.get(f"/nights/p1/{EMPTY_NIGHT}")
    assert [r.status_code for r in (other, unknown, *malformed)] == [404] * 5
    assert other.text == unknown.text and "secret" not in other.text
    assert empty.status_code == 200 and "Nothing recorded for this night." in empty.text


@pytest.mark.parametrize("night", ["9999-12-31", "0001-01-01"])
def test_a_night_at_the_calendars_edge_is_refused_in_one_line_never_a_server_error(
    desk: Desk, night: str
) -> None:
    """The window of 9999-12-31 would end in year 10000, that of 0001-01-01 in Paris start in year 0."""
    with desk.client() as client:
        pages = [client.get(f"/nights/p1/{night}"), client.get(f"/nights/p1/{night}/report.html")]
        filtered = [
            client.get(path, params={name: night})
            for path, name in (
                ("/nights", "night_from"),
                ("/nights", "night_to"),
                ("/findings", "night_from"),
                ("/adjustments", "night_to"),
                ("/matches", "night"),
                ("/nights/export.csv", "night_from"),
            )
        ]
        paired = post_form(
            client,
            "/matches/pair",
            {"property": "p1", "night": night, "records": "ch_1", "entries": "le_1", "reason": "by hand"},
        )
    refusal = f"night '{night}' is not from 0002-01-01 to 9998-12-31"
    assert [page.status_code for page in pages] == [404, 404]
    assert [response.status_code for response in (*filtered, paired)] == [400] * 7
    for response in (*filtered, paired):
        shown = refusal.replace("'", "&#39;")  # as the page's template escapes it
        assert shown in response.text or response.text == refusal  # an export: plain text


def transaction(transaction_id: str, property_id: str | None, amount: int) -> dict[str, Any]:
    return {
        "payout_id": "po_paid",
        "transaction_id": transaction_id,
        "source_id": f"ch_{transaction_id}",
        "kind": "charge",
        "amount_minor": amount,
        "fee_minor": 100,
        "net_minor": amount - 100,
        "currency": "EUR",
        "created_at": NOW,
        "property_id": property_id,
        "night": None if property_id is None else NIGHT,
    }


def add_payouts(engine: Engine) -> None:
    with engine.begin() as connection:
        add_rows(
            connection,
            payouts,
            [
                payout_row("po_paid", "p1", statement_descriptor="REF1"),
                payout_row("po_failed", "p1", "failed", failure_code="account_closed", arrival_night=EARLIER),
                payout_row("po_secret_p2", "p2"),
            ],
        )
        add_rows(
            connection,
            payout_transactions,
            [
                transaction("txn_p1", "p1", 5_000),
                transaction("txn_secret_p2", "p2", 7_000),
                transaction("txn_x", None, 1),
            ],
        )
        connection.execute(
            insert(bank_credits),
            {
                "statement_id": "st1",
                "entry_reference": "e1",
                "detail_index": 0,
                "booking_date": "2026-12-04",
                "amount_minor": 12_345,
                "currency": "EUR",
                "remittance_info": "REF1",
                "imported_at": NOW,
                "matched_payout_id": "po_paid",
            },
        )
        add_rows(
            connection,
            discrepancies,
            [
                finding(
                    "p1", "po_failed:payout", 12_345, category="payout_failed", provider_record_id="po_failed"
                ),
                finding(
                    "p2",
                    "po_secret_p2:payout",
                    1,
                    category="payout_failed",
                    provider_record_id="po_secret_p2",
                ),
            ],
        )


def test_payouts_lists_the_users_payouts_with_deposit_and_findings(desk: Desk) -> None:
    with desk.client() as client:
        assert "No payouts recorded yet." in client.get("/payouts").text
        add_payouts(desk.engine)
        page = client.get("/payouts")
        failed = client.get("/payouts", params={"status": "failed"})
        arriving = client.get("/payouts", params={"arrival_from": NIGHT, "arrival_to": NIGHT})
        refused = [
            client.get("/payouts", params={"status": "lost"}),
            client.get("/payouts", params={"property": "p2"}),
            client.get("/payouts", params={"arrival_from": "2026-12-32"}),
        ]
    assert page.status_code == 200 and "secret" not in page.text
    paid = row_of_payout(page, "po_paid")
    assert "123.45 EUR" in paid and "yes (2026-12-04)" in paid and "paid" in paid and "0.00 EUR" in paid
    failing = row_of_payout(page, "po_failed")
    assert "account_closed" in failing and "payout_failed (2026-12-02, open)" in failing
    assert "Deposited" in page.text and failing.count(" no ") == 1
    assert "po_failed" in failed.text and "po_paid" not in failed.text
    assert "po_paid" in arriving.text and "po_failed" not in arriving.text
    assert [response.status_code for response in refused] == [400, 400, 400]
    assert "unknown payout status 'lost'" in refused[0].text.replace("&#39;", "'")


def row_of_payout(page: httpx.Response, payout_id: str) -> str:
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", page.text, re.S):
        if f'href="/payouts/{payout_id}"' in row:
            return " ".join(re.sub(r"<[^>]+>", " ", row).split())
    raise AssertionError(f"no row for {payout_id}")


def test_a_payouts_page_shows_the_users_transactions_and_another_propertys_payout_is_not_found(
    desk: Desk,
) -> None:
    add_payouts(desk.engine)
    with desk.client() as client:
        page = client.get("/payouts/po_paid")
        other = client.get("/payouts/po_secret_p2")
        unknown = client.get("/payouts/po_nope")
        nul = client.get("/payouts/po_paid%00")  # PostgreSQL refuses NUL in text: a 404, not a 500
    with desk.client("ada") as client:
        seen_by_admin = client.get("/payouts/po_paid")
    assert page.status_code == 200
    assert f'href="/nights/p1/{NIGHT}">p1 {NIGHT}</a>' in page.text and "txn_x" in page.text
    assert "untraced" in page.text and "50.00 EUR" in page.text and "49.00 EUR" in page.text
    assert "secret" not in page.text
    assert (other.status_code, unknown.status_code, nul.status_code) == (404, 404, 404)
    assert other.text == unknown.text == nul.text
    assert "txn_secret_p2" in seen_by_admin.text


def test_a_payout_not_traced_says_why(desk: Desk) -> None:
    add_payouts(desk.engine)
    with desk.engine.begin() as connection:
        connection.execute(payouts.update().where(payouts.c.payout_id == "po_paid").values(traced=False))
        add_rows(
            connection,
            payouts,
            [payout_row("po_whole", "p1", traced=False, transactions=None, sum_difference_minor=None)],
        )
    with desk.client() as client:
        partly = client.get("/payouts/po_paid").text
        whole = client.get("/payouts/po_whole").text
        traced = client.get("/payouts/po_failed").text
    assert "no: 1 of its 3 transactions belong to no property-night (ch_txn_x)" in partly
    assert "no: the provider cannot break this payout down" in whole
    assert "yes: every transaction it carried belongs to a property-night" in traced
