"""Fees booked the hotel's way (``reconcile/fees.py``): what the night's diff sees of the provider's fees
under each ``fee_booking``, the fees the provider took in the night's report, and a property booking
fees per movement reconciled exactly as before."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from recon_pipeline.categories import (
    AMOUNT_MISMATCH,
    MISSING_AT_PROVIDER,
    MISSING_IN_LEDGER,
    empty_findings,
)
from recon_pipeline.properties import FEE_NONE, FEE_PER_MOVEMENT, FEE_PER_PAYOUT
from recon_pipeline.reconcile.adjustments import plan_adjustments
from recon_pipeline.reconcile.diff import DiffResult, diff_night
from recon_pipeline.reconcile.fees import FeesTaken, fees_for_diff, fees_taken
from recon_pipeline.reconcile.report import build_night_report, combined_report
from recon_pipeline_tests.support.night_frames import entry, findings, ledger, providers, record

NOW = pd.Timestamp("2025-03-16T12:00:00Z").to_pydatetime()


def charged(record_id: str, amount: int, fee: int, **kwargs: Any) -> list[dict[str, Any]]:
    """A charge and the fee the provider took on it (signed as the ledger signs fees)."""
    return [
        record(record_id, amount=amount, **kwargs),
        record(record_id, kind="fee", amount=-fee, **kwargs),
    ]


def night() -> pd.DataFrame:
    """Three EUR charges with their fees, a dispute's fee, a failed charge's fee (not settled), and one
    USD charge settled in EUR whose fee is charged in EUR."""
    converted_fee = {
        **record("ch_usd", kind="fee", amount=-330, currency="USD"),
        "settlement_amount_minor": -300,
        "settlement_currency": "EUR",
    }
    return providers(
        *charged("ch_1", 10_000, 320),
        *charged("ch_2", 20_000, 610),
        *charged("ch_3", 5_000, 175),
        record("du_1", kind="fee", amount=-1_500),
        record("ch_failed", kind="fee", amount=-30, status="failed"),
        {
            **record("ch_usd", amount=11_000, currency="USD"),
            "settlement_amount_minor": 10_000,
            "settlement_currency": "EUR",
        },
        converted_fee,
    )


def gross_ledger(*extra: dict[str, Any]) -> pd.DataFrame:
    """The PMS books every charge gross, under its id, and no fee per movement."""
    return ledger(
        entry("le_1", "ch_1", amount=10_000),
        entry("le_2", "ch_2", amount=20_000),
        entry("le_3", "ch_3", amount=5_000),
        entry("le_usd", "ch_usd", amount=10_000),
        *extra,
    )


def diffed(mode: str, provider: pd.DataFrame, books: pd.DataFrame) -> tuple[DiffResult, FeesTaken | None]:
    own, seen, taken = fees_for_diff(provider, books, mode)
    return diff_night(own, seen, property_currency="EUR"), taken


def categories(result: DiffResult) -> list[tuple[str, str]]:
    return [(row["category"], row["record_key"]) for row in findings(result)]


def test_per_movement_is_todays_diff_the_same_frames_and_no_summary() -> None:
    provider = night()
    books = gross_ledger(entry("le_f1", "ch_1", kind="fee", amount=-320))
    own, seen, taken = fees_for_diff(provider, books, FEE_PER_MOVEMENT)
    assert own is provider and seen is books and taken is None  # untouched: not even a copy
    result = diff_night(own, seen, property_currency="EUR")
    # today's answer for a gross ledger: every fee it did not book is missing and proposes post_missing_fee
    assert categories(result) == [
        (MISSING_IN_LEDGER, "ch_2:fee"),
        (MISSING_IN_LEDGER, "ch_3:fee"),
        (MISSING_IN_LEDGER, "ch_usd:fee"),
        (MISSING_IN_LEDGER, "du_1:fee"),
    ]
    kinds = {p["kind"] for p in plan_adjustments("p1", "2025-03-15", result.findings, "r", NOW)}
    assert kinds == {"post_missing_fee"}
    report = build_night_report(result, empty_findings())
    assert report.fees_taken is None
    assert not any(key.startswith("fees_taken") for key in report.as_metadata())
    assert "Fees the provider took" not in report.as_text() + report.totals_markdown()


def test_per_payout_leaves_both_sides_fees_to_the_payout_comparison() -> None:
    books = gross_ledger(
        entry("le_po", "po_1", kind="fee", amount=-2_905),  # the payout's fee entry, under the payout id
        entry("le_po0", "po_0", kind="fee", amount=-500, in_night=False),  # an adjacent night's
    )
    result, taken = diffed(FEE_PER_PAYOUT, night(), books)
    assert categories(result) == []  # no fee missing per charge, the payout's fee entry not looked up
    assert result.matched_count == 4
    # gross against gross: the provider's total no longer counts fees the ledger books per payout
    assert result.provider_total_by_currency == result.ledger_total_by_currency == {"EUR": 45_000}
    assert taken == FeesTaken({"EUR": 5}, {"EUR": 320 + 610 + 175 + 1_500 + 300})
    own, seen, _ = fees_for_diff(night(), books, FEE_PER_PAYOUT)
    assert "fee" not in set(own["kind"]) and "fee" not in set(seen["kind"])
    assert list(own.index) == list(range(len(own))) and list(seen.index) == list(range(len(seen)))


def test_none_finds_no_fee_missing_and_still_compares_a_fee_the_pms_booked() -> None:
    result, taken = diffed(FEE_NONE, night(), gross_ledger())
    assert categories(result) == [] and result.matched_count == 4
    assert taken is not None and taken.count == 5 and taken.amount_by_currency == {"EUR": 2_905}

    booked_anyway = gross_ledger(
        entry("le_f1", "ch_1", kind="fee", amount=-320),  # right: matched, no finding
        entry("le_f2", "ch_2", kind="fee", amount=-600),  # off by 0.10 EUR
        entry("le_f9", "ch_9", kind="fee", amount=-50),  # a fee the provider never took
    )
    result, again = diffed(FEE_NONE, night(), booked_anyway)
    assert categories(result) == [(AMOUNT_MISMATCH, "ch_2:fee"), (MISSING_AT_PROVIDER, "ch_9:fee")]
    [mismatch] = [f for f in findings(result) if f["category"] == AMOUNT_MISMATCH]
    assert (mismatch["provider_amount_minor"], mismatch["ledger_amount_minor"]) == (-610, -600)
    assert result.matched_count == 5  # the four charges and ch_1's fee
    assert again == taken  # the summary is every fee taken, whatever the PMS booked


def test_the_summary_counts_settled_fees_at_the_figure_the_account_was_charged() -> None:
    taken = fees_taken(night())
    assert taken.count_by_currency == {"EUR": 5}  # ch_failed's fee moved no money; ch_usd's is in EUR
    assert taken.amount_by_currency == {"EUR": 2_905}
    assert taken.lines() == ["5 fees, 29.05 EUR"]
    assert fees_taken(providers()) == FeesTaken() and FeesTaken().lines() == []
    yen = fees_taken(
        providers(record("ch_j", kind="fee", amount=-99, currency="JPY"), *charged("ch_e", 1, 7))
    )
    assert yen.lines() == ["1 fees, 0.07 EUR", "1 fees, 99 JPY"]
    assert yen.frame().to_dict("records") == [
        {"currency": "EUR", "count": 1, "amount_minor": 7, "amount": "0.07 EUR"},
        {"currency": "JPY", "count": 1, "amount_minor": 99, "amount": "99 JPY"},
    ]


def test_the_night_report_shows_the_fees_taken() -> None:
    result, taken = diffed(FEE_NONE, night(), gross_ledger())
    report = build_night_report(result, empty_findings(), taken)
    metadata = report.as_metadata()
    assert (metadata["fees_taken"], metadata["fees_taken/EUR"]) == (5, "29.05 EUR")
    assert "Fees the provider took (not booked per movement): 5 fees, 29.05 EUR." in report.totals_markdown()
    assert "  Fees the provider took (not booked per movement): 5 fees, 29.05 EUR" in report.as_text()
    quiet, nothing = diffed(FEE_PER_PAYOUT, providers(record("ch_1")), ledger(entry("le_1", "ch_1")))
    empty = build_night_report(quiet, empty_findings(), nothing)
    assert empty.as_metadata()["fees_taken"] == 0
    assert "Fees the provider took (not booked per movement): none" in empty.as_text()
    today = build_night_report(result, empty_findings())
    batch = combined_report([report, today, report])
    assert batch.fees_taken == FeesTaken({"EUR": 10}, {"EUR": 5_810})
    assert combined_report([today, today]).fees_taken is None


def test_an_unknown_fee_booking_is_refused_in_one_line() -> None:
    with pytest.raises(
        ValueError, match="fee booking must be one of per_movement, per_payout, none, not 'x'"
    ):
        fees_for_diff(night(), gross_ledger(), "x")
