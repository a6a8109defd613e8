"""A finding on the review desk, on a real server over SQLite and PostgreSQL: its page (both sides'
records narrowed to its property, review history, adjustments, Dagster links) and its review through the
form (acknowledge, resolve, reopen with a comment), with what every refusal leaves unchanged."""

from __future__ import annotations

import html
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, Table, event, func, insert, select

from recon_pipeline.db.schema import (
    adjustments,
    bookings,
    discrepancies,
    discrepancy_reviews,
    ledger_entries,
    payment_events,
    payment_orders,
    payouts,
    provider_records,
    review_audit,
)
from recon_pipeline.review.links import DAGSTER_UI_URL_ENV, FINDINGS_ASSET, PAYOUTS_ASSET, parse_web_root
from recon_pipeline.review_desk.app import DeskSettings
from recon_pipeline.review_desk.findings import search_condition
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
from recon_pipeline_tests.support.loopback import loopback_client
from recon_pipeline_tests.support.migrated import migrated_engine

DAGSTER = "http://dagster.example:3000"
LEDGER_SCRIPT = "<script>alert('ledger')</script>"
ADJ_OLD, ADJ_NEW = "adj_" + "0" * 24, "adj_" + "1" * 24
CHARGED = datetime(2026, 12, 2, 22, 14, tzinfo=UTC)  # 23:14 in Paris, the desk's properties' timezone


@dataclass
class Desk:
    engine: Engine
    base_url: str
    ids: dict[str, int]  # finding id by record key

    @contextmanager
    def client(self) -> Iterator[httpx.Client]:
        """A client signed in as ana (analyst of p1)."""
        with loopback_client(base_url=self.base_url) as client:
            assert sign_in(client, "ana").status_code == 303
            yield client

    def reviews(self) -> list[tuple[Any, ...]]:
        with self.engine.connect() as connection:
            query = select(
                discrepancy_reviews.c.record_key,
                discrepancy_reviews.c.action,
                discrepancy_reviews.c.previous_status,
                discrepancy_reviews.c.reviewed_by,
                discrepancy_reviews.c.note,
                discrepancy_reviews.c.difference_minor,
            ).order_by(discrepancy_reviews.c.review_id)
            return [tuple(row) for row in connection.execute(query)]

    def actions(self) -> list[tuple[Any, ...]]:
        """The audit log's review actions (sign-ins and page views left out)."""
        with self.engine.connect() as connection:
            query = (
                select(
                    review_audit.c.user_name,
                    review_audit.c.action,
                    review_audit.c.target,
                    review_audit.c.amount_seen,
                    review_audit.c.detail,
                )
                .where(review_audit.c.action.not_in(["sign_in", "view_finding"]))
                .order_by(review_audit.c.id)
            )
            return [tuple(row) for row in connection.execute(query)]

    def findings(self) -> list[dict[str, Any]]:
        with self.engine.connect() as connection:
            query = select(discrepancies).order_by(discrepancies.c.discrepancy_id)
            return [dict(row) for row in connection.execute(query).mappings()]


