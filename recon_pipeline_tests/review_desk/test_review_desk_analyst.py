"""Issue 27's acceptance in Debian's Chromium at 1,366 x 768, an analyst's laptop, on a realistic night
(``support/analyst_night.py``: three properties in EUR, GBP and JPY, 273 findings, adjustments in every
state, matches and payouts) served over SQLite: the legend and each category's sentence, search by
booking, sorting by difference, per-currency totals, bulk acknowledge through its confirmation page,
next/previous through a filtered list, and no page wider than the window. What the pages show is checked
against the database, not against what the page says of itself."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Page, expect
from sqlalchemy import Engine, func, select

from recon_pipeline import categories as c
from recon_pipeline.db.schema import discrepancies, review_audit
from recon_pipeline.words import CATEGORY_WORDS, SIGN_CONVENTION, category_label, category_meaning
from recon_pipeline_tests.review_desk.screenshots import (
    ANALYST,
    APPROVER,
    analyst_desk,
    desk_pages,
    sign_in,
)
from recon_pipeline_tests.support.analyst_night import (
    PROPERTY_IDS,
    SEARCHED_BOOKING,
    SEARCHED_FINDINGS,
    seeded_adjustment,
)
from recon_pipeline_tests.support.browser import LAPTOP_VIEWPORT, chromium_page
from recon_pipeline_tests.support.desk_fixtures import ServedDesk

pytestmark = [
    pytest.mark.slow,  # drives Chromium
    pytest.mark.parametrize("database_url", ["sqlite"], indirect=True),
]

WIDTH = LAPTOP_VIEWPORT[0]
QUEUE_TABS = ("decide", "waiting", "posting", "done", "closed", "all")


@pytest.fixture
def desk(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[ServedDesk]:
    with analyst_desk(database_url, monkeypatch) as served:
        yield served


@pytest.fixture
def analyst(desk: ServedDesk, request: pytest.FixtureRequest) -> Iterator[Page]:
    """A laptop-sized Chromium page signed in as the analyst."""
    with chromium_page(request.node.name, viewport=LAPTOP_VIEWPORT) as watched:
        sign_in(watched.page, desk.base_url, ANALYST)
        yield watched.page


def row_ids(page: Page, table: str = "#findings") -> list[int]:
    """The ``data-id`` of each body row of the list ``table``, in the page's order."""
    ids = page.locator(f"{table} tbody tr[data-id]").evaluate_all("rows => rows.map(r => r.dataset.id)")
    return [int(i) for i in ids]


def column_amounts(page: Page, header: str, table: str = "#findings") -> list[tuple[str, int]]:
    """(currency, minor) of each body row's amount cell in the column headed ``header``."""
    cells = page.locator(f"{table} tbody tr[data-id]").evaluate_all(
        """(rows, header) => {
            const heads = [...rows[0].closest('table').querySelectorAll('thead th')];
            const at = heads.findIndex(th => th.textContent.trim().startsWith(header));
            return rows.map(r => {
                const cell = r.children[at].querySelector('.amount') || r.children[at];
                return [cell.dataset.currency, cell.dataset.minor];
            });
        }""",
        header,
    )
    return [(currency, int(minor)) for currency, minor in cells]


def footer_totals(page: Page, table: str = "#findings") -> dict[str, tuple[int, int]]:
    """Each ``tfoot tr.total`` row's currency: (rows it counts, its amount in minor units)."""
    totals = page.locator(f"{table} tfoot tr.total").evaluate_all(
        """rows => rows.map(r => [r.dataset.currency, r.dataset.rows,
                                  r.querySelector('.amount').dataset.minor])"""
    )
    return {currency: (int(rows), int(minor)) for currency, rows, minor in totals}


def database_totals(engine: Engine, *conditions: object) -> dict[str, tuple[int, int]]:
    """Per currency: (findings, sum of their differences) of the analyst's properties under ``conditions``."""
    d = discrepancies.c
    with engine.connect() as connection:
        rows = connection.execute(
            select(d.currency, func.count(), func.sum(d.difference_minor))
            .where(d.property_id.in_(PROPERTY_IDS), *conditions)  # type: ignore[arg-type]
            .group_by(d.currency)
        ).all()
    return {currency: (int(n), int(total)) for currency, n, total in rows}


def differences(engine: Engine) -> dict[int, int]:
    """Every finding's difference (minor units) by its id."""
    with engine.connect() as connection:
        return dict(
            connection.execute(select(discrepancies.c.discrepancy_id, discrepancies.c.difference_minor)).all()
        )


def query_of(url: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(url).query)


