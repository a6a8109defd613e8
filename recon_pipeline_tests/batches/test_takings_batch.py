"""The night's takings through the batch path (``reconcile_batch``), on SQLite and PostgreSQL, against the
Stripe simulator over loopback: a folio with cash, a bank transfer and OTA-collected money beside the cards
(``support/takings_night.py``) stores its takings per tender and its cards per brand on both sides in
``night_takings``, the report and the night's HTML report carry the same figures, the tenders the provider
never sees make no finding; a re-run modifies no row, and a changed ledger updates only the lines it
changed and removes the one that is gone.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import Engine, delete, select, update

from recon_pipeline.db.schema import discrepancies, ledger_entries, night_takings
from recon_pipeline.money import format_minor
from recon_pipeline.reconcile.takings import BRAND, LEDGER, PROVIDER, TENDER
from recon_pipeline.reports.render import render_night_html
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

Figures = tuple[int, ...]


def stored(run: PmsNightRun) -> tuple[dict[tuple[str, str], Figures], dict[tuple[str, str], Figures]]:
    """The stored takings as the support module states them: per tender, and per brand both sides."""
    tenders: dict[tuple[str, str], Figures] = {}
    brands: dict[tuple[str, str], dict[str, Figures]] = {}
    for row in run.rows(night_takings):
        assert (row["property_id"], row["night"]) == (PROPERTY.property_id, NIGHT_TEXT)
        figures = (row["movements"], row["amount_minor"])
        if row["grouped_by"] == TENDER:
            assert row["side"] == LEDGER
            tenders[(row["name"], row["currency"])] = figures
        else:
            assert row["grouped_by"] == BRAND
            brands.setdefault((row["name"], row["currency"]), {})[row["side"]] = figures
    both = {key: (*sides.get(LEDGER, (0, 0)), *sides.get(PROVIDER, (0, 0))) for key, sides in brands.items()}
    return tenders, both


def line_key(row: dict[str, Any]) -> tuple[str, str, str, str]:
    return (row["side"], row["grouped_by"], row["name"], row["currency"])


@pytest.fixture
def takings_night(engine: Engine, database_url: str, simulator: StartSimulator) -> Iterator[PmsNightRun]:
    with served_night(build_takings_night(), engine, database_url, simulator) as run:
        yield run


def test_the_nights_takings_per_tender_and_cards_per_brand_are_stored_and_reported(
    takings_night: PmsNightRun,
) -> None:
    [result] = takings_night.run("run-1").results
    assert stored(takings_night) == (TENDERS, BRANDS)
    assert {row["run_id"] for row in takings_night.rows(night_takings)} == {"run-1"}
    # The report carries the same figures, and its differences are the provider's less the PMS's.
    report = result.report.takings
    assert {(t.name, t.currency): (t.movements, t.amount_minor) for t in report.tenders()} == TENDERS
    brands = {(b.brand, b.currency): b for b in report.brands()}
    assert {key: b.difference_minor for key, b in brands.items()} == {
        ("amex", "EUR"): 4_250,
        ("mastercard", "EUR"): 0,
        ("visa", "EUR"): -2_500,
        ("unknown", "EUR"): -2_500,
    }
    metadata = result.report.as_metadata()
    assert metadata["takings/bank_transfer/EUR"] == "480.00 EUR"
    assert metadata["card_difference/visa/EUR"] == "-25.00 EUR"
    # Each brand's difference is its findings' sum; cash, bank transfer and OTA money make none.
    with takings_night.engine.connect() as connection:
        found = connection.execute(
            select(discrepancies.c.category, discrepancies.c.record_key, discrepancies.c.difference_minor)
        ).all()
    assert {(category, key) for category, key, _ in found} == set().union(*BRAND_FINDINGS.values())
    for brand, keys in BRAND_FINDINGS.items():
        summed = sum(difference for category, key, difference in found if (category, key) in keys)
        assert summed == brands[(brand, "EUR")].difference_minor, brand

    # The night's HTML report, rendered on demand from the database, shows both tables.
    with takings_night.engine.connect() as connection:
        page = render_night_html(connection, PROPERTY, NIGHT_TEXT)
    assert {
        (tender, currency): (int(count), amount)
        for tender, currency, count, amount in re.findall(
            r'<tr data-tender="(\w+)" data-currency="(\w+)"><td>[^<]+</td><td>\w+</td><td>(\d+)</td>'
            r"<td>([^<]+)</td></tr>",
            page,
        )
    } == {key: (count, format_minor(amount, key[1])) for key, (count, amount) in TENDERS.items()}
    assert "<td>OTA-collected</td>" in page and "<td>Bank transfer</td>" in page
    cells = re.findall(r'<tr data-brand="(\w+)" data-currency="EUR">((?:<td>[^<]*</td>){7})</tr>', page)
    assert {brand: re.findall(r"<td>([^<]*)</td>", row)[2:] for brand, row in cells} == {
        brand: [
            str(ledger_count),
            format_minor(ledger_minor, "EUR"),
            str(provider_count),
            format_minor(provider_minor, "EUR"),
            format_minor(provider_minor - ledger_minor, "EUR"),
        ]
        for (brand, _), (ledger_count, ledger_minor, provider_count, provider_minor) in BRANDS.items()
    }


def test_a_rerun_modifies_no_row_and_a_changed_ledger_only_its_lines(takings_night: PmsNightRun) -> None:
    takings_night.run("run-1")
    before = takings_night.rows(night_takings)
    takings_night.run("run-2")
    assert takings_night.rows(night_takings) == before  # run ids and times included

    # The PMS takes the bank transfer back out of the night and corrects a cash posting.
    with takings_night.engine.begin() as connection:
        connection.execute(delete(ledger_entries).where(ledger_entries.c.entry_id == "le_bank"))
        connection.execute(
            update(ledger_entries).where(ledger_entries.c.entry_id == "le_cash2").values(amount_minor=4_550)
        )
    takings_night.run("run-3")
    after = {
        (row["side"], row["grouped_by"], row["name"], row["currency"]): row
        for row in takings_night.rows(night_takings)
    }
    kept = {(row["side"], row["grouped_by"], row["name"], row["currency"]): row for row in before}
    cash = (LEDGER, TENDER, "cash", "EUR")
    assert (LEDGER, TENDER, "bank_transfer", "EUR") not in after  # the bucket that is gone is removed
    assert (after[cash]["movements"], after[cash]["amount_minor"], after[cash]["run_id"]) == (
        2,
        16_550,
        "run-3",
    )
    assert after[cash]["recorded_at"] > kept[cash]["recorded_at"]
    assert {key: row for key, row in after.items() if key != cash} == {
        key: row for key, row in kept.items() if key not in (cash, (LEDGER, TENDER, "bank_transfer", "EUR"))
    }
