"""The night report: summary per category and currency, top findings, metadata and terminal text."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pandas as pd

from recon_pipeline.categories import ALL_CATEGORIES, empty_findings
from recon_pipeline.reconcile.diff import diff_night
from recon_pipeline.reconcile.orphans import find_orphaned_captured_payments
from recon_pipeline.reconcile.report import NightReport, build_night_report
from recon_pipeline_tests.support.night_frames import entry, ledger, providers, record

NOW = datetime(2025, 3, 16, 12, 0, tzinfo=UTC)


def night_report() -> NightReport:
    result = diff_night(
        providers(
            record("ch_e1", amount=12_345),
            record("ch_e2", amount=500),
            record("ch_j1", amount=9_000, currency="JPY"),
            record("ch_j2", amount=70_000, currency="JPY"),
            record("ch_u1", amount=2_000, currency="USD"),
        ),
        ledger(
            entry("le_1", "ch_e1", amount=12_000),
            entry("le_2", "ch_j1", amount=9_000, currency="JPY"),
            entry("le_3", "ch_j1", amount=9_000, currency="JPY", minute=70),
            entry("le_4", "ch_u1", amount=2_000, currency="EUR"),
            entry("le_5", "ch_zz", amount=800),
        ),
    )
    orphans = find_orphaned_captured_payments(
        [
            {
                "payment_id": "pi_1",
                "booking_id": "bk_7",
                "amount_minor": 45_000,
                "currency": "EUR",
                "captured_at": pd.Timestamp(NOW - timedelta(hours=3, minutes=12)),
                "source": "provider",
            }
        ],
        {"bk_7": "confirming"},
        NOW,
        timedelta(hours=1),
    )
    return build_night_report(result, orphans)


def test_category_summary_lists_every_category_in_contract_order() -> None:
    summary = night_report().category_summary()
    assert summary.to_dict("records") == [
        {"category": "missing_in_ledger", "currency": "EUR", "count": 1, "amount_minor": 500},
        {"category": "missing_in_ledger", "currency": "JPY", "count": 1, "amount_minor": 70_000},
        {"category": "missing_at_provider", "currency": "EUR", "count": 1, "amount_minor": 800},
        {"category": "amount_mismatch", "currency": "EUR", "count": 1, "amount_minor": 345},
        {"category": "currency_mismatch", "currency": "USD", "count": 1, "amount_minor": 0},
        {"category": "duplicate_in_ledger", "currency": "JPY", "count": 1, "amount_minor": 9_000},
        {"category": "status_mismatch", "currency": "", "count": 0, "amount_minor": 0},
        {"category": "orphaned_captured_payment", "currency": "EUR", "count": 1, "amount_minor": 45_000},
        {"category": "invalid_ledger_entry", "currency": "", "count": 0, "amount_minor": 0},
        {"category": "unattributed_payment", "currency": "", "count": 0, "amount_minor": 0},
        *(
            {"category": category, "currency": "", "count": 0, "amount_minor": 0}
            for category in (
                "fx_difference",
                "authorization_expiring",
                "ambiguous_match",
                "suggested_match",
                "payout_failed",
                "payout_not_deposited",
                "payout_fee_mismatch",
                "payout_fee_missing",
            )
        ),
    ]


def test_top_findings_markdown_formats_each_currency_in_its_own_unit() -> None:
    markdown = night_report().top_findings_markdown(limit=3)
    lines = markdown.splitlines()
    assert lines[0] == "| category | record | provider | ledger | difference | detail |"
    assert len(lines) == 2 + 3
    assert lines[2].startswith("| missing_in_ledger | `ch_j2:payment` | 70,000 JPY | — | 70,000 JPY |")
    assert lines[3].startswith("| orphaned_captured_payment | `payment:pi_1` | 450.00 EUR | — | 450.00 EUR |")
    assert lines[4].startswith(
        "| duplicate_in_ledger | `ch_j1:payment:dup:le_3` | — | 9,000 JPY | -9,000 JPY |"
    )


def test_summary_markdown_is_a_table_of_the_summary() -> None:
    lines = night_report().summary_markdown().splitlines()
    assert lines[0] == "| category | currency | findings | sum of abs. difference |"
    assert "| amount_mismatch | EUR | 1 | 3.45 EUR |" in lines
    assert "| status_mismatch | — | 0 | — |" in lines
    assert "| currency_mismatch | USD | 1 | — |" in lines  # no difference across currencies, not 0.00 USD
    assert len(lines) == 2 + len(ALL_CATEGORIES) + 1  # missing_in_ledger in two currencies


def test_a_currency_mismatch_shows_each_side_in_its_own_currency_and_no_difference() -> None:
    markdown = night_report().top_findings_markdown()
    [row] = [line for line in markdown.splitlines() if line.startswith("| currency_mismatch |")]
    assert row.startswith("| currency_mismatch | `ch_u1:payment` | 20.00 USD | 20.00 EUR | USD ≠ EUR |")
    assert re.search(r"currency_mismatch +ch_u1:payment +USD ≠ EUR ", night_report().as_text())


def test_metadata_counts_are_ints_and_amounts_are_major_units_with_their_currency() -> None:
    metadata = night_report().as_metadata()
    assert {key: metadata[key] for key in (f"count/{category}" for category in ALL_CATEGORIES)} == {
        "count/missing_in_ledger": 2,
        "count/missing_at_provider": 1,
        "count/amount_mismatch": 1,
        "count/currency_mismatch": 1,
        "count/duplicate_in_ledger": 1,
        "count/status_mismatch": 0,
        "count/orphaned_captured_payment": 1,
        "count/invalid_ledger_entry": 0,
        "count/unattributed_payment": 0,
        "count/fx_difference": 0,
        "count/authorization_expiring": 0,
        "count/ambiguous_match": 0,
        "count/suggested_match": 0,
        "count/payout_failed": 0,
        "count/payout_not_deposited": 0,
        "count/payout_fee_mismatch": 0,
        "count/payout_fee_missing": 0,
    }
    assert metadata["amount/missing_in_ledger/JPY"] == "70,000 JPY"
    assert metadata["amount/missing_in_ledger/EUR"] == "5.00 EUR"
    assert metadata["amount/orphaned_captured_payment/EUR"] == "450.00 EUR"
    assert "amount/status_mismatch/" not in " ".join(metadata)
    assert "amount/currency_mismatch/" not in " ".join(metadata)
    assert metadata["findings"] == 7
    assert metadata["matched"] == 1
    assert metadata["provider_total/JPY"] == "79,000 JPY"
    assert metadata["ledger_total/JPY"] == "18,000 JPY"
    assert metadata["matched_amount/JPY"] == "9,000 JPY"
    assert all(type(value) in (int, float, str) for value in metadata.values())


def test_text_report_for_a_terminal() -> None:
    text = night_report().as_text(limit=2)
    assert text.splitlines()[0] == "findings 7   matched 1   timing differences 0"
    assert "  JPY: provider 79,000 JPY, ledger 18,000 JPY" in text
    assert "status_mismatch            -         0         -" in text
    assert "largest 2 findings" in text
    assert "|" not in text


def test_a_quiet_night() -> None:
    result = diff_night(providers(record("ch_1")), ledger(entry("le_1", "ch_1")))
    report = build_night_report(result, empty_findings())
    assert report.top_findings_markdown() == "_No discrepancies._"
    assert report.category_summary()["count"].sum() == 0
    assert len(report.category_summary()) == len(ALL_CATEGORIES)
    assert report.as_metadata()["matched"] == 1
    assert "largest" not in report.as_text()