def test_the_legend_explains_every_category_and_the_list_links_to_it(desk: ServedDesk, analyst: Page) -> None:
    base = desk.base_url
    analyst.get_by_role("link", name="Legend").click()
    analyst.wait_for_url(f"{base}/legend")
    expect(analyst.get_by_role("heading", level=1)).to_have_text("Legend")
    expect(analyst.get_by_text(SIGN_CONVENTION)).to_be_visible()
    for code, words in CATEGORY_WORDS.items():
        row = analyst.locator(f"#legend tr#{code}")
        expect(row).to_be_visible()
        for sentence in (words.label, words.meaning, words.sign):
            expect(row).to_contain_text(sentence)

    # On the list, a category reads as its label, its sentence on hover, and links to its legend row.
    analyst.goto(f"{base}/findings?category={c.CURRENCY_MISMATCH}")
    category = analyst.locator("#findings tbody a.category").first
    expect(category).to_have_text(category_label(c.CURRENCY_MISMATCH))
    assert category_meaning(c.CURRENCY_MISMATCH) in (category.get_attribute("title") or "")
    expect(analyst.locator("#findings")).to_contain_text("EUR ≠ GBP")  # both sides' currencies, not 0.00
    category.click()
    analyst.wait_for_url(f"{base}/legend#{c.CURRENCY_MISMATCH}")
    expect(analyst.locator(f"#legend tr#{c.CURRENCY_MISMATCH}")).to_be_in_viewport()


def test_search_by_booking_finds_its_findings_and_only_them(desk: ServedDesk, analyst: Page) -> None:
    analyst.get_by_label("Search").fill(SEARCHED_BOOKING)
    analyst.get_by_label("Search").press("Enter")
    analyst.wait_for_url(re.compile(rf".*[?&]q={SEARCHED_BOOKING}\b.*"))
    with desk.engine.connect() as connection:
        expected = connection.execute(
            select(discrepancies.c.discrepancy_id).where(discrepancies.c.booking_id == SEARCHED_BOOKING)
        ).scalars()
        expected_ids = sorted(expected)
    assert len(expected_ids) == SEARCHED_FINDINGS
    assert sorted(row_ids(analyst)) == expected_ids

    analyst.goto(f"{desk.base_url}/findings?booking={SEARCHED_BOOKING}")  # the exact filter agrees
    assert sorted(row_ids(analyst)) == expected_ids


def test_sorting_by_difference_orders_the_rows_both_ways(desk: ServedDesk, analyst: Page) -> None:
    by_id = differences(desk.engine)
    all_differences = sorted(by_id.values())
    header = analyst.locator("#findings thead th").filter(has_text="Difference")
    expect(header).to_have_attribute("aria-sort", "none")
    for direction, ordered in (("ascending", all_differences), ("descending", all_differences[::-1])):
        header.get_by_role("link").click()
        analyst.wait_for_load_state()
        header = analyst.locator("#findings thead th").filter(has_text="Difference")
        expect(header).to_have_attribute("aria-sort", direction)
        shown = [by_id[i] for i in row_ids(analyst)]
        assert shown == ordered[: len(shown)], direction  # the first page of the whole list, in order
        assert [amount for _, amount in column_amounts(analyst, "Difference")] == shown


def test_totals_are_the_sums_of_the_rows_per_currency_over_the_whole_filtered_list(
    desk: ServedDesk, analyst: Page
) -> None:
    base = desk.base_url
    # The whole list (two pages): every currency's total is the database's, page 2's footer too.
    everything = database_totals(desk.engine)
    assert set(everything) == {"EUR", "GBP", "JPY"} and sum(n for n, _ in everything.values()) > 200
    analyst.goto(f"{base}/findings")
    assert footer_totals(analyst) == everything
    expect(analyst.locator("#findings tfoot tr.total").first).to_contain_text("Total")
    analyst.goto(f"{base}/findings?page=2")
    assert footer_totals(analyst) == everything

    # A filtered list on one page: the footer is the sum of the rows shown, and the database's.
    analyst.goto(f"{base}/findings?category={c.AMOUNT_MISMATCH}&night_from=2026-12-02")
    shown: Counter[str] = Counter()
    for currency, minor in column_amounts(analyst, "Difference"):
        shown[currency] += minor
    filtered = database_totals(
        desk.engine, discrepancies.c.category == c.AMOUNT_MISMATCH, discrepancies.c.night >= "2026-12-02"
    )
    assert footer_totals(analyst) == filtered
    assert {currency: total for currency, (_, total) in filtered.items()} == dict(shown)