def seed(engine: Engine) -> dict[str, int]:
    """Findings of p1 (one with both sides stored, one whose ledger entry and booking are p2's, a
    payout's) and of p2; the records behind them; two revisions of the first one's adjustment."""
    both_sides = dict(provider_record_id="ch_1", ledger_entry_id="le_1", booking_id="bk_1")
    rows: list[tuple[Table, dict[str, Any]]] = [
        (
            discrepancies,
            finding(
                "p1",
                "r-both",
                1500,
                "ledger short",
                provider_amount_minor=10000,
                ledger_amount_minor=8500,
                run_id="run-abc",
                **both_sides,
            ),
        ),
        (discrepancies, finding("p1", "r-foreign", 700, ledger_entry_id="le_p2", booking_id="bk_p2")),
        (
            discrepancies,
            finding("p1", "po_1:payout", 5000, category="payout_failed", provider_record_id="po_1"),
        ),
        (discrepancies, finding("p2", "r-other", 900)),
        (
            payment_orders,
            dict(
                provider_payment_id="ch_1",
                property_id="p1",
                booking_id="bk_1",
                amount_minor=10000,
                currency="EUR",
                status="captured",
                captured_at=NOW,
                updated_at=NOW,
            ),
        ),
        *(
            (
                provider_records,
                dict(
                    property_id=property_id,
                    provider_record_id="ch_1",
                    kind="payment",
                    night=NIGHT,
                    provider="stripe",
                    provider_account="acct_1",
                    charge_id="ch_1",
                    payment_intent_id="pi_1",
                    booking_id="bk_1",
                    status=status,
                    settled=True,
                    created_at=CHARGED,
                    amount_minor=10000,
                    currency="EUR",
                    fee_minor=-320,
                    net_minor=9680,
                    card_brand="visa",
                    card_last4="4242",
                    approval_code="A1B2C3",
                    dashboard_url="https://dashboard.stripe.com/acct_1/payments/ch_1",
                    run_id="run-abc",
                    seen_at=NOW,
                ),
            )
            for property_id, status in (("p1", "succeeded"), ("p2", "status-of-p2"))
        ),
        (
            payment_events,
            dict(
                event_id="evt_1",
                provider="stripe",
                event_type="charge.succeeded",
                provider_payment_id="ch_1",
                payload="{}",
                received_at=NOW,
            ),
        ),
        (
            ledger_entries,
            dict(
                entry_id="le_1",
                property_id="p1",
                booking_id="bk_1",
                provider_record_id="ch_1",
                kind=LEDGER_SCRIPT,
                amount_minor=8500,
                currency="EUR",
                posted_at=NOW,
            ),
        ),
        (
            ledger_entries,
            dict(
                entry_id="le_p2",
                property_id="p2",
                booking_id="bk_p2",
                kind="payment-of-p2",
                amount_minor=700,
                currency="EUR",
                posted_at=NOW,
            ),
        ),
        *(
            (
                bookings,
                dict(
                    booking_id=booking_id,
                    property_id=property_id,
                    status=status,
                    amount_minor=10000,
                    currency="EUR",
                    created_at=NOW,
                    updated_at=NOW,
                ),
            )
            for booking_id, property_id, status in (("bk_1", "p1", "checked_in"), ("bk_p2", "p2", "of-p2"))
        ),
        (
            payouts,
            dict(
                payout_id="po_1",
                provider="stripe",
                amount_minor=5000,
                currency="EUR",
                status="failed",
                failure_code="account_closed",
                arrival_night=NIGHT,
                automatic=True,
                created_at=NOW,
                traced=True,
                holder_property_id="p1",
                last_seen_at=NOW,
            ),
        ),
        *(
            (
                adjustments,
                dict(
                    adjustment_id=adjustment_id,
                    idempotency_key=f"key-{revision}",
                    property_id="p1",
                    night=NIGHT,
                    kind="payment",
                    amount_minor=amount,
                    currency="EUR",
                    reason="ledger short",
                    status=status,
                    created_at=NOW,
                    category="amount_mismatch",
                    record_key="r-both",
                    revision=revision,
                    provider_record_id="ch_1",
                    ledger_entry_id="le_1",
                ),
            )
            for adjustment_id, revision, amount, status in (
                (ADJ_OLD, 1, 1400, "superseded"),
                (ADJ_NEW, 2, 1500, "proposed"),
            )
        ),
    ]
    with engine.begin() as connection:
        for table, row in rows:
            connection.execute(insert(table).values(**row))
        return finding_ids(connection)


@pytest.fixture
def desk(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Desk]:
    with served_desk(database_url, monkeypatch, dagster_ui_url=DAGSTER) as served:
        ids = seed(served.engine)
        add_user("ana", "analyst", "p1")
        yield Desk(served.engine, served.base_url, ids)


