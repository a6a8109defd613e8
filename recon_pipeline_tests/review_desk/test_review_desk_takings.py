"""The desk's night page in Debian's Chromium at 1,366 x 768: the night's takings per tender and its cards
per brand on both sides, as the night's run kept them, and each brand's difference linked to exactly that
brand's findings. The night (``support/takings_night.py``: cash, a bank transfer and OTA-collected money
beside Visa, Mastercard and Amex, card types as the PMS writes them) is reconciled through the batch path
against the Stripe simulator on loopback into the database the desk serves; what the page shows is checked
against that database and the figures the night was built with; after the PMS corrects a posting and the
night runs again, a difference's link holds only what is still different."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Page, expect
from sqlalchemy import Engine, select, update

from recon_pipeline.db.schema import discrepancies, ledger_entries
from recon_pipeline.words import CARD_BRAND_WORDS, TENDER_WORDS
from recon_pipeline_tests.review_desk.screenshots import sign_in
from recon_pipeline_tests.support.browser import LAPTOP_VIEWPORT, chromium_page
from recon_pipeline_tests.support.desk_fixtures import ServedDesk, add_user, served_desk
from recon_pipeline_tests.support.pms_night import PROPERTY, PmsNightRun, served_night
from recon_pipeline_tests.support.provider_fixtures import (
    StartSimulator,
    simulator_fixture,  # noqa: F401  (fixtures)
    simulator_server_fixture,  # noqa: F401
)
from recon_pipeline_tests.support.takings_night import (
    BRAND_FINDINGS,
    BRANDS,
    NIGHT_TEXT,
    TENDERS,
    build_takings_night,
)

pytestmark = [
    pytest.mark.slow,  # drives Chromium
    pytest.mark.parametrize("database_url", ["sqlite"], indirect=True),
]

AUDITOR = "nina"
NIGHT_PAGE = f"/nights/{PROPERTY.property_id}/{NIGHT_TEXT}"


@dataclass
class Reconciled:
    desk: ServedDesk
    night: PmsNightRun


@pytest.fixture
def reconciled(
    database_url: str, monkeypatch: pytest.MonkeyPatch, simulator: StartSimulator
) -> Iterator[Reconciled]:
    """The desk serving the night, reconciled once through the batch path; a night auditor may see Rome."""
    with (
        served_desk(database_url, monkeypatch) as served,
        served_night(build_takings_night(), served.engine, database_url, simulator) as night,
    ):
        night.run("run-1")
        add_user(AUDITOR, "analyst", PROPERTY.property_id)
        yield Reconciled(served, night)


@pytest.fixture
def desk(reconciled: Reconciled) -> ServedDesk:
    return reconciled.desk


@pytest.fixture
def auditor(desk: ServedDesk, request: pytest.FixtureRequest) -> Iterator[Page]:
    with chromium_page(request.node.name, viewport=LAPTOP_VIEWPORT) as watched:
        sign_in(watched.page, desk.base_url, AUDITOR)
        yield watched.page


def table_rows(page: Page, table: str) -> list[dict[str, str]]:
    """Each body row of ``table`` as its data attributes and its cells' texts (``cells``, joined by |)."""
    rows = page.locator(f"{table} tbody tr[data-currency]").evaluate_all(
        """rows => rows.map(r => ({...r.dataset,
            cells: [...r.children].map(td => td.textContent.trim()).join('|'),
            minors: [...r.querySelectorAll('td[data-minor]')].map(td => td.dataset.minor).join('|'),
            counts: [...r.querySelectorAll('td.count')].map(td => td.textContent.trim()).join('|')}))"""
    )
    return list(rows)


def follow_difference(page: Page, base: str, brand: str) -> list[int]:
    """From the night's page, the brand's difference link to the findings list: the ids it lists."""
    page.goto(f"{base}{NIGHT_PAGE}")
    link = page.locator(f"#cards-by-brand tr[data-brand={brand}] td.difference a")
    expect(link).to_have_count(1)
    link.click()
    page.wait_for_url(re.compile(rf".*/findings\?.*brand={brand}\b.*"))
    ids = page.locator("#findings tbody tr[data-id]").evaluate_all("rs => rs.map(r => r.dataset.id)")
    return [int(i) for i in ids]


def footer_totals(page: Page) -> list[int]:
    totals = page.locator("#findings tfoot tr.total .amount").evaluate_all(
        "cs => cs.map(c => c.dataset.minor)"
    )
    return [int(t) for t in totals]


def finding_keys(engine: Engine, ids: list[int]) -> set[tuple[str, str]]:
    with engine.connect() as connection:
        rows = connection.execute(
            select(discrepancies.c.category, discrepancies.c.record_key).where(
                discrepancies.c.discrepancy_id.in_(ids)
            )
        ).all()
    return {(category, key) for category, key in rows}


