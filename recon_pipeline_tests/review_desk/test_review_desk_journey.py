"""The review desk's acceptance journey in Debian's Chromium, on a real server over SQLite: an analyst signs
in, filters, opens a finding and acknowledges it, exports the filtered list as xlsx (read back with
openpyxl); then two approvers approve an adjustment above the property's threshold, the first leaving it
waiting for the second. Every step goes through the pages' own forms and links, as a person's would."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import openpyxl
import pytest
from playwright.sync_api import Page, expect
from sqlalchemy import Engine, insert, select

from recon_pipeline.db.schema import adjustments, discrepancies, posting_outbox, review_audit
from recon_pipeline.review.store import set_threshold
from recon_pipeline_tests.support.browser import WatchedPage, chromium_page
from recon_pipeline_tests.support.desk_fixtures import (
    NIGHT,
    NOW,
    PASSWORD,
    ServedDesk,
    add_user,
    finding,
    served_desk,
)
from recon_pipeline_tests.support.posting_fixtures import propose

pytestmark = [
    pytest.mark.slow,  # drives Chromium
    pytest.mark.parametrize("database_url", ["sqlite"], indirect=True),
]

FOUR_EYES_ABOVE = 1000  # p1's threshold, minor units: the 25.00 EUR adjustment needs two approvers
CAUGHT = "guest paid at the desk, booked twice"


@pytest.fixture
def desk(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[ServedDesk]:
    with served_desk(database_url, monkeypatch) as served:
        propose(served.engine, "ch_big", 2500, property_id="p1", night=NIGHT)
        with served.engine.begin() as connection:
            set_threshold(connection, "p1", FOUR_EYES_ABOVE, NOW)
            connection.execute(
                insert(discrepancies),
                [
                    finding("p1", "ch_big", 2500, category="missing_in_ledger", provider_record_id="ch_big"),
                    finding("p1", "ch_small", 40, provider_record_id="ch_small"),
                    finding(
                        "p1", "ch_dup", -1800, category="duplicate_in_ledger", provider_record_id="ch_dup"
                    ),
                    finding(
                        "p2", "ch_other", 9000, category="missing_in_ledger", provider_record_id="ch_other"
                    ),
                ],
            )
        add_user("ana", "analyst", "p1")
        add_user("alice", "approver", "p1")
        add_user("bob", "approver", "p1")
        yield served


def sign_in(page: Page, base_url: str, name: str) -> None:
    page.goto(f"{base_url}/findings")
    page.get_by_label("Name").fill(name)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{base_url}/findings")


def sign_out(page: Page, base_url: str) -> None:
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url(f"{base_url}/signin")


def approve_in_queue(watched: WatchedPage, base_url: str, adjustment_id: str, comment: str) -> str:
    """Tick the adjustment in the queue, approve it through the confirmation page; the result's line."""
    page = watched.page
    page.get_by_role("link", name="Adjustments").click()
    page.wait_for_url(f"{base_url}/adjustments")
    page.get_by_label(f"Select {adjustment_id}").check()
    page.get_by_role("button", name="Approve selected").click()
    page.wait_for_url(f"{base_url}/adjustments/confirm")
    expect(page.get_by_role("cell", name="25.00 EUR")).to_be_visible()  # the amount is shown before deciding
    page.get_by_label("Comment").fill(comment)
    page.get_by_role("button", name="Confirm").click()
    page.wait_for_url(f"{base_url}/adjustments/decide")
    return page.get_by_role("row").filter(has_text=adjustment_id).inner_text()