def test_bulk_acknowledge_of_three_findings_goes_through_a_confirmation(
    desk: ServedDesk, analyst: Page
) -> None:
    base = desk.base_url
    analyst.goto(f"{base}/findings?property=tokyo-ginza&status=open")
    chosen = row_ids(analyst)[:3]
    for finding_id in chosen:
        analyst.get_by_label(f"Select finding {finding_id}", exact=True).check()
    analyst.get_by_role("button", name="Acknowledge selected").click()
    analyst.wait_for_url(f"{base}/findings/bulk/confirm")
    expect(analyst.get_by_role("heading", level=1)).to_have_text("Confirm: acknowledge 3 findings")
    analyst.get_by_label("Comment").fill("JPY card batch, booked by the night auditor")
    analyst.get_by_role("button", name="Confirm").click()
    analyst.wait_for_url(f"{base}/findings/bulk/review")
    expect(analyst.get_by_role("heading", level=1)).to_have_text("Acknowledged 3 findings")

    d = discrepancies.c
    with desk.engine.connect() as connection:
        acknowledged = connection.execute(
            select(d.discrepancy_id, d.reviewed_by).where(d.review_status == "acknowledged")
        ).all()
        audit = connection.execute(
            select(review_audit.c.user_name, review_audit.c.target).where(
                review_audit.c.action == "acknowledge"
            )
        ).all()
    assert sorted(acknowledged) == [(i, ANALYST) for i in sorted(chosen)]
    assert sorted(audit) == sorted((ANALYST, str(i)) for i in chosen)


def test_next_and_previous_walk_the_filtered_list_and_back_keeps_its_filters(
    desk: ServedDesk, analyst: Page
) -> None:
    base = desk.base_url
    listing = f"{base}/findings?property=london-soho&category={c.AMOUNT_MISMATCH}&sort=-difference"
    analyst.goto(listing)
    first, second, third = row_ids(analyst)[:3]
    analyst.locator(f'#findings tbody tr[data-id="{first}"] a[href^="/findings/{first}"]').first.click()
    walk = [first]
    for step in (second, third):
        analyst.wait_for_url(re.compile(rf".*/findings/{walk[-1]}\?.*"))
        assert query_of(analyst.url) == query_of(listing)
        analyst.locator("a[rel=next]").click()
        walk.append(step)
    for step in (second, first):
        analyst.wait_for_url(re.compile(rf".*/findings/{walk[-1]}\?.*"))
        analyst.locator("a[rel=prev]").click()
        walk.append(step)
    analyst.wait_for_url(re.compile(rf".*/findings/{first}\?.*"))
    assert query_of(analyst.url) == query_of(listing)
    expect(analyst.locator("a#back-to-list")).to_have_text("Back to findings")
    analyst.locator("a#back-to-list").click()
    analyst.wait_for_url(re.compile(r".*/findings\?.*"))
    assert query_of(analyst.url) == query_of(listing)
    assert row_ids(analyst)[:3] == [first, second, third]


def test_no_page_is_wider_than_a_laptops_window(desk: ServedDesk, request: pytest.FixtureRequest) -> None:
    base = desk.base_url
    pages = desk_pages(desk.engine)
    widths: dict[str, int] = {}
    with chromium_page(request.node.name, viewport=LAPTOP_VIEWPORT) as watched:
        page = watched.page

        def measure(name: str, path: str | None = None) -> None:
            if path is not None:
                response = page.goto(f"{base}{path}")
                assert response is not None and response.status == 200, (path, response and response.status)
            widths[name] = int(page.evaluate("document.documentElement.scrollWidth"))

        measure("signin", "/signin")
        sign_in(page, base, APPROVER)
        for name, path in pages.items():
            measure(name, path)
        for tab in QUEUE_TABS:
            measure(f"adjustments?tab={tab}", f"/adjustments?tab={tab}")

        page.goto(f"{base}/findings?property=rome-centro")
        for finding_id in row_ids(page)[:2]:
            page.get_by_label(f"Select finding {finding_id}", exact=True).check()
        page.get_by_role("button", name="Acknowledge selected").click()
        page.wait_for_url(f"{base}/findings/bulk/confirm")
        expect(page.get_by_role("heading", level=1)).to_have_text("Confirm: acknowledge 2 findings")
        measure("findings confirm")

        page.goto(f"{base}/adjustments?tab=decide")
        page.get_by_label(f"Select {seeded_adjustment('rome_proposed_1')}", exact=True).check()
        page.get_by_role("button", name="Approve selected").click()
        page.wait_for_url(f"{base}/adjustments/confirm")
        expect(page.get_by_role("button", name="Confirm")).to_be_visible()
        measure("adjustments confirm")
    too_wide = {name: width for name, width in widths.items() if width > WIDTH}
    assert too_wide == {}, f"wider than {WIDTH} px: {too_wide}"