def test_the_night_page_compares_tenders_and_brands_and_links_each_difference_to_its_findings(
    desk: ServedDesk, auditor: Page
) -> None:
    base = desk.base_url
    auditor.goto(f"{base}{NIGHT_PAGE}")
    expect(auditor.get_by_role("heading", name="Takings by tender")).to_be_visible()

    # Takings per tender, in words, with count and sum per currency.
    tenders = table_rows(auditor, "#takings-by-tender")
    assert {
        (row["tender"], row["currency"]): (int(row["counts"]), int(row["minors"])) for row in tenders
    } == TENDERS
    words = [row["cells"].split("|")[0] for row in tenders]
    assert words == ["Card", "Cash", "Bank transfer", "OTA-collected", "Not recorded"]
    assert words == [TENDER_WORDS[row["tender"]] for row in tenders]
    expect(auditor.locator("#takings-by-tender")).to_contain_text("480.00 EUR")

    # Cards per brand on both sides, with the difference (provider less PMS).
    brands = table_rows(auditor, "#cards-by-brand")
    shown = {}
    for row in brands:
        ledger_count, provider_count = (int(n) for n in row["counts"].split("|"))
        ledger_minor, provider_minor, difference = (int(n) for n in row["minors"].split("|"))
        assert difference == provider_minor - ledger_minor
        assert row["cells"].split("|")[0] == CARD_BRAND_WORDS[row["brand"]]
        shown[(row["brand"], row["currency"])] = (ledger_count, ledger_minor, provider_count, provider_minor)
    assert shown == BRANDS
    assert [row["brand"] for row in brands] == ["amex", "mastercard", "visa", "unknown"]  # unknown last

    # A brand whose sides agree has no link; each other difference links to exactly its brand's findings.
    cards = auditor.locator("#cards-by-brand")
    expect(cards.locator("tr[data-brand=mastercard] td.difference a")).to_have_count(0)
    expect(cards.locator("tr[data-brand=mastercard] td.difference")).to_have_text("0.00 EUR")
    for brand, expected in BRAND_FINDINGS.items():
        ids = follow_difference(auditor, base, brand)
        assert parse_qs(urlsplit(auditor.url).query) == {
            "property": [PROPERTY.property_id],
            "night_from": [NIGHT_TEXT],
            "night_to": [NIGHT_TEXT],
            "brand": [brand],
            "cleared": ["no"],  # the findings the latest run still sees: what the difference is made of
        }
        assert finding_keys(desk.engine, ids) == expected, brand
        assert len(ids) == len(expected)
        # The list's brand filter is shown chosen, so a person sees why the list is short.
        expect(auditor.get_by_label("Card brand")).to_have_value(brand)
        # Its footer total is the brand's difference on the night page.
        assert footer_totals(auditor) == [BRANDS[(brand, "EUR")][3] - BRANDS[(brand, "EUR")][1]]

    # The page fits the laptop's window.
    auditor.goto(f"{base}{NIGHT_PAGE}")
    assert int(auditor.evaluate("document.documentElement.scrollWidth")) <= LAPTOP_VIEWPORT[0]


def test_after_the_pms_corrects_a_posting_the_link_holds_only_what_is_still_different(
    reconciled: Reconciled, auditor: Page
) -> None:
    """The PMS books le_v3 at the 60.00 Stripe charged; the night's re-run clears its amount mismatch:
    Visa's difference is the one posting Stripe never saw, and its link lists that finding alone."""
    base = reconciled.desk.base_url
    with reconciled.desk.engine.begin() as connection:
        connection.execute(
            update(ledger_entries).where(ledger_entries.c.entry_id == "le_v3").values(amount_minor=6_000)
        )
    reconciled.night.run("run-2")
    auditor.goto(f"{base}{NIGHT_PAGE}")
    visa = auditor.locator("#cards-by-brand tr[data-brand=visa] td.difference")
    expect(visa).to_have_attribute("data-minor", "-3000")
    ids = follow_difference(auditor, base, "visa")
    assert finding_keys(reconciled.desk.engine, ids) == {("missing_at_provider", "entry:le_p1")}
    assert footer_totals(auditor) == [-3_000]
    # the cleared finding is still the night's, one click away for whoever wants the history
    auditor.goto(f"{base}/findings?property={PROPERTY.property_id}&brand=visa&cleared=yes")
    cleared = auditor.locator("#findings tbody tr[data-id]").evaluate_all("rs => rs.map(r => r.dataset.id)")
    assert finding_keys(reconciled.desk.engine, [int(i) for i in cleared]) == {
        ("amount_mismatch", "ch_v3:payment")
    }