def review(
    client: httpx.Client, finding_id: int, action: str, comment: str, **extra: str
) -> httpx.Response:
    return post_form(
        client, f"/findings/{finding_id}/review", {"action": action, "comment": comment, **extra}
    )


def test_acknowledge_resolve_and_reopen_through_the_form_record_who_why_and_the_amount(desk: Desk) -> None:
    finding_id = desk.ids["r-both"]
    with desk.client() as client:
        for action, comment, status in (
            ("acknowledge", "asking the front desk", "acknowledged"),
            ("resolve", "booked by hand", "resolved"),
            ("reopen", "not booked after all", "open"),
        ):
            response = review(client, finding_id, action, comment, difference_seen="1500")
            assert response.status_code == 303 and response.headers["location"] == f"/findings/{finding_id}"
            page = client.get(f"/findings/{finding_id}")
            assert f"<dt>Review state</dt><dd>{status.capitalize()} (last reviewed by ana" in page.text
            assert comment in page.text  # in the history
        # Acting again changes nothing but is still in the audit log.
        assert review(client, finding_id, "reopen", "still open").status_code == 303
    assert desk.reviews() == [
        ("r-both", "acknowledge", "open", "ana", "asking the front desk", 1500),
        ("r-both", "resolve", "acknowledged", "ana", "booked by hand", 1500),
        ("r-both", "reopen", "resolved", "ana", "not booked after all", 1500),
    ]
    target = str(finding_id)
    assert desk.actions() == [
        ("ana", "acknowledge", target, 1500, "open -> acknowledged"),
        ("ana", "resolve", target, 1500, "acknowledged -> resolved"),
        ("ana", "reopen", target, 1500, "resolved -> open"),
        ("ana", "reopen", target, 1500, "already open, unchanged"),
    ]
    row = next(row for row in desk.findings() if row["discrepancy_id"] == finding_id)
    assert (row["review_status"], row["reviewed_by"], row["review_note"]) == (
        "open",
        "ana",
        "not booked after all",
    )
    assert row["reviewed_difference_minor"] == 1500


def test_refused_reviews_change_nothing(desk: Desk) -> None:
    finding_id = desk.ids["r-both"]
    with desk.client() as client:
        assert review(client, finding_id, "resolve", "done").status_code == 303
        before = (desk.findings(), desk.reviews(), desk.actions())
        path = f"/findings/{finding_id}/review"

        no_csrf = client.post(path, data={"action": "acknowledge", "comment": "x"})
        assert no_csrf.status_code == 403
        for comment, message in (
            ("", "say why with the comment"),
            ("   \n ", "say why with the comment"),
            ("x" * 2001, "the comment must be at most 2000 characters"),
        ):
            page = review(client, finding_id, "reopen", comment)
            assert page.status_code == 400 and message in page.text
        page = review(client, finding_id, "delete", "why not")
        assert page.status_code == 400 and "unknown action 'delete'" in html.unescape(page.text)
        page = review(client, finding_id, "reopen", "x", difference_seen="15.00")
        assert page.status_code == 400 and "not a whole number" in page.text
        # Another property's finding, an unknown id and a malformed one are the same 404.
        for target in (desk.ids["r-other"], 999999, "1 OR 1=1"):
            assert (
                post_form(
                    client, f"/findings/{target}/review", {"action": "reopen", "comment": "x"}
                ).status_code
                == 404
            )
        # A transition the status forbids, and a difference other than the one on the page: 409.
        page = review(client, finding_id, "acknowledge", "on it")
        assert page.status_code == 409
        assert "it is already resolved; a resolved finding cannot be acknowledged" in page.text
        assert "on it</textarea>" in page.text  # the comment is kept for another try
        page = review(client, finding_id, "reopen", "wrong amount", difference_seen="-1500")
        assert (
            page.status_code == 409
            and "the difference is now 15.00 EUR, not the -15.00 EUR you saw" in page.text
        )
    assert (desk.findings(), desk.reviews(), desk.actions()) == before