def test_an_analyst_acknowledges_and_exports_and_two_approvers_approve(
    desk: ServedDesk, tmp_path: Path
) -> None:
    base = desk.base_url
    with desk.engine.connect() as connection:
        adjustment_id = connection.execute(select(adjustments.c.adjustment_id)).scalar_one()
    with chromium_page("review-desk-journey") as watched:
        page = watched.page
        sign_in(page, base, "ana")

        # Filter: findings of at least 10.00 EUR either way; the 0.40 EUR one and p2's are not listed.
        page.get_by_label("Amount at least").fill("10.00")
        page.get_by_role("button", name="Filter").click()
        page.wait_for_url(re.compile(r".*amount_at_least=10\.00.*"))
        listed = page.get_by_role("link", name=re.compile(r"^ch_"))
        assert sorted(listed.all_inner_texts()) == ["ch_big", "ch_dup"]

        # Open the finding and acknowledge it with a comment.
        page.get_by_role("link", name="ch_big").click()
        page.wait_for_url(re.compile(r".*/findings/\d+\?amount_at_least=10\.00$"))
        page.get_by_label("Comment").fill(CAUGHT)
        page.get_by_role("button", name="Acknowledge").click()
        page.wait_for_load_state()
        expect(page.get_by_role("cell", name=CAUGHT).first).to_be_visible()  # in the finding's history
        watched.screenshot("review-desk-acknowledged")

        # Export the filtered list as xlsx and read it back: the rows the page listed, the review kept.
        page.go_back()
        page.go_back()
        page.wait_for_url(re.compile(r".*amount_at_least=10\.00.*"))
        with page.expect_download() as download_info:
            page.get_by_role("link", name="Export xlsx").click()
        download = download_info.value
        saved = tmp_path / download.suggested_filename
        download.save_as(saved)
        assert saved.name == "findings-at-least-10.00.xlsx"
        sheet = openpyxl.load_workbook(saved).active
        assert sheet is not None
        header, *rows = [list(row) for row in sheet.iter_rows(values_only=True)]
        exported = {row[header.index("Record")]: row for row in rows[: rows.index([None] * len(header))]}
        assert sorted(exported) == ["ch_big", "ch_dup"]
        big = exported["ch_big"]
        assert (big[header.index("Difference")], big[header.index("State")]) == (25, "Acknowledged")
        assert big[header.index("Review note")] == CAUGHT

        # An analyst sees the queue but has no way to decide.
        page.get_by_role("link", name="Adjustments").click()
        expect(page.get_by_role("link", name=adjustment_id)).to_be_visible()
        assert page.get_by_role("button", name="Approve selected").count() == 0
        sign_out(page, base)

        # Four eyes: the first approver's approval waits for a second one, by someone else.
        sign_in(page, base, "alice")
        first = approve_in_queue(watched, base, adjustment_id, "matches the Stripe charge")
        assert "approved 1 of 2: waiting for a second approver" in first
        sign_out(page, base)
        with desk.engine.connect() as connection:
            assert connection.execute(select(adjustments.c.status)).scalar_one() == "proposed"
            assert connection.execute(select(posting_outbox.c.adjustment_id)).all() == []

        sign_in(page, base, "bob")
        second = approve_in_queue(watched, base, adjustment_id, "second pair of eyes: agreed")
        assert "proposed -> approved" in second
        page.get_by_role("link", name="Back to adjustments").click()
        page.get_by_role("link", name="Posting", exact=True).click()  # the queue's tab of approved ones
        decided = page.get_by_role("row").filter(has_text=adjustment_id)
        expect(decided.get_by_text("Approved by alice, bob")).to_be_visible()
        watched.screenshot("review-desk-approved")
        sign_out(page, base)

        assert watched.console_errors == [] and watched.page_errors == []
        assert {url.split("/")[2] for url in watched.requested_urls} == {base.split("/")[2]}

    assert_recorded(desk.engine, adjustment_id)


def assert_recorded(engine: Engine, adjustment_id: str) -> None:
    """The database holds what the pages said: approved once, one posting, and who did what at which
    amount in the audit log."""
    with engine.connect() as connection:
        assert connection.execute(select(adjustments.c.status)).scalar_one() == "approved"
        assert connection.execute(select(posting_outbox.c.adjustment_id)).scalars().all() == [adjustment_id]
        audit = connection.execute(
            select(review_audit.c.user_name, review_audit.c.action, review_audit.c.amount_seen)
            .where(review_audit.c.action.in_(("acknowledge", "approve")))
            .order_by(review_audit.c.id)
        ).all()
    assert [tuple(row) for row in audit] == [
        ("ana", "acknowledge", 2500),
        ("alice", "approve", 2500),
        ("bob", "approve", 2500),
    ]
