"""The night's takings (pure): per tender over the night's valid ledger entries, and the cards per brand on
both sides, the PMS's against the provider's settled records, the difference the provider's less the PMS's;
what is not takings (fees, adjustments, disputes, money that never moved, the nights either side) is left
out, and a report shows both tables in its markdown, text and metadata."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from recon_pipeline.reconcile.diff import diff_night
from recon_pipeline.reconcile.report import build_night_report, combined_report
from recon_pipeline.reconcile.takings import (
    LEDGER,
    TENDER,
    BrandTotals,
    NightTakings,
    Takings,
    by_tender,
    night_takings,
)
from recon_pipeline_tests.support.night_frames import entry, ledger, providers, record

pytestmark = pytest.mark.fast


def posting(entry_id: str, amount: int, tender: str | None, brand: str | None = None, **facts: Any) -> dict:
    """A ledger entry of the night with its tender and card brand (read, as the ledger frame has them)."""
    return {**entry(entry_id, None, amount=amount, **facts), "tender": tender, "card_brand": brand}


def charge(record_id: str, amount: int, brand: str | None, **facts: Any) -> dict:
    return {**record(record_id, amount=amount, **facts), "card_brand": brand}


def takings_of(entries: list[dict], records: list[dict]) -> NightTakings:
    return night_takings(by_tender(ledger(*entries)), providers(*records))


def tender_lines(takings: NightTakings) -> list[tuple[str, str, int, int]]:
    return [(t.name, t.currency, t.movements, t.amount_minor) for t in takings.tenders()]


def test_every_tender_is_counted_per_currency_and_only_payments_and_refunds_are_takings() -> None:
    takings = takings_of(
        [
            posting("le_cash1", 12_000, "cash"),
            posting("le_cash2", 3_050, "cash"),
            posting("le_cash_refund", -2_000, "cash", kind="refund"),
            posting("le_cash_gbp", 5_000, "cash", currency="GBP"),
            posting("le_bank", 48_000, "bank_transfer"),
            posting("le_ota", 21_500, "ota_collect"),
            posting("le_card", 9_900, "card", "visa"),
            posting("le_neg", -1_500, "card", "visa"),  # a refund posted as a negative payment
            posting("le_none", 7_000, None, "mastercard"),
            posting("le_fee", -330, None, kind="fee"),  # the provider's fee: not a guest's tender
            posting("le_adj", 500, None, kind="adjustment"),  # a correction posted later
            posting("le_next", 4_000, "cash", in_night=False),  # the next night's
        ],
        [],
    )
    assert tender_lines(takings) == [
        ("card", "EUR", 2, 8_400),
        ("cash", "EUR", 3, 13_050),
        ("cash", "GBP", 1, 5_000),
        ("bank_transfer", "EUR", 1, 48_000),
        ("ota_collect", "EUR", 1, 21_500),
        ("not_recorded", "EUR", 1, 7_000),
    ]


def test_cards_per_brand_compare_both_sides_and_a_brand_on_one_side_only_still_shows() -> None:
    takings = takings_of(
        [
            posting("le_v1", 10_000, "card", "visa"),
            posting("le_v2", 5_000, None, "visa"),  # no tender recorded: may be the provider's
            posting("le_v_refund", -2_000, "card", "visa", kind="refund"),
            posting("le_mc", 7_700, "card", "mastercard"),
            posting("le_ax", 4_250, "card", "amex"),  # the provider has no Amex tonight
            posting("le_nobrand", 1_000, "card", None),
            posting("le_cash", 90_000, "cash", "visa"),  # cash is never the provider's
        ],
        [
            charge("ch_v1", 10_000, "visa"),
            charge("ch_v2", 5_500, "visa"),
            {**charge("re_v1", -2_000, "visa"), "kind": "refund"},
            charge("ch_mc", 7_700, "mastercard"),
            charge("ch_jcb", 3_000, "jcb"),  # the PMS has no JCB tonight
            charge("ch_failed", 8_800, "visa", status="failed"),  # money never moved
            {**charge("ch_v1", -320, "visa"), "kind": "fee"},  # fees are not takings
            {**charge("du_1", -4_000, "visa"), "kind": "dispute"},  # nor is a dispute
            charge("ch_unknown", 600, None),
        ],
    )
    assert takings.brands() == [
        BrandTotals("amex", "EUR", 1, 4_250, 0, 0),
        BrandTotals("jcb", "EUR", 0, 0, 1, 3_000),
        BrandTotals("mastercard", "EUR", 1, 7_700, 1, 7_700),
        BrandTotals("visa", "EUR", 3, 13_000, 3, 13_500),
        BrandTotals("unknown", "EUR", 1, 1_000, 1, 600),
    ]
    assert [b.difference_minor for b in takings.brands()] == [-4_250, 3_000, 0, 500, -400]


def test_a_conversion_counts_at_what_the_account_received() -> None:
    converted = {
        **charge("ch_usd", 10_800, "visa", currency="USD"),
        "settlement_amount_minor": 10_000,
        "settlement_currency": "EUR",
    }
    takings = takings_of([posting("le_eur", 10_000, "card", "visa")], [converted])
    assert takings.brands() == [BrandTotals("visa", "EUR", 1, 10_000, 1, 10_000)]


def test_a_night_without_tenders_or_entries_has_empty_takings() -> None:
    assert takings_of([], []).lines == ()
    # a ledger frame built before tenders were recorded: every entry's tender is not recorded
    frame = ledger(entry("le_1", None, amount=2_500)).drop(columns=["tender"])
    takings = night_takings(by_tender(frame), providers())
    assert tender_lines(takings) == [("not_recorded", "EUR", 1, 2_500)]
    assert takings.brands() == [BrandTotals("unknown", "EUR", 1, 2_500, 0, 0)]


def test_sums_are_exact_past_int64() -> None:
    big = 9_000_000_000_000_000_000 // 2
    lines = NightTakings.combined([NightTakings((Takings(LEDGER, TENDER, "cash", "EUR", 1, big),))] * 3).lines
    assert lines == (Takings(LEDGER, TENDER, "cash", "EUR", 3, 3 * big),)


def test_the_report_shows_takings_in_markdown_text_and_metadata() -> None:
    takings = takings_of(
        [
            posting("le_cash", 12_000, "cash"),
            posting("le_bank", 48_000, "bank_transfer"),
            posting("le_ota", 21_500, "ota_collect"),
            posting("le_v", 10_000, "card", "visa"),
        ],
        [charge("ch_v", 10_500, "visa"), charge("ch_mc", 3_000, "mastercard")],
    )
    empty = providers()
    report = build_night_report(diff_night(empty, ledger()), pd.DataFrame(), takings=takings)
    markdown = report.takings_markdown()
    assert "| Cash | EUR | 1 | 120.00 EUR |" in markdown
    assert "| Bank transfer | EUR | 1 | 480.00 EUR |" in markdown
    assert "| OTA-collected | EUR | 1 | 215.00 EUR |" in markdown
    assert "| Visa | EUR | 1 | 100.00 EUR | 1 | 105.00 EUR | 5.00 EUR |" in markdown
    assert "| Mastercard | EUR | 0 | 0.00 EUR | 1 | 30.00 EUR | 30.00 EUR |" in markdown
    metadata = report.as_metadata()
    assert metadata["takings/cash/EUR"] == "120.00 EUR"
    assert metadata["takings/ota_collect/EUR"] == "215.00 EUR"
    assert metadata["card_difference/visa/EUR"] == "5.00 EUR"
    assert metadata["card_difference/mastercard/EUR"] == "30.00 EUR"
    text = report.as_text()
    assert "takings by tender" in text and "Bank transfer" in text and "Visa" in text
    # a batch's report sums its property-nights' takings
    twice = combined_report([report, report])
    assert twice.as_metadata()["takings/cash/EUR"] == "240.00 EUR"
    assert twice.takings.brands()[1] == BrandTotals("visa", "EUR", 2, 20_000, 2, 21_000)


def test_a_night_without_takings_reports_as_before() -> None:
    report = build_night_report(diff_night(providers(), ledger()), pd.DataFrame())
    assert not [key for key in report.as_metadata() if key.startswith(("takings/", "card_difference/"))]
    assert "takings" not in report.as_text()
    assert report.takings_markdown() == "_No takings in the ledger._"