def test_a_finding_shows_both_sides_its_history_adjustments_and_dagster_links(desk: Desk) -> None:
    with desk.client() as client:
        review(client, desk.ids["r-both"], "acknowledge", "asking <b>them</b>")
        page = client.get(f"/findings/{desk.ids['r-both']}").text
        foreign = client.get(f"/findings/{desk.ids['r-foreign']}").text
        payout = client.get(f"/findings/{desk.ids['po_1:payout']}").text
    provider, pms = page.split('id="provider-side"')[1].split('id="pms-side"')
    pms = pms.split("<h2>Review</h2>")[0]
    # The heading names the category in words, with its meaning and sign.
    assert (
        'Finding 1: <a class="category" href="/legend#amount_mismatch"' in page and "Amount differs" in page
    )
    assert "Both sides have the money movement but book different amounts." in page
    assert "Positive: the provider moved more than the ledger books" in page
    # The provider's record as the provider holds it: status, times in both zones, amounts, card, link.
    for shown in (
        "<dt>Status</dt><dd>Succeeded</dd>",
        "<dt>Created</dt><dd>2026-12-02 23:14 Europe/Paris (22:14 UTC)</dd>",
        "<dt>Amount</dt><dd>100.00 EUR</dd>",
        "<dt>Fee</dt><dd>-3.20 EUR</dd>",
        "<dt>Net</dt><dd>96.80 EUR</dd>",
        "<dt>Card</dt><dd>Visa •••• 4242</dd>",
        "<dt>Approval code</dt><dd>A1B2C3</dd>",
        "<dt>Booking</dt><dd>bk_1</dd>",
        "<dt>Payment intent</dt><dd>pi_1</dd>",
        '<a class="dashboard" href="https://dashboard.stripe.com/acct_1/payments/ch_1"',
        "Open in Stripe&#39;s dashboard",
        "charge.succeeded",
        "evt_1",
    ):
        assert shown in provider, shown
    assert "status-of-p2" not in page  # the same id stored for another property is not shown
    # The PMS side with human labels, in major units; no column names, no minor units.
    for shown in ("<dt>Entry</dt><dd>le_1</dd>", "<dt>Amount</dt><dd>85.00 EUR</dd>", "Checked in"):
        assert shown in pms, shown
    assert "<dt>Posted at</dt><dd>2026-12-03 09:00 Europe/Paris (08:00 UTC)</dd>" in pms
    for raw in ("entry_id", "posted_at", "8500", "10000"):
        assert raw not in provider + pms, raw
    assert "_minor" not in page
    # A ledger description (the PMS's own text) is shown as text, never markup.
    assert LEDGER_SCRIPT not in page and "&lt;script&gt;alert(&#39;ledger&#39;)&lt;/script&gt;" in page
    # One history: detected, the review, the adjustments proposed.
    history = page.split('id="history"')[1]
    assert "asking &lt;b&gt;them&lt;/b&gt;" in history and "Finding open → acknowledged" in history
    assert "Adjustment revision 2 proposed" in history and "Last detected by run run-abc" in history
    assert f'<a href="/adjustments/{ADJ_OLD}">' in page and f'<a href="/adjustments/{ADJ_NEW}">' in page
    assert "Superseded by a newer amount" in page and "14.00 EUR" in page and "Needs a decision" in page
    assert f'<a href="/nights/p1/{NIGHT}">' in page
    assert f'<a href="{DAGSTER}/runs/run-abc">' in page
    assert f'<a href="{DAGSTER}/assets/{FINDINGS_ASSET}?view=partitions&amp;partition={NIGHT}">' in page
    # Records of another property with the ids the finding names are not shown.
    assert "payment-of-p2" not in foreign and "of-p2" not in foreign
    assert "No stored ledger entry or booking" in foreign and "No stored provider record" in foreign
    assert "No adjustment proposed." in foreign and "Not reviewed yet." in foreign
    assert f"{DAGSTER}/runs/" not in foreign  # no run recorded: no run link
    assert "account_closed" in payout and "Payout failed" in payout
    assert f'<a href="{DAGSTER}/assets/{PAYOUTS_ASSET}?view=partitions&amp;partition={NIGHT}">' in payout


def test_a_cleared_finding_says_when_and_by_which_run_and_a_currency_mismatch_both_currencies(
    desk: Desk,
) -> None:
    cleared_at = datetime(2026, 12, 4, 5, 30, tzinfo=UTC)
    with desk.engine.begin() as connection:
        connection.execute(
            discrepancies.update()
            .where(discrepancies.c.discrepancy_id == desk.ids["r-both"])
            .values(cleared_at=cleared_at, cleared_run_id="run-later")
        )
        connection.execute(
            insert(discrepancies).values(
                **finding("p1", "r-fx", 0, category="currency_mismatch", ledger_currency="GBP")
            )
        )
        fx_id = finding_ids(connection)["r-fx"]
    with desk.client() as client:
        page = client.get(f"/findings/{desk.ids['r-both']}").text
        fx = client.get(f"/findings/{fx_id}").text
    assert "Cleared 2026-12-04 06:30 Europe/Paris (05:30 UTC) by run run-later" in page
    assert "the ledger (or the provider) has since changed to agree" in page
    assert "Cleared by run run-later" in page.split('id="history"')[1]
    assert "EUR ≠ GBP" in fx and "0.00 EUR" not in fx
    assert "No: the latest run still finds it." in fx


def test_no_dagster_link_without_a_dagster_ui(database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with served_desk(database_url, monkeypatch) as served:
        ids = seed(served.engine)
        add_user("ana", "analyst", "p1")
        with Desk(served.engine, served.base_url, ids).client() as client:
            page = client.get(f"/findings/{ids['r-both']}")
    assert page.status_code == 200 and "ledger short" in page.text
    assert "Dagster" not in page.text and "/runs/" not in page.text and "/assets/" not in page.text


def test_the_dagster_ui_url_comes_from_the_environment_and_names_the_real_assets(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from recon_pipeline.defs.assets import FINDINGS
    from recon_pipeline.defs.payouts import PAYOUTS

    assert (FINDINGS.to_user_string(), PAYOUTS.to_user_string()) == (FINDINGS_ASSET, PAYOUTS_ASSET)
    monkeypatch.setenv("RECON_REVIEW_SECRET", "k" * 32)
    monkeypatch.delenv("RECON_DAGSTER_UI_URL", raising=False)
    assert DeskSettings.from_environment().dagster_ui_url is None
    monkeypatch.setenv("RECON_DAGSTER_UI_URL", "https://dagster.example/ ")
    assert DeskSettings.from_environment().dagster_ui_url == "https://dagster.example"
    for bad in ("dagster.example", "javascript:alert(1)", "http://x/?a=1"):
        with pytest.raises(ValueError, match="^RECON_DAGSTER_UI_URL "):
            parse_web_root(bad, DAGSTER_UI_URL_ENV)


def test_an_adjustments_page_shows_what_it_corrects_in_words(desk: Desk) -> None:
    with desk.client() as client:
        page = client.get(f"/adjustments/{ADJ_NEW}").text
    corrects = page.split('id="what-it-corrects"')[1].split("</section>")[0]
    assert f'<a href="/findings/{desk.ids["r-both"]}">{desk.ids["r-both"]}: Amount differs</a>' in corrects
    assert "15.00 EUR" in corrects and "ledger short" in corrects
    for shown in (
        "<dt>Entry</dt><dd>le_1</dd>",
        "<dt>Amount</dt><dd>85.00 EUR</dd>",
        "<dt>Posted at</dt><dd>2026-12-03 09:00 Europe/Paris (08:00 UTC)</dd>",
        "<dt>Status</dt><dd>Succeeded</dd>",
        "<dt>Net</dt><dd>96.80 EUR</dd>",
        'href="https://dashboard.stripe.com/acct_1/payments/ch_1"',
    ):
        assert shown in corrects, shown
    assert "amount_minor" not in corrects and "status-of-p2" not in corrects


@pytest.mark.postgres
def test_a_search_is_answered_from_indexes_not_a_scan_of_every_finding(postgres_url: str) -> None:
    """With sequential scans priced out, PostgreSQL's plan for a search still reads no table whole: each
    name the search looks for is one index lookup (the record key's part by trigram). An OR of them
    could only be answered by reading every finding, which one search over a fleet paid for in CPU."""
    engine = migrated_engine(postgres_url)
    searched = select(func.count()).select_from(discrepancies).where(search_condition("bk_12", None))
    sql = str(searched.compile(dialect=engine.dialect, compile_kwargs={"literal_binds": True}))
    try:
        with engine.connect() as connection:
            connection.exec_driver_sql("SET enable_seqscan = off")
            plan = "\n".join(row[0] for row in connection.exec_driver_sql(f"EXPLAIN {sql}"))
    finally:
        engine.dispose()
    assert "Seq Scan" not in plan, plan
    for index in ("booking", "provider_record", "ledger_entry", "record_key_trigram"):
        assert f"ix_discrepancies_{index}" in plan, plan
    assert "ix_ledger_entries_reference" in plan, plan


def _scans_of_findings(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every node of an EXPLAIN (FORMAT JSON) plan that reads ``discrepancies`` or one of its indexes."""
    if plan.get("Relation Name") == "discrepancies" or str(plan.get("Index Name", "")).startswith(
        ("discrepancies_", "ix_discrepancies_", "uq_discrepancies_")
    ):
        yield plan
    for child in plan.get("Plans", []):
        yield from _scans_of_findings(child)


@pytest.mark.postgres
def test_every_statement_of_a_search_page_reads_the_search_matches_not_every_finding(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An admin's search page (its count, its page of findings, its totals per currency) as the desk runs
    it: with sequential scans priced out, no statement reads the findings whole or walks a whole index;
    each reads the rows the search's lookups found by their key (``= ANY`` of the lookups' ids, run once),
    whatever the planner guesses the lookups find. Joined to the lookups instead, a table whose statistics
    are stale or missing was read whole by each of the three."""
    with served_desk(postgres_url, monkeypatch) as served:
        seed(served.engine)
        with served.engine.begin() as connection:  # a fleet's findings besides the seed's few
            others = [finding("p2", f"r-{index}", index) for index in range(2_000)]
            connection.execute(insert(discrepancies), others)
            connection.exec_driver_sql("ANALYZE discrepancies")
        add_user("ada", "admin", "p1,p2")
        ran: list[tuple[str, Any]] = []

        def record(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_rest: Any) -> None:
            if "discrepancies" in statement:
                ran.append((statement, parameters))

        event.listen(served.engine, "before_cursor_execute", record)
        try:
            with loopback_client(base_url=served.base_url) as client:
                assert sign_in(client, "ada").status_code == 303
                page = client.get("/findings", params={"q": "bk_1"})
        finally:
            event.remove(served.engine, "before_cursor_execute", record)
        assert page.status_code == 200 and "r-both" in page.text and "r-other" not in page.text
        assert len(ran) == 3, ran  # the count, the page, the totals
        with served.engine.connect() as connection:
            connection.exec_driver_sql("SET enable_seqscan = off")
            for statement, parameters in ran:
                explained = connection.exec_driver_sql(f"EXPLAIN (FORMAT JSON) {statement}", parameters)
                (plan,) = explained.scalar_one()
                scans = list(_scans_of_findings(plan["Plan"]))
                assert scans, plan
                for scan in scans:
                    assert scan["Node Type"] != "Seq Scan", (statement, plan)
                    assert "Index Cond" in scan or "Recheck Cond" in scan, (statement, plan)
                by_key = [scan for scan in scans if scan.get("Index Name") == "discrepancies_pkey"]
                assert by_key and all("= ANY ($" in scan["Index Cond"] for scan in by_key), (statement, plan)
